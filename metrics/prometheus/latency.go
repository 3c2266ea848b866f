package rwprom

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/rwpool/rwpool"
)

// latencyMetric is one node's rwpool.StatementLatency as a Prometheus
// histogram carrying both forms: classic buckets (cumulative, with the le
// bounds of rwpool.LatencyBounds) for the text format and registries
// without native histograms, and the same counts as a native histogram of
// schema 1, whose bucket boundaries rwpool's are (2^(k/2) seconds), for a
// scrape in the protobuf format that asks for them. rwpool's first bucket
// (everything up to about 86 µs) is the native histogram's zero bucket;
// its last (over 32 s) is native bucket 11 (up to about 45 s), where
// anything slower is counted too.
type latencyMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	l      rwpool.StatementLatency
	bounds []float64 // rwpool.LatencyBounds in seconds
}

// nativeFirst is the native schema-1 index of rwpool's second bucket:
// bucket i's upper bound 2^((i+nativeFirst-1)/2) s, as
// rwpool.LatencyBounds()[i] = 2^((i-27)/2) s.
const nativeFirst = -26

func newLatencyMetric(desc *prometheus.Desc, bounds []float64, l rwpool.StatementLatency, labelValues ...string) *latencyMetric {
	return &latencyMetric{desc: desc, labels: prometheus.MakeLabelPairs(desc, labelValues), l: l, bounds: bounds}
}

func (m *latencyMetric) Desc() *prometheus.Desc { return m.desc }

func (m *latencyMetric) Write(out *dto.Metric) error {
	l := m.l
	h := &dto.Histogram{
		SampleCount: proto.Uint64(uint64(l.Count)),
		SampleSum:   proto.Float64(l.Sum.Seconds()),
		Schema:      proto.Int32(1),
	}
	var cum uint64
	for i, ub := range m.bounds {
		if i < len(l.Buckets) {
			cum += uint64(l.Buckets[i])
		}
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(ub), CumulativeCount: proto.Uint64(cum)})
	}
	if len(l.Buckets) > 0 {
		h.ZeroThreshold = proto.Float64(m.bounds[0])
		h.ZeroCount = proto.Uint64(uint64(l.Buckets[0]))
	}
	// Native buckets: spans of consecutive non-empty buckets, each count
	// given as its difference from the previous bucket's.
	var prev int64
	next := math.MinInt // the native index the current span reaches
	for i := 1; i < len(l.Buckets); i++ {
		c := l.Buckets[i]
		if c == 0 {
			continue
		}
		idx := i + nativeFirst - 1
		if idx != next {
			offset := idx
			if len(h.PositiveSpan) > 0 {
				offset = idx - next
			}
			h.PositiveSpan = append(h.PositiveSpan, &dto.BucketSpan{Offset: proto.Int32(int32(offset)), Length: proto.Uint32(0)})
		}
		s := h.PositiveSpan[len(h.PositiveSpan)-1]
		*s.Length++
		h.PositiveDelta = append(h.PositiveDelta, c-prev)
		prev, next = c, idx+1
	}
	out.Label = m.labels
	out.Histogram = h
	return nil
}
