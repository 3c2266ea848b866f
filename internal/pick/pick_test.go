package pick

import (
	"math"
	"sync/atomic"
	"testing"
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

func BenchmarkPick(b *testing.B) {
	cs, _ := newCandidates(3, 1)
	p := New(cs)
	b.ReportAllocs()
	for b.Loop() {
		if p.Pick(nil) < 0 {
			b.Fatal("no pick")
		}
	}
}
