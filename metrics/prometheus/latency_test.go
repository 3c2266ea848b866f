package rwprom_test

import (
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/rwpool/rwpool"
)

// rwpool_statement_duration_seconds is each node's StatementLatency: its
// classic buckets are the cumulative counts at rwpool.LatencyBounds, and
// the same counts are a native histogram of schema 1 (a zero bucket for
// rwpool's first, then spans over the non-empty ones) whose buckets add
// up to the count.
func TestStatementDurationHistogram(t *testing.T) {
	c := newCluster(t, "breaker=off")
	reg := newRegistry(t, c.DB)
	for range 7 {
		mustQuery(t, c.DB, "SELECT 1")
	}
	mustExec(t, c.DB, "UPDATE t SET x = 1")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	snap := mustStats(t, c.DB)
	bounds := rwpool.LatencyBounds()
	got := map[string]*dto.Histogram{}
	for _, mf := range mfs {
		if mf.GetName() != "rwpool_statement_duration_seconds" {
			continue
		}
		if mf.GetType() != dto.MetricType_HISTOGRAM {
			t.Fatalf("type %s", mf.GetType())
		}
		for _, m := range mf.GetMetric() {
			var key []string
			for _, l := range m.GetLabel() {
				key = append(key, l.GetName()+"="+l.GetValue())
			}
			got[strings.Join(key, ",")] = m.GetHistogram()
		}
	}
	want := 0
	for _, n := range snap.Nodes {
		for _, l := range n.Latency {
			want++
			h := got["kind="+l.Kind+",node="+n.Name+",outcome="+l.Outcome+",role="+n.Role]
			if h == nil {
				t.Fatalf("no series for %s %s %s in %v", n.Name, l.Kind, l.Outcome, got)
			}
			if h.GetSampleCount() != uint64(l.Count) || math.Abs(h.GetSampleSum()-l.Sum.Seconds()) > 1e-9 {
				t.Errorf("%s: count %d sum %g, want %d and %g", n.Name, h.GetSampleCount(), h.GetSampleSum(), l.Count, l.Sum.Seconds())
			}
			var cum uint64
			for i, b := range h.GetBucket() {
				cum += uint64(l.Buckets[i])
				if b.GetUpperBound() != bounds[i].Seconds() || b.GetCumulativeCount() != cum {
					t.Fatalf("%s: classic bucket %d is le=%g %d, want le=%g %d", n.Name, i, b.GetUpperBound(), b.GetCumulativeCount(), bounds[i].Seconds(), cum)
				}
			}
			if h.GetSchema() != 1 || h.GetZeroThreshold() != bounds[0].Seconds() || h.GetZeroCount() != uint64(l.Buckets[0]) {
				t.Errorf("%s: native schema %d, zero bucket ≤%g: %d", n.Name, h.GetSchema(), h.GetZeroThreshold(), h.GetZeroCount())
			}
			// Native buckets, decoded: bucket index i has upper bound
			// 2^(i/2) s; each count is a delta from the previous one.
			native := h.GetZeroCount()
			idx, count := int32(0), int64(0)
			d := 0
			for _, sp := range h.GetPositiveSpan() {
				idx += sp.GetOffset()
				for range sp.GetLength() {
					count += h.GetPositiveDelta()[d]
					d++
					ub := math.Exp2(float64(idx) / 2)
					j := -1 // rwpool's bucket with that bound
					for k, b := range bounds {
						if math.Abs(b.Seconds()-ub)/ub < 1e-6 {
							j = k
						}
					}
					if j < 0 && ub < 40 || j >= 0 && l.Buckets[j] != count {
						t.Fatalf("%s: native bucket %d (≤%gs) holds %d; rwpool's bucket %d holds %v", n.Name, idx, ub, count, j, l.Buckets)
					}
					native += uint64(count)
					idx++
				}
			}
			if native != uint64(l.Count) {
				t.Errorf("%s: native buckets add up to %d, want %d", n.Name, native, l.Count)
			}
		}
	}
	if want == 0 || len(got) != want {
		t.Fatalf("%d histogram series, want %d (one per node, kind and outcome seen)", len(got), want)
	}
	// The text format, which has no native histograms, shows the classic
	// buckets.
	if text := gatherText(t, reg); !strings.Contains(text, `rwpool_statement_duration_seconds_bucket{kind="write",node="primary",outcome="ok",role="primary",le="+Inf"} 1`) {
		t.Errorf("no classic +Inf bucket of the write in:\n%s", text)
	}
}
