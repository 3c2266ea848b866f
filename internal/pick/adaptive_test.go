package pick

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/balance"
)

// sim is a discrete-event simulation of readers over an adaptive Picker,
// on a fake clock: each reader picks a candidate, holds it for the latency
// lat gives at that moment, then picks again. Everything is seeded.
type sim struct {
	p      *Picker
	ms     []*balance.Meter
	now    int64
	rnd    *rand.Rand
	lat    func(i int, now time.Duration) time.Duration
	reads  []reading
	events evq
}

type reading struct {
	start time.Duration
	node  int
	took  time.Duration
}

type event struct {
	at, start int64
	node      int
}

type evq []event

func (q evq) Len() int           { return len(q) }
func (q evq) Less(i, j int) bool { return q[i].at < q[j].at }
func (q evq) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *evq) Push(x any)        { *q = append(*q, x.(event)) }
func (q *evq) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func newSim(seed uint64, weights []int, lat func(i int, now time.Duration) time.Duration) *sim {
	s := &sim{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), lat: lat}
	cs, _ := newCandidates(weights...)
	for range cs {
		s.ms = append(s.ms, &balance.Meter{})
	}
	s.p = NewAdaptive(cs, Adaptive{Meters: s.ms, Now: func() int64 { return s.now }, IntN: s.rnd.IntN})
	return s
}

// start has a reader pick and begin a read now.
func (s *sim) start() {
	i := s.p.Pick(nil)
	s.ms[i].Start(s.now)
	d := s.lat(i, time.Duration(s.now))
	heap.Push(&s.events, event{at: s.now + int64(d), start: s.now, node: i})
}

// run runs readers until the clock reaches until; each read is followed
// by think time of the client, 100 µs.
func (s *sim) run(readers int, until time.Duration) {
	for range readers {
		s.start()
	}
	for s.events.Len() > 0 {
		e := heap.Pop(&s.events).(event)
		if e.at > int64(until) {
			return
		}
		s.now = e.at
		took := time.Duration(e.at - e.start)
		s.ms[e.node].Done(s.now, took, true)
		s.reads = append(s.reads, reading{start: time.Duration(e.start), node: e.node, took: took})
		s.now += int64(100 * time.Microsecond)
		s.start()
	}
}

// shares returns each node's share of the reads started in [from, to),
// the reads counted and their p99 latency.
func (s *sim) shares(n int, from, to time.Duration) (sh []float64, total int, p99 time.Duration) {
	sh = make([]float64, n)
	var lats []time.Duration
	for _, r := range s.reads {
		if r.start >= from && r.start < to {
			sh[r.node]++
			total++
			lats = append(lats, r.took)
		}
	}
	for i := range sh {
		sh[i] /= float64(max(total, 1))
	}
	if len(lats) > 0 {
		slices.Sort(lats)
		p99 = lats[len(lats)*99/100]
	}
	return sh, total, p99
}

// jitter is a latency around base: ±20 % noise and, one read in 200, a
// 30 ms stall (a GC pause or a busy core), as on a loaded machine.
func jitter(rnd *rand.Rand, base time.Duration) time.Duration {
	d := base + time.Duration(rnd.Int64N(int64(base)*2/5)) - base/5
	if rnd.IntN(200) == 0 {
		d += 30 * time.Millisecond
	}
	return d
}

// TestAdaptiveSlowReplicaShedsAndRecovers checks the targets on
// the picker alone: of two equal replicas, the one made 200 ms slower at
// 2 s gets ≤ 5 % of the reads from 3 s later with p99 < 100 ms, and ≥ 30 %
// from 5 s after it recovers at 10 s.
func TestAdaptiveSlowReplicaShedsAndRecovers(t *testing.T) {
	for seed := range uint64(5) {
		var s *sim
		s = newSim(seed, []int{1, 1}, func(i int, now time.Duration) time.Duration {
			d := jitter(s.rnd, time.Millisecond)
			if i == 1 && now >= 2*time.Second && now < 10*time.Second {
				d += 200 * time.Millisecond
			}
			return d
		})
		s.run(8, 20*time.Second)
		slow, n, p99 := s.shares(2, 5*time.Second, 10*time.Second)
		if slow[1] > 0.05 || p99 >= 100*time.Millisecond {
			t.Errorf("seed %d: slow replica got %.2f%% of %d reads from 3 s after it turned slow, p99 %s; want ≤ 5%%, < 100ms",
				seed, 100*slow[1], n, p99)
		}
		back, n2, _ := s.shares(2, 15*time.Second, 20*time.Second)
		if back[1] < 0.30 {
			t.Errorf("seed %d: recovered replica got %.1f%% of %d reads from 5 s after it recovered, want ≥ 30%%", seed, 100*back[1], n2)
		}
		t.Logf("seed %d: slow share %.3f%% (p99 %s, %d reads); after recovery %.1f%%", seed, 100*slow[1], p99, n, 100*back[1])
	}
}

