package rwpool_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/rwpool/rwpool"
)

// expvarJSON is the JSON that PublishExpvar's variable renders.
type expvarJSON struct {
	Nodes []struct {
		Name                string     `json:"name"`
		Role                string     `json:"role"`
		Weight              int        `json:"weight"`
		Available           bool       `json:"available"`
		State               string     `json:"state"`
		Since               time.Time  `json:"since"`
		UnavailableSince    *time.Time `json:"unavailable_since"`
		Trips               int64      `json:"trips"`
		LastError           string     `json:"last_error"`
		ProbeLatencySeconds float64    `json:"probe_latency_seconds"`
		MaxOpen             int        `json:"max_open"`
		Open                int        `json:"open"`
		Idle                int        `json:"idle"`
		InUse               int        `json:"in_use"`
		Waiting             int        `json:"waiting"`
		Served              uint64     `json:"served"`
		Errors              uint64     `json:"errors"`
		WaitCount           int64      `json:"wait_count"`
		WaitSeconds         float64    `json:"wait_seconds"`
		Replays             uint64     `json:"replays"`
		Fallbacks           uint64     `json:"fallbacks"`
		LagSeconds          *float64   `json:"lag_seconds"`
		LagKnown            bool       `json:"lag_known"`
		Position            string     `json:"position"`
		Reports             string     `json:"reports"`
		RoleMismatch        bool       `json:"role_mismatch"`
		StatusError         string     `json:"status_error"`
	} `json:"nodes"`
}

var expvarSeq atomic.Int64

// expvarName returns a name no other test (nor another run of this one,
// with -count) publishes: expvar is process-global and never forgets.
func expvarName(t *testing.T) string {
	return fmt.Sprintf("rwpool_test_%s_%d", t.Name(), expvarSeq.Add(1))
}

func readExpvar(t *testing.T, name string) (expvarJSON, string) {
	t.Helper()
	v := expvar.Get(name)
	if v == nil {
		t.Fatalf("expvar %q not published", name)
	}
	raw := v.String()
	var got expvarJSON
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("expvar %q: %v\n%s", name, err, raw)
	}
	return got, raw
}

func TestPublishExpvar(t *testing.T) {
	mc := newMockCluster(t, 1, "pool_size=7;breaker=off")
	for range 3 {
		mc.replicas[0].ExpectQuery("SELECT 1").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(1))
	}
	mc.primary.ExpectExec("DELETE FROM t").WillReturnResult(sqlmock.NewResult(0, 1))
	name := expvarName(t)
	if err := rwpool.PublishExpvar(name, mc.db); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		var n int
		if err := mc.db.QueryRow("SELECT 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mc.db.Exec("DELETE FROM t"); err != nil {
		t.Fatal(err)
	}

	// The variable reads a fresh Snapshot each time.
	got, raw := readExpvar(t, name)
	if len(got.Nodes) != 2 {
		t.Fatalf("%d nodes, want 2:\n%s", len(got.Nodes), raw)
	}
	p, r := got.Nodes[0], got.Nodes[1]
	if p.Name != "primary" || p.Role != "primary" || r.Name != "replica1" || r.Role != "replica" || r.Weight != 1 {
		t.Fatalf("names, roles, weights:\n%s", raw)
	}
	if p.Served != 1 || r.Served != 3 || p.MaxOpen != 7 || r.MaxOpen != 7 ||
		!p.Available || p.State != "available" || p.Since.IsZero() || p.UnavailableSince != nil ||
		r.Open != 1 || r.Idle != 1 || r.InUse != 0 || p.Errors != 0 || p.Trips != 0 || p.LastError != "" {
		t.Fatalf("values:\n%s", raw)
	}
	if strings.Contains(raw, "last_error") || strings.Contains(raw, "unavailable_since") ||
		strings.Contains(raw, "lag_seconds") || strings.Contains(raw, "status_error") {
		t.Errorf("empty optional fields rendered:\n%s", raw)
	}
	// With breaker=off (and sqlmock, which has no positions) no status is
	// read: no lag, no position, no reported role.
	for _, n := range got.Nodes {
		if n.LagSeconds != nil || n.LagKnown || n.Position != "" || n.Reports != "" || n.RoleMismatch {
			t.Errorf("replication fields of %s without a status:\n%s", n.Name, raw)
		}
	}
	for _, key := range []string{`"lag_known":false`, `"position":""`, `"reports":""`, `"role_mismatch":false`} {
		if strings.Count(raw, key) != 2 {
			t.Errorf("%s not rendered for both nodes:\n%s", key, raw)
		}
	}

	// Publishing a name twice is an error, not expvar's panic.
	if err := rwpool.PublishExpvar(name, mc.db); err == nil || !strings.Contains(err.Error(), "already published") {
		t.Fatalf("second PublishExpvar(%q) = %v", name, err)
	}
	taken := expvarName(t)
	expvar.NewInt(taken)
	if err := rwpool.PublishExpvar(taken, mc.db); err == nil {
		t.Fatal("PublishExpvar over another package's variable: no error")
	}

	// A closed database still answers, with its last state.
	mc.primary.ExpectClose()
	mc.replicas[0].ExpectClose()
	if err := mc.db.Close(); err != nil {
		t.Fatal(err)
	}
	got, raw = readExpvar(t, name)
	if len(got.Nodes) != 2 || got.Nodes[1].Served != 3 || got.Nodes[1].Open != 0 || got.Nodes[0].Open != 0 {
		t.Fatalf("after Close:\n%s", raw)
	}
	if s, err := rwpool.Stats(mc.db); err != nil || len(s.Nodes) != 2 {
		t.Fatalf("Stats after Close: %v, %v", s, err)
	}
}

