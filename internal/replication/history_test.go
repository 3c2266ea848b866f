package replication

import (
	"database/sql/driver"
	"strings"
	"testing"
	"time"
)

func lsn(n uint64) Position { return Position{flavor: Postgres, lsn: n} }

func TestHistoryLag(t *testing.T) {
	var h History
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, _, ok := h.Lag(t0, lsn(1)); ok {
		t.Fatal("Lag with no samples: ok")
	}
	// The primary writes 1000 bytes a second, sampled every second.
	for i := range 10 {
		h.Add(t0.Add(time.Duration(i)*time.Second), lsn(uint64(1000*i)))
	}
	now := t0.Add(9500 * time.Millisecond)
	for _, tt := range []struct {
		applied uint64
		want    time.Duration
	}{
		{9000, 0},                        // has the newest sample
		{9999, 0},                        // ahead of it (the primary moved since)
		{8000, 1500 * time.Millisecond},  // the primary was there at t0+8s
		{7500, 2000 * time.Millisecond},  // halfway between t0+7s and t0+8s
		{0, 9500 * time.Millisecond},     // has only the oldest sample
		{0 + 1, 9500 * time.Millisecond}, // interpolated just past the oldest
	} {
		got, atLeast, ok := h.Lag(now, lsn(tt.applied))
		if !ok || atLeast || (got-tt.want).Abs() > 2*time.Millisecond {
			t.Errorf("Lag(applied %d) = %v, %v, %v; want %v", tt.applied, got, atLeast, ok, tt.want)
		}
	}
	// A replica with none of the samples is at least as old as the oldest.
	var late History
	late.Add(t0, lsn(500))
	late.Add(t0.Add(time.Second), lsn(600))
	if got, atLeast, _ := late.Lag(t0.Add(3*time.Second), lsn(100)); got != 3*time.Second || !atLeast {
		t.Errorf("Lag before every sample = %v (at least: %v), want at least 3s", got, atLeast)
	}
}

func TestHistoryRingAndOrder(t *testing.T) {
	var h History
	t0 := time.Now()
	for i := range 3 * historySize {
		h.Add(t0.Add(time.Duration(i)*time.Second), lsn(uint64(i)))
	}
	h.Add(t0, lsn(1)) // back in time: ignored
	if p, _ := h.Latest(); p.lsn != 3*historySize-1 {
		t.Errorf("Latest = %v", p)
	}
	// Only the last historySize samples are kept: position 0 is older
	// than all of them.
	now := t0.Add(time.Duration(3*historySize-1) * time.Second)
	got, _, _ := h.Lag(now, lsn(0))
	if want := time.Duration(historySize-1) * time.Second; got != want {
		t.Errorf("Lag of a replica older than the ring = %v, want %v", got, want)
	}
}

func TestParseStatus(t *testing.T) {
	st, err := ParseStatus(Postgres, []driver.Value{true, []byte("0/D1D400"), 2.5})
	if err != nil || !st.ReadOnly || st.Pos.String() != "0/D1D400" || st.ReplayAge != 2500*time.Millisecond {
		t.Errorf("standby status = %+v, %v", st, err)
	}
	st, err = ParseStatus(Postgres, []driver.Value{false, "0/D16540", float64(-1)})
	if err != nil || st.ReadOnly || st.ReplayAge != -1 {
		t.Errorf("primary status = %+v, %v", st, err)
	}
	st, err = ParseStatus(Postgres, []driver.Value{true, "0/D1D400", 0.5, []byte("0/D1E000")})
	if err != nil || st.Received.String() != "0/D1E000" || st.Pos.String() != "0/D1D400" {
		t.Errorf("standby status with its received position = %+v, %v", st, err)
	}
	st, err = ParseStatus(Postgres, []driver.Value{false, "0/D16540", float64(-1), nil})
	if err != nil || !st.Received.IsZero() {
		t.Errorf("primary status (received NULL) = %+v, %v", st, err)
	}
	if _, err := ParseStatus(Postgres, []driver.Value{true, "0/1", 0.5, "nonsense"}); err == nil {
		t.Error("a received position that is no LSN accepted")
	}
	st, err = ParseStatus(MariaDB, []driver.Value{int64(1), []byte("0-55406-13")})
	if err != nil || !st.ReadOnly || st.Pos.String() != "0-55406-13" {
		t.Errorf("MariaDB status = %+v, %v", st, err)
	}
	if _, err := ParseStatus(MariaDB, []driver.Value{int64(1)}); err == nil {
		t.Error("short row accepted")
	}
	if _, err := ParseStatus(MariaDB, []driver.Value{"maybe", ""}); err == nil {
		t.Error("non-boolean read_only accepted")
	}
	if FlavorOf("10.11.19-MariaDB-0+deb12u1-log") != MariaDB || FlavorOf("8.0.36") != MySQL {
		t.Error("FlavorOf")
	}
	for _, f := range []Flavor{Postgres, MariaDB, MySQL} {
		if StatusQuery(f, true, true) == "" || StatusQuery(f, false, false) == "" || WrittenQuery(f) == "" {
			t.Errorf("%s: missing query", f)
		}
	}
	if StatusQuery(Unknown, true, true) != "" || WrittenQuery(Unknown) != "" {
		t.Error("queries for an unknown flavor")
	}
}

