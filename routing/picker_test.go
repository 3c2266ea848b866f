package routing

import (
	"math"
	"testing"

	"github.com/rwpool/rwpool/internal/breaker"
)

func newReplicas(weights ...int) []Candidate {
	rs := make([]Candidate, len(weights))
	for i, w := range weights {
		rs[i] = Candidate{Weight: w, Node: breaker.NewNode("r", "replica", nil)}
	}
	return rs
}

func TestPickFollowsWeights(t *testing.T) {
	rs := newReplicas(3, 1, 0)
	p := NewPicker(rs)
	const n = 100000
	counts := make([]int, len(rs))
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
	rs := newReplicas(3, 1, 0, 0)
	p := NewPicker(rs)
	rs[0].Node.Trip(nil)
	for range 1000 {
		if got := p.Pick(nil); got != 1 {
			t.Fatalf("Pick = %d, want 1 (the only available weighted replica)", got)
		}
	}
	rs[1].Node.Trip(nil)
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
	rs[2].Node.Trip(nil)
	rs[3].Node.Trip(nil)
	if got := p.Pick(nil); got != -1 {
		t.Fatalf("Pick with nothing available = %d, want -1", got)
	}
	if got := NewPicker(nil).Pick(nil); got != -1 {
		t.Fatalf("empty picker = %d", got)
	}
}

func BenchmarkPick(b *testing.B) {
	p := NewPicker(newReplicas(3, 1))
	b.ReportAllocs()
	for b.Loop() {
		if p.Pick(nil) < 0 {
			b.Fatal("no pick")
		}
	}
}

func TestPickSkipsLagging(t *testing.T) {
	rs := newReplicas(1, 1)
	p := NewPicker(rs)
	rs[0].Node.SetLagging(true, nil)
	for range 1000 {
		if got := p.Pick(nil); got != 1 {
			t.Fatalf("Pick = %d, want 1: replica 0 is lagging", got)
		}
	}
	rs[0].Node.SetLagging(false, nil)
	seen := map[int]bool{}
	for range 1000 {
		seen[p.Pick(nil)] = true
	}
	if !seen[0] {
		t.Fatal("replica 0 never picked after it caught up")
	}
}