// TestAdaptiveKeepsWeightsWithoutFault checks that, with replicas that
// deliver alike (noise and stalls included), shares stay within 10 % of
// the weights' (relative: 50 % ± 5, 75 % ± 7.5).
func TestAdaptiveKeepsWeightsWithoutFault(t *testing.T) {
	for _, weights := range [][]int{{1, 1}, {3, 1}} {
		for seed := range uint64(5) {
			var s *sim
			s = newSim(seed, weights, func(int, time.Duration) time.Duration {
				return jitter(s.rnd, time.Millisecond)
			})
			s.run(8, 10*time.Second)
			sh, n, _ := s.shares(2, time.Second, 10*time.Second)
			want := float64(weights[0]) / float64(weights[0]+weights[1])
			if d := sh[0] - want; d > want/10 || d < -want/10 {
				t.Errorf("weights %v seed %d: first replica got %.1f%% of %d reads, want %.1f%% ± 10%%", weights, seed, 100*sh[0], n, 100*want)
			}
			t.Logf("weights %v seed %d: shares %.1f%% / %.1f%% of %d reads", weights, seed, 100*sh[0], 100*sh[1], n)
		}
	}
}

// TestAdaptiveAvoidsStall checks that reads in flight count before any
// comes back: a node that stops answering is avoided once silent for
// 4 × its estimate + balance.Stall, then gets only its probes.
func TestAdaptiveAvoidsStall(t *testing.T) {
	cs, _ := newCandidates(1, 1)
	ms := []*balance.Meter{{}, {}}
	var now int64
	for _, m := range ms {
		m.Observe(now, time.Millisecond)
	}
	p := NewAdaptive(cs, Adaptive{Meters: ms, Now: func() int64 { return now }, IntN: rand.New(rand.NewPCG(1, 2)).IntN})
	const step = 100 * time.Microsecond // a pick every 100 µs
	early, late := 0, 0
	var first int64 // when node 1 got its first read: its silence counts from there
	for range int(2 * time.Second / step) {
		now += int64(step)
		ms[0].Observe(now, time.Millisecond) // node 0 keeps answering
		if p.Pick(nil) != 1 {
			continue
		}
		ms[1].Start(now) // never ends
		if first == 0 {
			first = now
		}
		if time.Duration(now-first) <= 4*time.Millisecond+balance.Stall+step { // 4 × its estimate + Stall
			early++
		} else {
			late++
		}
	}
	if late > int(2*time.Second/balance.ProbeEvery) {
		t.Fatalf("a node that answers nothing got %d reads once stalled, want one per %s", late, balance.ProbeEvery)
	}
	t.Logf("stalled node: %d reads before it was found stalled, %d in the next 2 s", early, late)
}

// TestAdaptiveProbesStaleNode checks that an avoided node gets one read per
// balance.ProbeEvery, and only one.
func TestAdaptiveProbesStaleNode(t *testing.T) {
	cs, _ := newCandidates(1, 1)
	ms := []*balance.Meter{{}, {}}
	var now int64
	ms[0].Observe(now, time.Millisecond)
	ms[1].Observe(now, time.Second)
	p := NewAdaptive(cs, Adaptive{Meters: ms, Now: func() int64 { return now }, IntN: rand.New(rand.NewPCG(3, 4)).IntN})
	got := 0
	const step = 100 * time.Microsecond
	for range int(2 * time.Second / step) {
		now += int64(step)
		ms[0].Observe(now, time.Millisecond)
		if p.Pick(nil) == 1 {
			got++
		}
	}
	if want := int(2 * time.Second / balance.ProbeEvery); got < want-1 || got > want {
		t.Fatalf("slow node picked %d times in 2s, want about %d (one per %s)", got, want, balance.ProbeEvery)
	}
}

func TestAdaptiveSkipsAndSpares(t *testing.T) {
	cs, ns := newCandidates(1, 1, 0)
	ms := []*balance.Meter{{}, {}, {}}
	p := NewAdaptive(cs, Adaptive{Meters: ms, Now: func() int64 { return 0 }})
	if got := p.Pick(func(i int) bool { return i == 0 }); got != 1 {
		t.Fatalf("Pick skipping 0 = %d, want 1", got)
	}
	ns[0].down.Store(true)
	ns[1].down.Store(true)
	if got := p.Pick(nil); got != 2 {
		t.Fatalf("Pick = %d, want the spare", got)
	}
	ns[2].down.Store(true)
	if got := p.Pick(nil); got != -1 {
		t.Fatalf("Pick with nothing available = %d", got)
	}
}

func BenchmarkPickAdaptive(b *testing.B) {
	cs, _ := newCandidates(3, 1)
	ms := []*balance.Meter{{}, {}}
	for _, m := range ms {
		m.Observe(0, time.Millisecond)
	}
	p := NewAdaptive(cs, Adaptive{Meters: ms, Now: balance.Clock(time.Now())})
	b.ReportAllocs()
	for b.Loop() {
		if p.Pick(nil) < 0 {
			b.Fatal("no pick")
		}
	}
}
