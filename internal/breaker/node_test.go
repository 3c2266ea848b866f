package breaker

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rwpool/rwpool/health"
)

func TestTransitionsAreIdempotentUnderConcurrency(t *testing.T) {
	var events []Event
	var mu sync.Mutex
	n := NewNode("replica1", "replica", func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	if !n.Available() || n.State() != health.Available {
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
	if trip.To != health.Unavailable || trip.Cause != cause || trip.Node != "replica1" || trip.Role != "replica" {
		t.Fatalf("trip event %+v", trip)
	}
	if rec.To != health.Available || rec.From != health.Unavailable || rec.Downtime <= 0 || rec.Cause != nil {
		t.Fatalf("recovery event %+v", rec)
	}
}

// A Snapshot taken while other goroutines trip and recover the node never
// mixes two moments: a tripped state always comes with the trip that made
// it (its count and its cause).
func TestSnapshotIsOneMoment(t *testing.T) {
	n := NewNode("replica1", "replica", nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			n.Trip(fmt.Errorf("trip %d", i))
			n.Recover()
		}
	}()
	for range 20000 {
		s := n.Snapshot()
		if s.Available() != (s.State == health.Available) {
			t.Fatalf("snapshot %+v: Available() disagrees with State", s)
		}
		if s.State == health.Unavailable {
			if s.LastError == nil || s.LastError.Error() != fmt.Sprintf("trip %d", s.Trips) {
				t.Fatalf("unavailable snapshot with trips %d and cause %v", s.Trips, s.LastError)
			}
		}
	}
	close(stop)
	wg.Wait()
}
