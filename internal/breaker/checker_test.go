package breaker

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool/health"
)

func TestCheckerTripsAfterConfirmationAndRecovers(t *testing.T) {
	var mu sync.Mutex
	var events []Event
	n := NewNode("replica1", "replica", func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() })
	var calls []bool
	fail := map[bool]bool{} // fresh → fails
	recovered := 0
	c := &Checker{
		Node: n, Interval: time.Hour,
		Probe: func(fresh bool) (time.Duration, error) {
			calls = append(calls, fresh)
			if fail[fresh] {
				return 0, errors.New("probe failed")
			}
			return time.Millisecond, nil
		},
		OnRecover: func() { recovered++ },
	}
	// A dead dedicated connection alone does not trip the node.
	fail[false] = true
	c.Check()
	if !n.Available() || len(calls) != 2 || calls[0] || !calls[1] {
		t.Fatalf("after a stale dedicated connection: available=%v calls=%v", n.Available(), calls)
	}
	// Both the dedicated and a fresh connection fail: trip.
	fail[true] = true
	c.Check()
	if n.Available() {
		t.Fatal("node still available after a confirmed probe failure")
	}
	// While unavailable, one failed probe per round, no retry.
	calls = nil
	c.Check()
	if len(calls) != 1 {
		t.Fatalf("probes of an unavailable node per round = %d, want 1", len(calls))
	}
	fail = map[bool]bool{}
	c.Check()
	if !n.Available() || recovered != 1 || n.ProbeLatency() != time.Millisecond {
		t.Fatalf("after a good probe: available=%v recovered=%d", n.Available(), recovered)
	}
	if len(events) != 2 || events[0].To != health.Unavailable || events[1].To != health.Available {
		t.Fatalf("events %+v", events)
	}
}

func TestCheckerDoesNotRetryATimeout(t *testing.T) {
	n := NewNode("replica1", "replica", nil)
	probes := 0
	c := &Checker{Node: n, Interval: time.Hour, Probe: func(bool) (time.Duration, error) {
		probes++
		return 0, fmt.Errorf("probe: %w after 1s", health.ErrProbeTimeout)
	}}
	c.Check()
	if probes != 1 || n.Available() {
		t.Fatalf("a hung node: %d probes, available=%v; want 1 probe and a trip", probes, n.Available())
	}
}

func TestCheckerRunStops(t *testing.T) {
	n := NewNode("p", "primary", nil)
	probed := make(chan struct{}, 100)
	c := &Checker{Node: n, Interval: time.Millisecond, Probe: func(bool) (time.Duration, error) {
		probed <- struct{}{}
		return 0, nil
	}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { c.Run(stop); close(done) }()
	<-probed
	close(stop)
	<-done
}

func TestJitterStaysWithinTwentyPercentBelow(t *testing.T) {
	for range 1000 {
		d := jitter(time.Second)
		if d > time.Second || d < 800*time.Millisecond {
			t.Fatalf("jitter(1s) = %v", d)
		}
	}
}

// An unavailable node is probed every DownInterval, an available one every
// Interval: a restarted node is found sooner than a healthy one is checked.
func TestCheckerProbesUnavailableNodeMoreOften(t *testing.T) {
	n := NewNode("replica1", "replica", nil)
	probes := make(chan struct{}, 100)
	var up sync.Mutex // held: the node is down
	up.Lock()
	c := &Checker{
		Node: n, Interval: time.Hour, DownInterval: 5 * time.Millisecond,
		Probe: func(bool) (time.Duration, error) {
			select {
			case probes <- struct{}{}:
			default:
			}
			if !up.TryLock() {
				return 0, errors.New("connection refused")
			}
			up.Unlock()
			return time.Millisecond, nil
		},
	}
	if c.next() != time.Hour {
		t.Fatalf("an available node is probed every %s, want Interval", c.next())
	}
	n.Trip(errors.New("down"))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { c.Run(stop); close(done) }()
	for i := range 3 {
		select {
		case <-probes:
		case <-time.After(5 * time.Second):
			t.Fatalf("probe %d of an unavailable node did not come within 5s (Interval is an hour)", i+1)
		}
	}
	up.Unlock() // it is back: the next probe recovers it
	for deadline := time.Now().Add(5 * time.Second); !n.Available(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the node was not recovered within 5s (Interval is an hour)")
		}
	}
	if c.next() != time.Hour {
		t.Errorf("a recovered node is probed every %s, want Interval", c.next())
	}
	close(stop)
	<-done
}