// TestPublishExpvarReplication: over the simulated PostgreSQL cluster the
// health checker reads every node's status; the replicas' lag, every
// position and every reported role are shown, and a replica that reports
// writable is flagged.
func TestPublishExpvarReplication(t *testing.T) {
	cl := t.Name()
	// The primary has written up to 0/300 before the first status, the
	// replica applied up to 0/100: every lag measured is a lower bound
	// since the primary's first sample.
	sim.Fresh(cl + "/p").SetWritten(0x300)
	sim.Fresh(cl + "/r1").SetReplayed(0x100)
	db, err := sql.Open("rwpool", fmt.Sprintf(
		"driver=rwpool-test-postgres-sim;primary=%[1]s/p;replica=%[1]s/r1;check_interval=10ms", cl))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := expvarName(t)
	if err := rwpool.PublishExpvar(name, db); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, raw := readExpvar(t, name)
		p, r := got.Nodes[0], got.Nodes[1]
		if r.LagKnown && p.Position != "" {
			if p.LagSeconds != nil || p.LagKnown || p.Reports != "writable" || p.RoleMismatch || p.StatusError != "" {
				t.Errorf("primary:\n%s", raw)
			}
			if r.LagSeconds == nil || *r.LagSeconds < 0 || *r.LagSeconds > 10 ||
				r.Position != "0/100" || r.Reports != "read-only" || r.RoleMismatch || r.StatusError != "" {
				t.Errorf("replica:\n%s", raw)
			}
			if strings.Count(raw, "lag_seconds") != 1 {
				t.Errorf("lag_seconds not rendered once (for the replica only):\n%s", raw)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no status read:\n%s", raw)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPublishExpvarRejects(t *testing.T) {
	mc := newMockCluster(t, 1, "breaker=off")
	foreign, nilDB := expvarName(t), expvarName(t)
	if err := rwpool.PublishExpvar(foreign, sqlDBNotRWPool(t)); !errors.Is(err, rwpool.ErrNotRWPool) {
		t.Errorf("foreign *sql.DB: %v, want ErrNotRWPool", err)
	}
	if err := rwpool.PublishExpvar(nilDB, nil); err == nil {
		t.Error("nil *sql.DB: no error")
	}
	if err := rwpool.PublishExpvar("", mc.db); err == nil {
		t.Error("empty name: no error")
	}
	for _, name := range []string{foreign, nilDB, ""} {
		if expvar.Get(name) != nil {
			t.Errorf("%q published after an error", name)
		}
	}
}

// TestPublishExpvarHidesDSN: a node whose dial error echoes its DSN trips;
// its last error is shown, its password is not.
func TestPublishExpvarHidesDSN(t *testing.T) {
	const secret = "Sentinel-Pa55-expvar-91c2"
	primary := "fail-expvar host=db1 user=app password=" + secret + " dbname=shop"
	legacy.Node(primary).SetDown(true)
	db, err := sql.Open("rwpool", "driver=rwpool-test-legacy;primary='"+primary+"';replica=legacy-expvar-r;check_interval=20ms")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := expvarName(t)
	if err := rwpool.PublishExpvar(name, db); err != nil {
		t.Fatal(err)
	}
	// Wait until the primary has tripped and the replica answered a probe.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, raw := readExpvar(t, name)
		if p, r := got.Nodes[0], got.Nodes[1]; !p.Available && r.ProbeLatencySeconds > 0 {
			if p.State != "unavailable" || p.Trips != 1 || p.UnavailableSince == nil ||
				!strings.Contains(p.LastError, "cannot connect") {
				t.Errorf("tripped primary:\n%s", raw)
			}
			if strings.Contains(raw, secret) {
				t.Errorf("expvar shows the password:\n%s", raw)
			}
			if !r.Available || r.State != "available" || r.Trips != 0 || r.LastError != "" {
				t.Errorf("replica:\n%s", raw)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("primary never tripped or replica never probed:\n%s", raw)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
