// Package live gathers the rwpool demo's measurements and draws them: a
// Collector receives every statement of the workload, a View renders one
// Frame per refresh, redrawn in place on a terminal (ANSI) or as plain
// lines elsewhere.
package live

import (
	"slices"
	"sync"
	"time"

	"github.com/rwpool/rwpool/cmd/rwpool/internal/workload"
)

// Latency summarizes the statements one node ran during one interval.
type Latency struct {
	N        int
	P50, P99 time.Duration
}

// Totals counts operations since the start.
type Totals struct {
	ReadsOK, ReadsFailed   int64
	WritesOK, WritesFailed int64
	// WritesUnavailable counts the failed writes that failed with
	// rwpool.ErrUnavailable (the primary was known to be down).
	WritesUnavailable int64
	// UnavailableMax and UnavailableP50 are the latency of those failures.
	UnavailableMax, UnavailableP50 time.Duration
	// ReadTimeouts counts read attempts that timed out and were run again
	// by the workload.
	ReadTimeouts int64
	// Replayed counts reads that rwpool replayed on another node after a
	// failure (rwpool.Route.Replays > 0) and that then succeeded.
	Replayed int64
	// Identity checks: reads whose answering server reported its own name,
	// and how many of those names differed from rwpool.Route.Node.
	Checked, Mismatched int64
	Mismatch            string // the first mismatch, for the report
	// Errors counts final failures by message (for the report).
	Errors map[string]int64
}

// OK returns the operations that succeeded.
func (t Totals) OK() int64 { return t.ReadsOK + t.WritesOK }

// Failed returns the operations that failed.
func (t Totals) Failed() int64 { return t.ReadsFailed + t.WritesFailed }

// Collector aggregates workload attempts. It is safe for concurrent use.
type Collector struct {
	mu      sync.Mutex
	win     map[string][]time.Duration // latencies per node, current interval
	tot     Totals
	unavail []time.Duration // latencies of ErrUnavailable write failures (capped)
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector {
	return &Collector{win: map[string][]time.Duration{}, tot: Totals{Errors: map[string]int64{}}}
}

const maxKept = 100000 // bound on the fast-fail latencies kept for the median

// Record adds one attempt. It is a workload.Config.Record function.
func (c *Collector) Record(a workload.Attempt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a.Node != "" {
		c.win[a.Node] = append(c.win[a.Node], a.Latency)
	}
	t := &c.tot
	if a.Retried {
		t.ReadTimeouts++
		return
	}
	switch {
	case a.Kind == workload.Read && a.Err == nil:
		t.ReadsOK++
		if a.Replays > 0 {
			t.Replayed++
		}
		if a.ServedBy != "" {
			t.Checked++
			if a.ServedBy != a.Node {
				t.Mismatched++
				if t.Mismatch == "" {
					t.Mismatch = "rwpool.Route says " + a.Node + ", the server says " + a.ServedBy
				}
			}
		}
	case a.Kind == workload.Read:
		t.ReadsFailed++
		t.Errors["read: "+a.Err.Error()]++
	case a.Err == nil:
		t.WritesOK++
	default:
		t.WritesFailed++
		if a.Unavailable() {
			t.WritesUnavailable++
			t.UnavailableMax = max(t.UnavailableMax, a.Latency)
			if len(c.unavail) < maxKept {
				c.unavail = append(c.unavail, a.Latency)
			}
			return
		}
		t.Errors["write: "+a.Err.Error()]++
	}
}

// Totals returns the counts so far.
func (c *Collector) Totals() Totals {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tot
	t.Errors = make(map[string]int64, len(c.tot.Errors))
	for k, v := range c.tot.Errors {
		t.Errors[k] = v
	}
	if len(c.unavail) > 0 {
		t.UnavailableP50 = percentile(slices.Sorted(slices.Values(c.unavail)), 50)
	}
	return t
}

// Interval returns the latencies per node since the previous call and
// starts a new interval.
func (c *Collector) Interval() map[string]Latency {
	c.mu.Lock()
	win := c.win
	c.win = make(map[string][]time.Duration, len(win))
	c.mu.Unlock()
	out := make(map[string]Latency, len(win))
	for node, l := range win {
		slices.Sort(l)
		out[node] = Latency{N: len(l), P50: percentile(l, 50), P99: percentile(l, 99)}
	}
	return out
}

// percentile returns the p-th percentile (nearest rank) of sorted s.
func percentile(s []time.Duration, p int) time.Duration {
	if len(s) == 0 {
		return 0
	}
	rank := (p*len(s) + 99) / 100 // ceil(p/100 * n)
	return s[max(rank, 1)-1]
}
