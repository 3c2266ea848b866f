package pick

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"

	"github.com/rwpool/rwpool/internal/balance"
)

// node is a replica whose availability the test sets.
type node struct{ down atomic.Bool }

func (n *node) Available() bool { return !n.down.Load() }

func newCandidates(weights ...int) ([]Candidate, []*node) {
	cs := make([]Candidate, len(weights))
	ns := make([]*node, len(weights))
	for i, w := range weights {
		ns[i] = &node{}
		cs[i] = Candidate{Weight: w, Node: ns[i]}
	}
	return cs, ns
}

func TestPickFollowsWeights(t *testing.T) {
	cs, _ := newCandidates(3, 1, 0)
	p := New(cs)
	const n = 100000
	counts := make([]int, len(cs))
	for range n {
		counts[p.Pick(nil)]++
	}
	if counts[2] != 0 {
		t.Fatalf("spare picked %d times while weighted replicas were available", counts[2])
	}
	share := float64(counts[0]) / n
	if math.Abs(share-0.75) > 0.01 {
		t.Fatalf("weight 3 of 4 got share %.4f, want 0.75±0.01 (counts %v)", share, counts)
	}
}

func TestPickSkipsUnavailableAndUsesSpares(t *testing.T) {
	cs, ns := newCandidates(3, 1, 0, 0)
	p := New(cs)
	ns[0].down.Store(true)
	for range 1000 {
		if got := p.Pick(nil); got != 1 {
			t.Fatalf("Pick = %d, want 1 (the only available weighted replica)", got)
		}
	}
	ns[1].down.Store(true)
	seen := map[int]int{}
	for range 1000 {
		seen[p.Pick(nil)]++
	}
	if seen[2] == 0 || seen[3] == 0 || len(seen) != 2 {
		t.Fatalf("spares not shared when no weighted replica is up: %v", seen)
	}
	if got := p.Pick(func(i int) bool { return i == 2 }); got != 3 {
		t.Fatalf("Pick with skip = %d, want 3", got)
	}
	ns[2].down.Store(true)
	ns[3].down.Store(true)
	if got := p.Pick(nil); got != -1 {
		t.Fatalf("Pick with nothing available = %d, want -1", got)
	}
	if got := New(nil).Pick(nil); got != -1 {
		t.Fatalf("empty picker = %d", got)
	}
}

// TestPickFollowsAvailability checks that availability is read at every
// pick: a replica that leaves and comes back is picked again.
func TestPickFollowsAvailability(t *testing.T) {
	cs, ns := newCandidates(1, 1)
	p := New(cs)
	ns[0].down.Store(true)
	for range 1000 {
		if got := p.Pick(nil); got != 1 {
			t.Fatalf("Pick = %d, want 1: replica 0 is unavailable", got)
		}
	}
	ns[0].down.Store(false)
	seen := map[int]bool{}
	for range 1000 {
		seen[p.Pick(nil)] = true
	}
	if !seen[0] {
		t.Fatal("replica 0 never picked after it came back")
	}
}

func TestNewCopiesAndClampsWeights(t *testing.T) {
	cs, _ := newCandidates(-5, 1)
	p := New(cs)
	cs[1].Weight = 0 // the caller's slice, not the Picker's
	for range 100 {
		if got := p.Pick(nil); got != 1 {
			t.Fatalf("Pick = %d, want 1: a negative weight is a spare", got)
		}
	}
}

