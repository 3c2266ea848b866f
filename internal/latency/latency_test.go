package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// Every duration lands in the first bucket whose bound is at least it:
// checked against a linear search over durations around every bound and
// at random.
func TestBucket(t *testing.T) {
	linear := func(ns int64) int {
		for i, b := range bounds {
			if ns <= b {
				return i
			}
		}
		return Buckets - 1
	}
	var probes []int64
	for _, b := range bounds {
		probes = append(probes, b-1, b, b+1)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		probes = append(probes, int64(math.Exp(rnd.Float64()*math.Log(1e12)))) // 1 ns to 1000 s
	}
	probes = append(probes, 0, 1, math.MaxInt64)
	for _, ns := range probes {
		if got, want := bucket(ns), linear(ns); got != want {
			t.Fatalf("bucket(%d) = %d, want %d", ns, got, want)
		}
	}
}

// The bounds are 2^(k/2) seconds: powers of √2, from about 86 µs to 32 s.
func TestBounds(t *testing.T) {
	if got := Bound(0); got < 86*time.Microsecond || got > 87*time.Microsecond {
		t.Errorf("first bound %s, want 86.3µs", got)
	}
	if got := Bound(Buckets - 2); got != 32*time.Second {
		t.Errorf("last bound %s, want 32s", got)
	}
	if got := Bound(27); got != time.Second {
		t.Errorf("bound 27 is %s, want 1s (2^0)", got)
	}
	for i := 1; i < Buckets-1; i++ {
		if r := float64(Bound(i)) / float64(Bound(i-1)); math.Abs(r-math.Sqrt2) > 1e-4 {
			t.Fatalf("bound %d / bound %d = %f, want √2", i, i-1, r)
		}
	}
}

// A known distribution, recorded from several goroutines: the counts add
// up, and each quantile read off the buckets is within one bucket (a
// factor of √2) above the true one.
func TestQuantiles(t *testing.T) {
	var h Histogram
	rnd := rand.New(rand.NewPCG(3, 4))
	ds := make([]time.Duration, 40000)
	for i := range ds {
		ds[i] = time.Duration(math.Exp(math.Log(200e3) + rnd.NormFloat64())) // lognormal around 200 µs
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for _, d := range ds[w*10000 : (w+1)*10000] {
				h.Observe(d)
			}
		})
	}
	wg.Wait()
	s := h.Snapshot()
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	if s.Count != int64(len(ds)) || s.Sum != sum {
		t.Fatalf("count %d sum %s, want %d and %s", s.Count, s.Sum, len(ds), sum)
	}
	sorted := append([]time.Duration(nil), ds...)
	slices.Sort(sorted)
	for _, q := range []float64{0.5, 0.9, 0.99} {
		exact := sorted[int(math.Ceil(q*float64(len(sorted))))-1]
		got := s.Quantile(q)
		if got < exact || float64(got) > float64(exact)*math.Sqrt2*1.0001 {
			t.Errorf("p%g: %s, want within [%s, %s]", q*100, got, exact, time.Duration(float64(exact)*math.Sqrt2))
		}
	}
}

func BenchmarkObserve(b *testing.B) {
	var h Histogram
	b.RunParallel(func(pb *testing.PB) {
		d := 300 * time.Microsecond
		for pb.Next() {
			h.Observe(d)
			d += 7
		}
	})
}
