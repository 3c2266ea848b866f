package health

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestTransitionsAreIdempotentUnderConcurrency(t *testing.T) {
	var events []Event
	var mu sync.Mutex
	n := NewNode("replica1", "replica", func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	if !n.Available() || n.State() != Available {
		t.Fatalf("new node state = %v, want available", n.State())
	}
	cause := errors.New("connection refused")
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n.Trip(cause) {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := wins.Load(); got != 1 {
		t.Fatalf("%d callers made the transition, want 1", got)
	}
	if n.Available() || n.Trips() != 1 || n.LastError() != cause {
		t.Fatalf("after trip: available=%v trips=%d last=%v", n.Available(), n.Trips(), n.LastError())
	}
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); n.Recover() }()
	}
	wg.Wait()
	if !n.Available() || n.Recover() {
		t.Fatal("Recover must succeed exactly once")
	}
	if len(events) != 2 {
		t.Fatalf("events = %+v, want one trip and one recovery", events)
	}
	trip, rec := events[0], events[1]
	if trip.To != Unavailable || trip.Cause != cause || trip.Node != "replica1" || trip.Role != "replica" {
		t.Fatalf("trip event %+v", trip)
	}
	if rec.To != Available || rec.From != Unavailable || rec.Downtime <= 0 || rec.Cause != nil {
		t.Fatalf("recovery event %+v", rec)
	}
	if Unavailable.String() != "unavailable" || Available.String() != "available" {
		t.Fatal("State.String")
	}
}