// TestPickWeightsAmongAvailable checks the shares when part of the weight
// is unavailable or skipped, where the draws by weight alone are rejected
// and some picks fall back to scanning (Picker): each available candidate
// still gets its weight's share of what is available.
func TestPickWeightsAmongAvailable(t *testing.T) {
	cs, ns := newCandidates(12, 1, 1, 2, 4)
	p := New(cs)
	ns[0].down.Store(true) // 12 of 20: 1 pick in 4.6 rejects all three draws
	skip4 := func(i int) bool { return i == 4 }
	for _, tc := range []struct {
		name string
		skip func(int) bool
		want []float64
	}{
		{"heaviest down", nil, []float64{0, 1.0 / 8, 1.0 / 8, 2.0 / 8, 4.0 / 8}},
		{"heaviest down, another skipped", skip4, []float64{0, 1.0 / 4, 1.0 / 4, 2.0 / 4, 0}},
	} {
		const n = 200000
		counts := make([]int, len(cs))
		for range n {
			counts[p.Pick(tc.skip)]++
		}
		for i, w := range tc.want {
			// 5 standard deviations of a share of n draws.
			tol := 5 * math.Sqrt(w*(1-w)/n)
			if got := float64(counts[i]) / n; math.Abs(got-w) > tol {
				t.Errorf("%s: candidate %d got share %.4f, want %.4f±%.4f (counts %v)", tc.name, i, got, w, tol, counts)
			}
		}
	}
}

// countingNode counts how often a pick asks it whether it is available.
type countingNode struct{ asked atomic.Int64 }

func (n *countingNode) Available() bool { n.asked.Add(1); return true }

// TestPickAsksOneNodeWhenAllUp checks that with every replica available a
// pick costs one question, not one per replica (BenchmarkPick/replicas=64).
func TestPickAsksOneNodeWhenAllUp(t *testing.T) {
	ns := make([]*countingNode, 64)
	cs := make([]Candidate, len(ns))
	for i := range ns {
		ns[i] = &countingNode{}
		cs[i] = Candidate{Weight: 1 + i%3, Node: ns[i]}
	}
	p := New(cs)
	const picks = 1000
	for range picks {
		p.Pick(nil)
	}
	var asked int64
	for _, n := range ns {
		asked += n.asked.Load()
	}
	if asked != picks {
		t.Fatalf("%d picks asked nodes %d times, want once each", picks, asked)
	}
}

func BenchmarkPick(b *testing.B) {
	for _, n := range []int{2, 8, 64} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			ws := make([]int, n)
			for i := range ws {
				ws[i] = 1 + i%3
			}
			cs, _ := newCandidates(ws...)
			p := New(cs)
			b.ReportAllocs()
			for b.Loop() {
				if p.Pick(nil) < 0 {
					b.Fatal("no pick")
				}
			}
		})
	}
}

// TestDrawLeavesOutNot checks the second draw of an adaptive pick: by
// weight among the candidates of the kind other than not, whichever
// position not has.
func TestDrawLeavesOutNot(t *testing.T) {
	cs, _ := newCandidates(3, 1, 2, 0, 0, 0)
	ms := make([]*balance.Meter, len(cs))
	for i := range ms {
		ms[i] = &balance.Meter{}
	}
	p := NewAdaptive(cs, Adaptive{Meters: ms, Now: func() int64 { return 0 }})
	for _, tc := range []struct {
		not    int
		spares bool
		want   []float64
	}{
		{0, false, []float64{0, 1.0 / 3, 2.0 / 3, 0, 0, 0}},
		{1, false, []float64{3.0 / 5, 0, 2.0 / 5, 0, 0, 0}},
		{2, false, []float64{3.0 / 4, 1.0 / 4, 0, 0, 0, 0}},
		{4, true, []float64{0, 0, 0, 1.0 / 2, 0, 1.0 / 2}},
		{0, true, []float64{0, 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3}}, // not of the other kind
	} {
		const n = 100000
		counts := make([]int, len(cs))
		for range n {
			counts[p.draw(nil, tc.not, tc.spares)]++
		}
		for i, w := range tc.want {
			tol := 5*math.Sqrt(w*(1-w)/n) + 1e-9
			if got := float64(counts[i]) / n; math.Abs(got-w) > tol {
				t.Errorf("not=%d spares=%v: candidate %d got share %.4f, want %.4f±%.4f (counts %v)", tc.not, tc.spares, i, got, w, tol, counts)
			}
		}
	}
}