func TestApplied(t *testing.T) {
	target := lsn(0x100)
	if q := AppliedQuery(target, time.Second); !strings.Contains(q, "pg_last_wal_replay_lsn") {
		t.Errorf("PostgreSQL applied query %q", q)
	}
	if ok, at, err := Applied(target, []byte("0/FF")); ok || at.lsn != 0xFF || err != nil {
		t.Errorf("behind standby: %v %v %v", ok, at, err)
	}
	if ok, _, _ := Applied(target, "0/100"); !ok {
		t.Error("caught-up standby not ok")
	}
	if ok, _, _ := Applied(target, nil); ok {
		t.Error("a NULL replay position (not a standby) is ok")
	}

	g, _ := ParseMariaDBGTID("0-1-42")
	if q := AppliedQuery(g, 50*time.Millisecond); q != "SELECT CONCAT(MASTER_GTID_WAIT('0-1-42', 0.050), ',', @@gtid_current_pos)" {
		t.Errorf("MariaDB applied query %q", q)
	}
	if ok, at, _ := Applied(g, "0,0-1-45"); !ok || at.String() != "0-1-45" {
		t.Errorf("MASTER_GTID_WAIT 0 with the same server's 0-1-45: ok %v at %s, want ok at 0-1-45", ok, at)
	}
	// A replica left on a replaced primary's history: its sequence number
	// is past the target's, so the wait succeeds, but it never had the
	// target's transaction, written by server 3.
	g3, _ := ParseMariaDBGTID("0-3-42")
	if ok, _, _ := Applied(g3, "0,0-1-50"); ok {
		t.Error("a replica at 0-1-50 is taken to hold 0-3-42, written by another server")
	}
	if ok, _, _ := Applied(g, "-1,0-1-40"); ok {
		t.Error("MASTER_GTID_WAIT -1 with a position is ok")
	}
	if ok, _, _ := Applied(g, "0,"); ok {
		t.Error("a replica with an empty position is taken to hold 0-1-42")
	}
	if ok, at, _ := Applied(g, int64(0)); !ok || at.String() != "0-1-42" {
		t.Error("MASTER_GTID_WAIT 0 is not ok")
	}
	if ok, _, _ := Applied(g, int64(-1)); ok {
		t.Error("MASTER_GTID_WAIT -1 (timeout) is ok")
	}

	s, _ := ParseMySQLGTIDSet("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")
	if q := AppliedQuery(s, 50*time.Millisecond); !strings.HasPrefix(q, "SELECT GTID_SUBSET('3e11fa47") {
		t.Errorf("MySQL short wait %q: must not use WAIT_FOR_EXECUTED_GTID_SET (0 = forever)", q)
	}
	if q := AppliedQuery(s, 2*time.Second); !strings.Contains(q, "WAIT_FOR_EXECUTED_GTID_SET('3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5', 2)") {
		t.Errorf("MySQL wait %q", q)
	}
	if ok, _, _ := Applied(s, int64(1)); !ok {
		t.Error("GTID_SUBSET 1 is not ok")
	}
}

func TestHistorySince(t *testing.T) {
	var h History
	t0 := time.Unix(1000, 0)
	if _, ok := h.Since(t0); ok {
		t.Error("an empty history has a sample")
	}
	for i := range 3 {
		h.Add(t0.Add(time.Duration(i)*time.Second), lsn(uint64(0x100*(i+1))))
	}
	for _, c := range []struct {
		since time.Duration
		want  string
		ok    bool
	}{{-time.Second, "0/100", true}, {0, "0/100", true}, {time.Millisecond, "0/200", true}, {2 * time.Second, "0/300", true}, {3 * time.Second, "", false}} {
		p, ok := h.Since(t0.Add(c.since))
		if ok != c.ok || (ok && p.String() != c.want) {
			t.Errorf("Since(t0%+v) = %s, %v; want %s, %v", c.since, p, ok, c.want, c.ok)
		}
	}
	h.Reset()
	if _, ok := h.Since(t0); ok {
		t.Error("Reset kept a sample")
	}
}
