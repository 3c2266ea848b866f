package replication

import (
	"database/sql/driver"
	"testing"
	"time"
)

func onTLI(lsn uint64, tli uint32) Position {
	return Position{flavor: Postgres, lsn: lsn}.OnTimeline(tli)
}

// PostgreSQL positions carry their timeline where the status query read
// it: a node on another known timeline covers nothing (a crashed primary
// back on its old timeline, past the fork, lacks the new primary's WAL at
// those LSNs), an unknown timeline compares LSNs alone.
func TestTimelineCovers(t *testing.T) {
	for _, c := range []struct {
		p, q Position
		want bool
	}{
		{onTLI(200, 1), onTLI(150, 2), false}, // the old history, past the fork
		{onTLI(200, 2), onTLI(150, 1), false}, // a later timeline: the fork point is unknown
		{onTLI(200, 2), onTLI(150, 2), true},
		{onTLI(100, 2), onTLI(150, 2), false},
		{onTLI(200, 0), onTLI(150, 2), true}, // unknown: LSNs decide
		{onTLI(200, 1), onTLI(150, 0), true},
		{onTLI(200, 1), Position{}, true},
	} {
		if got := c.p.Covers(c.q); got != c.want {
			t.Errorf("%v (timeline %d) covers %v (timeline %d): %v, want %v", c.p, c.p.Timeline(), c.q, c.q.Timeline(), got, c.want)
		}
	}
	if m := onTLI(300, 1).Merge(onTLI(200, 2)); m.Timeline() != 2 || m.lsn != 200 {
		t.Errorf("merge across timelines: %v on %d, want the later timeline's", m, m.Timeline())
	}
	if m := onTLI(300, 0).Merge(onTLI(200, 2)); m.Timeline() != 2 || m.lsn != 300 {
		t.Errorf("merge of an unknown timeline: %v on %d", m, m.Timeline())
	}
	if (Position{}).OnTimeline(3).Timeline() != 0 {
		t.Error("the zero Position took a timeline")
	}
}

func TestParseStatusTimeline(t *testing.T) {
	st, err := ParseStatus(Postgres, []driver.Value{true, "0/D1D400", 0.5, "0/D1E000", int64(3)})
	if err != nil || st.Pos.Timeline() != 3 || st.Received.Timeline() != 3 {
		t.Fatalf("%+v %v", st, err)
	}
	st, err = ParseStatus(Postgres, []driver.Value{false, "0/D16540", -1.0, nil, []byte("12")})
	if err != nil || st.Pos.Timeline() != 12 || !st.Received.IsZero() {
		t.Fatalf("%+v %v", st, err)
	}
	st, err = ParseStatus(Postgres, []driver.Value{true, "0/D1D400", 0.5, "0/D1E000", int64(0)})
	if err != nil || st.Pos.Timeline() != 0 {
		t.Fatalf("unknown timeline: %+v %v", st, err)
	}
	if _, err := ParseStatus(Postgres, []driver.Value{true, "0/1", 0.5, nil, "x"}); err == nil {
		t.Error("a timeline that is not a number was taken")
	}
}

// A primary's history starts anew on a new timeline: the old samples would
// make every replica on the new one read as far behind as the oldest.
func TestHistoryNewTimeline(t *testing.T) {
	var h History
	t0 := time.Now()
	h.Add(t0, onTLI(100, 1))
	h.Add(t0.Add(time.Second), onTLI(200, 1))
	h.Add(t0.Add(2*time.Second), onTLI(210, 2))
	if lag, atLeast, ok := h.Lag(t0.Add(3*time.Second), onTLI(210, 2)); !ok || atLeast || lag != 0 {
		t.Errorf("a replica at the new timeline's newest position: lag %s (at least: %v, ok %v)", lag, atLeast, ok)
	}
	if lag, atLeast, ok := h.Lag(t0.Add(3*time.Second), onTLI(250, 1)); !ok || !atLeast || lag != time.Second {
		t.Errorf("a replica on the old timeline: lag %s (at least: %v, ok %v), want at least 1s (since the new timeline's first sample)", lag, atLeast, ok)
	}
}

func TestBinaryTimeline(t *testing.T) {
	for _, p := range []Position{onTLI(0x16B374D848, 7), onTLI(5, 0)} {
		b := p.AppendBinary(nil)
		q, rest, err := DecodeBinary(b)
		if err != nil || len(rest) != 0 || q.lsn != p.lsn || q.Timeline() != p.Timeline() {
			t.Errorf("%v on %d: round trip gave %v on %d (%v)", p, p.Timeline(), q, q.Timeline(), err)
		}
	}
	if _, _, err := DecodeBinary([]byte{binTimeline, 0, 5}); err == nil {
		t.Error("timeline 0 in the binary form was taken (not canonical)")
	}
}
