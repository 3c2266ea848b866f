package breaker

import (
	"errors"
	"testing"

	"github.com/rwpool/rwpool/health"
)

func TestLaggingTransitions(t *testing.T) {
	var events []Event
	n := NewNode("replica1", "replica", func(e Event) { events = append(events, e) })
	if _, ok := n.Lag(); ok {
		t.Fatal("lag known before any measurement")
	}
	behind := errors.New("lag 3s > max_lag 1s")
	if !n.SetLagging(true, behind) || n.State() != health.Lagging || n.Available() || n.Tripped() {
		t.Fatalf("after SetLagging(true): state %s", n.State())
	}
	if n.SetLagging(true, behind) {
		t.Fatal("a second SetLagging(true) made a transition")
	}
	// A trip from Lagging, then recovery while still lagging: back to Lagging.
	if !n.Trip(errors.New("down")) || !n.Tripped() {
		t.Fatal("Trip from Lagging failed")
	}
	if !n.Recover() || n.State() != health.Lagging {
		t.Fatalf("Recover while lagging: state %s, want lagging", n.State())
	}
	// Caught up while tripped: remembered, applied by Recover.
	n.Trip(errors.New("down"))
	if n.SetLagging(false, nil) {
		t.Fatal("SetLagging while tripped made a transition")
	}
	if !n.Recover() || n.State() != health.Available {
		t.Fatalf("Recover after catching up: state %s", n.State())
	}
	want := []struct{ from, to State }{
		{health.Available, health.Lagging}, {health.Lagging, health.Unavailable}, {health.Unavailable, health.Lagging},
		{health.Lagging, health.Unavailable}, {health.Unavailable, health.Available},
	}
	if len(events) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(events), len(want), events)
	}
	for i, w := range want {
		if events[i].From != w.from || events[i].To != w.to || events[i].Kind != health.StateChanged {
			t.Errorf("event %d: %s -> %s, want %s -> %s", i, events[i].From, events[i].To, w.from, w.to)
		}
	}
	if events[0].Cause != behind {
		t.Errorf("lagging event cause = %v", events[0].Cause)
	}
	n.SetLag(-5)
	if _, ok := n.Lag(); ok {
		t.Error("negative lag is known")
	}
}

func TestRoleEvents(t *testing.T) {
	var events []Event
	replica := NewNode("replica1", "replica", func(e Event) { events = append(events, e) })
	replica.SetReadOnly(true) // as expected: no event
	replica.SetReadOnly(true)
	if len(events) != 0 || replica.RoleMismatch() {
		t.Fatalf("expected role made events %+v", events)
	}
	replica.SetReadOnly(false) // promoted
	if len(events) != 1 || events[0].Kind != health.RoleChanged || events[0].ReadOnly ||
		!errors.Is(events[0].Cause, health.ErrRoleMismatch) || !replica.RoleMismatch() {
		t.Fatalf("promotion: events %+v, mismatch %v", events, replica.RoleMismatch())
	}
	replica.SetReadOnly(false)
	replica.SetReadOnly(true) // back to normal: one event, no cause
	if len(events) != 2 || events[1].Cause != nil || !events[1].ReadOnly || replica.RoleMismatch() {
		t.Fatalf("back to read-only: events %+v", events)
	}

	events = nil
	primary := NewNode("primary", "primary", func(e Event) { events = append(events, e) })
	primary.SetReadOnly(true) // first report already wrong: flagged
	if len(events) != 1 || !primary.RoleMismatch() || events[0].Cause == nil {
		t.Fatalf("read-only primary: events %+v", events)
	}
	if ro, known := primary.ReadOnly(); !ro || !known {
		t.Error("ReadOnly")
	}
}
