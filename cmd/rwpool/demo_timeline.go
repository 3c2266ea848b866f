package main

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/cmd/rwpool/internal/workload"
)

// maxSamples bounds the time series of --report: the interval grows with
// --duration so that a run keeps at most this many samples.
const maxSamples = 1500

// minSampleEvery is the finest interval of the time series; 200ms resolves
// the demo's trips (check_interval 500ms) without drawing noise.
const minSampleEvery = 200 * time.Millisecond

// sampleInterval returns the time series' interval for a run of d.
func sampleInterval(d time.Duration) time.Duration {
	const unit = 100 * time.Millisecond
	every := (d + maxSamples - 1) / maxSamples
	return max(minSampleEvery, (every+unit-1)/unit*unit) // rounded up: at most maxSamples
}

// timeline collects what the HTML report draws: per interval, the
// operations that succeeded and failed, and per node its statements, the
// p99 latency of its attempts and its state. It is safe for concurrent
// use; its memory is bounded by maxSamples and by one interval's
// latencies.
type timeline struct {
	every time.Duration

	mu      sync.Mutex
	lat     map[string][]time.Duration // this interval's attempt latencies per node
	cur     opCounts                   // this interval's operations
	served  map[string]int64           // Served at the last sample
	samples []tlSample
}

// opCounts counts final outcomes of operations (attempts the workload ran
// again are not outcomes).
type opCounts struct{ readsOK, readsFailed, writesOK, writesFailed int64 }

// tlSample is one interval of the time series.
type tlSample struct {
	at    time.Duration // the interval's end, since the workload started
	ops   opCounts
	nodes []tlNode
}

// tlNode is one node in one interval.
type tlNode struct {
	name   string
	served int64         // statements it got in the interval (Served's growth)
	p99    time.Duration // of the attempts it ran in the interval; -1 if none
	state  string        // at the interval's end
}

func newTimeline(every time.Duration) *timeline {
	return &timeline{every: every, lat: map[string][]time.Duration{}, served: map[string]int64{}}
}

// record adds one workload attempt.
func (tl *timeline) record(a workload.Attempt) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if a.Node != "" {
		tl.lat[a.Node] = append(tl.lat[a.Node], a.Latency)
	}
	if a.Retried {
		return
	}
	switch {
	case a.Kind == workload.Read && a.Err == nil:
		tl.cur.readsOK++
	case a.Kind == workload.Read:
		tl.cur.readsFailed++
	case a.Err == nil:
		tl.cur.writesOK++
	default:
		tl.cur.writesFailed++
	}
}

// cut ends the current interval at `at` with the nodes' stats s.
func (tl *timeline) cut(at time.Duration, s rwpool.Snapshot) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	smp := tlSample{at: at, ops: tl.cur}
	for _, n := range s.Nodes {
		tn := tlNode{name: n.Name, served: n.Served - tl.served[n.Name], p99: -1, state: n.State.String()}
		if l := tl.lat[n.Name]; len(l) > 0 {
			slices.Sort(l)
			tn.p99 = l[max((99*len(l)+99)/100, 1)-1] // nearest rank
		}
		tl.served[n.Name] = n.Served
		smp.nodes = append(smp.nodes, tn)
	}
	tl.cur = opCounts{}
	clear(tl.lat)
	if len(tl.samples) < 2*maxSamples { // sampleInterval keeps a run under maxSamples: a backstop
		tl.samples = append(tl.samples, smp)
	}
}

// snapshot returns the samples so far.
func (tl *timeline) snapshot() []tlSample {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.samples)
}

// run cuts an interval every tl.every until ctx ends, then a last one.
// start is the workload's start; stats reads the nodes' stats.
func (tl *timeline) run(ctx context.Context, start time.Time, stats func() (rwpool.Snapshot, error)) {
	t := time.NewTicker(tl.every)
	defer t.Stop()
	// The first cut only sets the Served baseline: setup statements are
	// not the workload's.
	if s, err := stats(); err == nil {
		tl.mu.Lock()
		for _, n := range s.Nodes {
			tl.served[n.Name] = n.Served
		}
		tl.mu.Unlock()
	}
	last := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			// A last interval much shorter than the others would draw its
			// few operations as a drop in the rate: it is left out.
			if at := time.Since(start); at-last >= tl.every/2 {
				if s, err := stats(); err == nil {
					tl.cut(at, s)
				}
			}
			return
		case <-t.C:
			if s, err := stats(); err == nil {
				last = time.Since(start)
				tl.cut(last, s)
			}
		}
	}
}
