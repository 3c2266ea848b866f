package health

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestTransitionsAreIdempotentUnderConcurrency(t *testing.T) {
	n := NewNode("replica1")
	if !n.Available() || n.State() != Available {
		t.Fatalf("new node state = %v, want available", n.State())
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n.MarkUnavailable() {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := wins.Load(); got != 1 {
		t.Fatalf("%d callers made the transition, want 1", got)
	}
	if n.Available() || n.Trips() != 1 {
		t.Fatalf("after trip: available=%v trips=%d", n.Available(), n.Trips())
	}
	before := n.Since()
	if !n.MarkAvailable() || n.MarkAvailable() {
		t.Fatal("MarkAvailable must succeed exactly once")
	}
	if !n.Available() || n.Since().Before(before) {
		t.Fatalf("after recovery: state=%v since=%v (was %v)", n.State(), n.Since(), before)
	}
	if n.Name() != "replica1" || Unavailable.String() != "unavailable" {
		t.Fatal("names")
	}
}
