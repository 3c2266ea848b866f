// Package latency keeps distributions of durations (statement times,
// waits) in fixed buckets that any number of goroutines record into
// without a lock or an allocation.
//
// The buckets' upper bounds are 2^(k/2) seconds for k from MinExp to
// MaxExp (86 µs to 32 s), one more bucket above: each bound is √2 times
// the one before, so a quantile read off the buckets is within a factor
// of √2 (about 41 %) of the true one, and the bounds are those of a
// Prometheus native histogram of schema 1, so that one set of counts
// serves both classic and native histograms. Database statements take
// from about 100 µs (a point read on loopback) to tens of seconds (a
// report, a lock wait); faster and slower ones land in the first and last
// buckets.
package latency

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The bucket bounds: 2^(k/2) s for k in [MinExp, MaxExp].
const (
	MinExp = -27 // 2^-13.5 s ≈ 86.3 µs
	MaxExp = 10  // 2^5 s = 32 s

	// Buckets is how many buckets a Histogram has: one per bound, and
	// one above the last.
	Buckets = MaxExp - MinExp + 2
)

// bounds are the buckets' upper bounds in nanoseconds, rounded down.
var bounds = func() [Buckets - 1]int64 {
	var b [Buckets - 1]int64
	for i := range b {
		b[i] = int64(math.Exp2(float64(MinExp+i)/2) * 1e9)
	}
	return b
}()

// Bound returns the upper bound of bucket i (0 <= i < Buckets-1).
func Bound(i int) time.Duration { return time.Duration(bounds[i]) }

// Histogram is a distribution of durations. The zero Histogram is empty
// and ready to use; it must not be copied after first use.
type Histogram struct {
	counts [Buckets]atomic.Int64
	sum    atomic.Int64 // nanoseconds
}

// Observe records d: two atomic additions, no lock, no allocation.
func (h *Histogram) Observe(d time.Duration) {
	h.counts[bucket(int64(d))].Add(1)
	h.sum.Add(int64(d))
}

// bucket returns the index of the bucket of a duration of ns
// nanoseconds: the first whose bound is at least ns. The power of two
// found by bits.Len64 narrows it to two candidates.
func bucket(ns int64) int {
	if ns <= bounds[0] {
		return 0
	}
	if ns > bounds[Buckets-2] {
		return Buckets - 1
	}
	// 2^(e-1) <= ns < 2^e nanoseconds; the bounds that are powers of
	// two (k even) are 2^(k/2) s = 2^(k/2) × 1e9 ns, so compare with the
	// bounds near log2(ns) - log2(1e9), doubled.
	e := bits.Len64(uint64(ns)) - 1 // floor(log2 ns)
	// 2k ≈ 2(e - log2 1e9) = 2e - 59.79: start a little below and step
	// up; at most three steps.
	i := 2*e - 60 - MinExp - 1
	if i < 0 {
		i = 0
	}
	for bounds[i] < ns {
		i++
	}
	return i
}

// Snapshot is a Histogram's counts at one moment (each count read
// atomically, the whole not: counts recorded meanwhile may be in some and
// not in others, or in Count and not in Sum).
type Snapshot struct {
	Counts [Buckets]int64 // Counts[i]: durations in bucket i (not cumulative)
	Count  int64          // all of them
	Sum    time.Duration  // their sum
}

// Snapshot reads h.
func (h *Histogram) Snapshot() Snapshot {
	var s Snapshot
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		s.Count += s.Counts[i]
	}
	s.Sum = time.Duration(h.sum.Load())
	return s
}

// Quantile returns an estimate of the q-quantile (0 < q <= 1) of s: the
// upper bound of the bucket where it falls (the last bucket has none: its
// lower bound then), or 0 for an empty s.
func (s *Snapshot) Quantile(q float64) time.Duration {
	if s.Count == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(s.Count)))
	var seen int64
	for i, c := range s.Counts {
		if seen += c; seen >= rank {
			if i == Buckets-1 {
				return time.Duration(bounds[Buckets-2])
			}
			return time.Duration(bounds[i])
		}
	}
	return time.Duration(bounds[Buckets-2])
}
