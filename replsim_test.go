package rwpool_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/rwpool/rwpool"
)

// openSim opens rwpool over a fresh simulated PostgreSQL cluster (sim, in
// fakedriver_test.go) with two replicas and no health probes (the test
// decides what each node has applied). Node DSNs are "<cluster>/p" for
// the primary and "<cluster>/rN" for replicas. Every write on the primary
// moves its WAL position by 0x100; reads answer with the node's DSN.
func openSim(t *testing.T, extra string) (*sql.DB, string) {
	t.Helper()
	name := t.Name()
	sim.Fresh(name + "/p")
	sim.Fresh(name + "/r1").SetReplayed(0)
	sim.Fresh(name + "/r2").SetReplayed(0)
	db, err := sql.Open("rwpool", fmt.Sprintf("driver=rwpool-test-postgres-sim;primary=%[1]s/p;replica=%[1]s/r1;replica=%[1]s/r2;check_interval=1h;%s", name, extra))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rwpool.LearnEndpoints(db) // as the first probe would: each replica leads to one server
	return db, name
}

func simRead(t *testing.T, db *sql.DB, ctx context.Context) rwpool.Route {
	t.Helper()
	var r rwpool.Route
	var node string
	if err := db.QueryRowContext(rwpool.WithRoute(ctx, &r), "SELECT node").Scan(&node); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSessionRoutesByPosition: a session's reads after a write go only to
// replicas whose replay position has reached the write, else to the
// primary; reads before any write and outside sessions are unaffected.
func TestSessionRoutesByPosition(t *testing.T) {
	db, cl := openSim(t, "")
	ctx := rwpool.WithSession(context.Background())
	if rwpool.WithSession(ctx) != ctx {
		t.Error("WithSession on a session context made a new session")
	}
	if r := simRead(t, db, ctx); r.Role != "replica" {
		t.Errorf("a session read before any write went to %s", r.Node)
	}
	if _, err := db.ExecContext(ctx, "UPDATE t SET x = 1"); err != nil {
		t.Fatal(err)
	}
	if n := sim.Node(cl + "/p").Count("pg_current_wal_lsn()"); n != 1 {
		t.Errorf("the write's position was read %d times, want once", n)
	}
	r := simRead(t, db, ctx)
	if r.Node != "primary" || !strings.Contains(r.Reason, "no replica has applied") {
		t.Errorf("with no replica caught up the session read went to %s (%s)", r.Node, r.Reason)
	}
	// The first replica asked polls its replay position within
	// causal_wait; the other is asked once.
	if sim.Node(cl+"/r1").Count("pg_last_wal_replay_lsn()") < 1 || sim.Node(cl+"/r2").Count("pg_last_wal_replay_lsn()") < 1 {
		t.Error("not every replica was asked for its replay position")
	}
	if r := simRead(t, db, context.Background()); r.Role != "replica" {
		t.Errorf("a read outside the session went to %s", r.Node)
	}

	sim.Node(cl + "/r2").SetReplayed(0x100) // replica2 has the write, replica1 not
	for range 50 {
		if r := simRead(t, db, ctx); r.Node != "replica2" {
			t.Fatalf("the session read went to %s (%s), want replica2, the only one with the write", r.Node, r.Reason)
		}
	}
	// replica2's position is known (an earlier read's check found it
	// there), and its endpoint leads to one server: it is not asked again
	// (TestBalancingReplicaSessionReadIsChecked: on an endpoint not known
	// so, it is asked on the connection that serves each read).
	asked := sim.Node(cl + "/r2").Count("pg_last_wal_replay_lsn()")
	simRead(t, db, ctx)
	if got := sim.Node(cl + "/r2").Count("pg_last_wal_replay_lsn()"); got != asked {
		t.Errorf("replica2 asked %d times for one read, want none: its position is known", got-asked)
	}

	// Another session, another write: replica2 is behind that one.
	other := rwpool.WithSession(context.Background())
	db.ExecContext(other, "UPDATE t SET x = 2")
	if r := simRead(t, db, other); r.Node != "primary" {
		t.Errorf("a read after a newer write went to %s", r.Node)
	}
	if r := simRead(t, db, ctx); r.Node != "replica2" {
		t.Errorf("the first session, whose write replica2 has, read from %s", r.Node)
	}
}

// TestSessionIgnoresFallbackError: fallback=error keeps ordinary reads off
// the primary, but a session read whose write no replica has applied goes
// there: the primary is the only node with the data.
func TestSessionIgnoresFallbackError(t *testing.T) {
	db, _ := openSim(t, "fallback=error")
	ctx := rwpool.WithSession(context.Background())
	db.ExecContext(ctx, "UPDATE t SET x = 1")
	if r := simRead(t, db, ctx); r.Node != "primary" {
		t.Errorf("session read went to %s (%s)", r.Node, r.Reason)
	}
}

// TestSessionPendingWrite: a write run as a query (its rows hold the
// connection) has its position read at the session's next read.
func TestSessionPendingWrite(t *testing.T) {
	db, cl := openSim(t, "")
	ctx := rwpool.WithSession(context.Background())
	var node string
	if err := db.QueryRowContext(ctx, "INSERT INTO t VALUES (1) RETURNING id").Scan(&node); err != nil {
		t.Fatal(err)
	}
	sim.Node(cl + "/r1").SetReplayed(0x100)
	sim.Node(cl + "/r2").SetReplayed(0x100)
	if r := simRead(t, db, ctx); r.Role != "replica" {
		t.Errorf("read after a caught-up write went to %s (%s)", r.Node, r.Reason)
	}
	if n := sim.Node(cl + "/p").Count("pg_current_wal_lsn()"); n != 1 {
		t.Errorf("primary position read %d times, want once (at the read)", n)
	}
	db.QueryRowContext(ctx, "INSERT INTO t VALUES (2) RETURNING id").Scan(&node)
	if r := simRead(t, db, ctx); r.Node != "primary" {
		t.Errorf("read after a write no replica has went to %s", r.Node)
	}
}

// TestSessionWindow: with read_your_writes, a session reads from the
// primary after a write and no position is ever read.
func TestSessionWindow(t *testing.T) {
	db, cl := openSim(t, "read_your_writes=1h")
	ctx := rwpool.WithSession(context.Background())
	db.ExecContext(ctx, "UPDATE t SET x = 1")
	if r := simRead(t, db, ctx); r.Node != "primary" || !strings.Contains(r.Reason, "read_your_writes") {
		t.Errorf("read went to %s (%s)", r.Node, r.Reason)
	}
	if n := sim.Node(cl+"/p").Count("pg_current_wal_lsn()") + sim.Node(cl+"/r1").Count("replay") + sim.Node(cl+"/r2").Count("replay"); n != 0 {
		t.Errorf("%d position queries in window mode", n)
	}
}
