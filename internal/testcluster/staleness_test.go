package testcluster

import (
	"testing"
	"time"
)

func TestStaleness(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// Ids are acknowledged out of order (concurrent writers): id 3 before
	// id 2.
	s := NewStaleness([]Ack{{1, ms(10)}, {3, ms(20)}, {2, ms(30)}, {4, ms(40)}})
	for _, c := range []struct {
		start time.Duration
		max   int64
		age   time.Duration
		stale bool
	}{
		{ms(50), 4, 0, false},     // saw everything
		{ms(50), 3, ms(10), true}, // missed 4, acknowledged at 40
		{ms(50), 1, ms(30), true}, // missed 3 (at 20), 2 and 4
		{ms(25), 1, ms(5), true},  // missed 3 (at 20); 2 and 4 came later
		{ms(15), 1, 0, false},     // nothing above 1 acknowledged yet
		{ms(50), 0, ms(40), true}, // saw nothing: missed 1 (at 10)
		{ms(10), 0, 0, false},     // began when 1 was acknowledged
		{ms(50), 9, 0, false},     // saw ids the primary lacks
	} {
		age, stale := s.Of(c.start, c.max)
		if age != c.age || stale != c.stale {
			t.Errorf("read at %s that saw up to %d: %s, %v; want %s, %v", c.start, c.max, age, stale, c.age, c.stale)
		}
	}
}
