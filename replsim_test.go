package rwpool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/rwpool/rwpool"
)

// simDriver is a fake PostgreSQL cluster for fast tests of session routing.
// Node DSNs are "<cluster>/p" for the primary and "<cluster>/rN" for
// replicas. Every write on a primary moves its WAL position by 0x100; a
// replica's replay position is whatever the test sets. Reads answer with
// the node's DSN. (Its name contains "postgres", so rwpool treats it as
// PostgreSQL.)
type simDriver struct {
	mu      sync.Mutex
	lsn     map[string]uint64 // primary DSN -> current WAL position
	applied map[string]uint64 // replica DSN -> replay position
	ran     map[string][]string
}

var sim = &simDriver{lsn: map[string]uint64{}, applied: map[string]uint64{}, ran: map[string][]string{}}

func init() { sql.Register("rwpool-test-postgres-sim", sim) }

func (d *simDriver) Open(name string) (driver.Conn, error) { return &simConn{d: d, name: name}, nil }

func (d *simDriver) setApplied(dsn string, lsn uint64) {
	d.mu.Lock()
	d.applied[dsn] = lsn
	d.mu.Unlock()
}

// count returns how many statements containing sub node ran.
func (d *simDriver) count(node, sub string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, q := range d.ran[node] {
		if strings.Contains(q, sub) {
			n++
		}
	}
	return n
}

type simConn struct {
	d    *simDriver
	name string
}

func (c *simConn) primary() bool                       { return strings.HasSuffix(c.name, "/p") }
func (c *simConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (c *simConn) Begin() (driver.Tx, error)           { return simTx{}, nil }
func (c *simConn) Close() error                        { return nil }

func lsnText(n uint64) string { return fmt.Sprintf("%X/%X", n>>32, uint32(n)) }

func (c *simConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ran[c.name] = append(d.ran[c.name], q)
	switch {
	case strings.Contains(q, "pg_is_in_recovery()"): // the status query
		if c.primary() {
			return &simRows{cols: []string{"ro", "pos", "age"}, row: []driver.Value{false, lsnText(d.lsn[c.name]), -1.0}}, nil
		}
		return &simRows{cols: []string{"ro", "pos", "age"}, row: []driver.Value{true, lsnText(d.applied[c.name]), -1.0}}, nil
	case strings.Contains(q, "pg_current_wal_lsn()"):
		return &simRows{cols: []string{"lsn"}, row: []driver.Value{lsnText(d.lsn[c.name])}}, nil
	case strings.Contains(q, "pg_last_wal_replay_lsn()"):
		return &simRows{cols: []string{"lsn"}, row: []driver.Value{lsnText(d.applied[c.name])}}, nil
	case strings.Contains(q, "RETURNING"):
		d.lsn[c.name] += 0x100
	}
	return &simRows{cols: []string{"node"}, row: []driver.Value{c.name}}, nil
}

func (c *simConn) ExecContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Result, error) {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ran[c.name] = append(d.ran[c.name], q)
	d.lsn[c.name] += 0x100
	return driver.RowsAffected(1), nil
}

type simTx struct{}

func (simTx) Commit() error   { return nil }
func (simTx) Rollback() error { return nil }

type simRows struct {
	cols []string
	row  []driver.Value
	done bool
}

func (r *simRows) Columns() []string { return r.cols }
func (r *simRows) Close() error      { return nil }
func (r *simRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	copy(dest, r.row)
	return nil
}

// openSim opens rwpool over a fresh simulated cluster with two replicas
// and no health probes (the test decides what each node has applied).
func openSim(t *testing.T, extra string) (*sql.DB, string) {
	t.Helper()
	name := t.Name()
	db, err := sql.Open("rwpool", fmt.Sprintf("driver=rwpool-test-postgres-sim;primary=%[1]s/p;replica=%[1]s/r1;replica=%[1]s/r2;check_interval=1h;%s", name, extra))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
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
	if n := sim.count(cl+"/p", "pg_current_wal_lsn()"); n != 1 {
		t.Errorf("the write's position was read %d times, want once", n)
	}
	r := simRead(t, db, ctx)
	if r.Node != "primary" || !strings.Contains(r.Reason, "no replica has applied") {
		t.Errorf("with no replica caught up the session read went to %s (%s)", r.Node, r.Reason)
	}
	if sim.count(cl+"/r1", "pg_last_wal_replay_lsn()") != 1 || sim.count(cl+"/r2", "pg_last_wal_replay_lsn()") != 1 {
		t.Error("not every replica was asked for its replay position")
	}
	if r := simRead(t, db, context.Background()); r.Role != "replica" {
		t.Errorf("a read outside the session went to %s", r.Node)
	}

	sim.setApplied(cl+"/r2", 0x100) // replica2 has the write, replica1 not
	for range 50 {
		if r := simRead(t, db, ctx); r.Node != "replica2" {
			t.Fatalf("the session read went to %s (%s), want replica2, the only one with the write", r.Node, r.Reason)
		}
	}
	// replica2's position is now known: it is not asked again.
	asked := sim.count(cl+"/r2", "pg_last_wal_replay_lsn()")
	simRead(t, db, ctx)
	if got := sim.count(cl+"/r2", "pg_last_wal_replay_lsn()"); got != asked {
		t.Errorf("replica2 asked again (%d -> %d) though known to have the write", asked, got)
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
	sim.setApplied(cl+"/r1", 0x100)
	sim.setApplied(cl+"/r2", 0x100)
	if r := simRead(t, db, ctx); r.Role != "replica" {
		t.Errorf("read after a caught-up write went to %s (%s)", r.Node, r.Reason)
	}
	if n := sim.count(cl+"/p", "pg_current_wal_lsn()"); n != 1 {
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
	if n := sim.count(cl+"/p", "pg_current_wal_lsn()") + sim.count(cl+"/r1", "replay") + sim.count(cl+"/r2", "replay"); n != 0 {
		t.Errorf("%d position queries in window mode", n)
	}
}
