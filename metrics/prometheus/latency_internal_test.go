package rwprom

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rwpool/rwpool"
)

func TestNativeMatchesClassic(t *testing.T) {
	var bounds []float64
	for _, b := range rwpool.LatencyBounds() {
		bounds = append(bounds, b.Seconds())
	}
	desc := prometheus.NewDesc("x", "x", nil, nil)
	rnd := rand.New(rand.NewPCG(7, 8))
	for iter := range 20000 {
		l := rwpool.StatementLatency{Buckets: make([]int64, len(bounds)+1)}
		for i := range l.Buckets {
			if rnd.IntN(3) == 0 {
				l.Buckets[i] = int64(rnd.IntN(5))
			}
			l.Count += l.Buckets[i]
		}
		if l.Count == 0 {
			continue
		}
		var m dto.Metric
		if err := newLatencyMetric(desc, bounds, l).Write(&m); err != nil {
			t.Fatal(err)
		}
		h := m.Histogram
		// decode native
		got := map[int]int64{}
		idx, c := 0, int64(0)
		d := 0
		for si, s := range h.PositiveSpan {
			if si == 0 {
				idx = int(s.GetOffset())
			} else {
				idx += int(s.GetOffset())
			}
			for range s.GetLength() {
				c += h.PositiveDelta[d]
				d++
				got[idx] = c
				idx++
			}
		}
		if d != len(h.PositiveDelta) {
			t.Fatalf("iter %d: %d deltas, spans cover %d", iter, len(h.PositiveDelta), d)
		}
		total := int64(h.GetZeroCount())
		for k, v := range got {
			// native bucket k covers (2^((k-1)/2), 2^(k/2)]
			ub := math.Pow(2, float64(k)/2)
			i := k + 27 // rwpool bucket
			if i < 1 || i >= len(l.Buckets) || l.Buckets[i] != v {
				t.Fatalf("iter %d: native %d (ub %g) = %d, rwpool bucket %d = %v", iter, k, ub, v, i, l.Buckets)
			}
			if i < len(bounds) && math.Abs(ub-bounds[i]) > 1e-9 {
				t.Fatalf("native ub %g vs classic %g", ub, bounds[i])
			}
			total += v
		}
		if total != l.Count || int64(h.GetSampleCount()) != l.Count || int64(h.GetZeroCount()) != l.Buckets[0] {
			t.Fatalf("iter %d: total %d count %d", iter, total, l.Count)
		}
		for i := 1; i < len(l.Buckets); i++ {
			if l.Buckets[i] != 0 {
				if _, ok := got[i-27]; !ok {
					t.Fatalf("iter %d: bucket %d missing", iter, i)
				}
			}
		}
	}
}
