package health

import "testing"

func TestStrings(t *testing.T) {
	for s, want := range map[State]State{Available: 0, Unavailable: 1, Lagging: 2} {
		if s != want {
			t.Errorf("%v = %d, want %d: the values are part of the contract", s, s, want)
		}
	}
	for s, want := range map[State]string{Available: "available", Unavailable: "unavailable", Lagging: "lagging", 7: "unknown"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", s, got, want)
		}
	}
	for k, want := range map[EventKind]string{StateChanged: "state", RoleChanged: "role", 9: "unknown"} {
		if got := k.String(); got != want {
			t.Errorf("EventKind(%d).String() = %q, want %q", k, got, want)
		}
	}
}
