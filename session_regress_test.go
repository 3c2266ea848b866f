package rwpool_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
)

// The session's regression tests (issue #21): the failures a review
// found, each reproduced here before it was fixed. They run over the sim
// driver (replsim_test.go's openSim): replicas have replayed nothing
// unless a test says otherwise.

// Finding: a position read that timed out (probe_timeout) under a context
// with no deadline was settled with that context, whose Err is nil, and
// counted as a success: the zero position resolved the pending write, and
// the session's reads went to replicas without it.
func TestSessionPositionTimeoutIsNoSuccess(t *testing.T) {
	db, cl := openSim(t, "probe_timeout=50ms")
	p := sim.Node(cl + "/p")
	ctx := rwpool.WithSession(context.Background())
	var id string
	if err := db.QueryRowContext(ctx, "INSERT INTO t VALUES (1) RETURNING id").Scan(&id); err != nil {
		t.Fatal(err)
	}
	// Its position is read at the next read, and the primary's position
	// queries hang for now.
	p.SetHangPositions(true)
	t.Cleanup(func() { p.SetHangPositions(false) }) // before the db closes
	if r := simRead(t, db, ctx); r.Node != "primary" {
		t.Errorf("with the write's position unknown the session read went to %s (%s)", r.Node, r.Reason)
	}
	p.SetHangPositions(false)
	if r := simRead(t, db, ctx); r.Node != "primary" {
		t.Errorf("a later read went to %s (%s), which has replayed nothing", r.Node, r.Reason)
	}
}

// Finding: a transaction sent as SQL on a session's *sql.Conn (BEGIN …
// COMMIT, or MySQL's SET autocommit=0 … COMMIT) had its write's position
// read before the COMMIT, and the COMMIT recorded nothing: a replica that
// replayed the write but not its commit served the session.
func TestSessionSQLTransactionRecordsAtCommit(t *testing.T) {
	for _, tc := range []struct {
		name          string
		begin, commit string
	}{
		{"BEGIN", "BEGIN", "COMMIT"},
		{"START TRANSACTION", " /* c */ start transaction read write", "END"},
		{"autocommit", "SET autocommit = 0", "COMMIT"},
		{"autocommit=1", "SET @@autocommit=OFF", "SET autocommit=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, cl := openSim(t, "")
			sim.Node(cl + "/p").SetCommitRecords(true)
			ctx := rwpool.WithSession(context.Background())
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, q := range []string{tc.begin, "INSERT INTO t VALUES (1)"} {
				if _, err := c.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			// The COMMIT is sent without the session: the lease knows
			// whose writes it commits.
			if _, err := c.ExecContext(context.Background(), tc.commit); err != nil {
				t.Fatal(err)
			}
			// The INSERT is at 0/100, its commit at 0/200.
			sim.Node(cl + "/r1").SetReplayed(0x100)
			sim.Node(cl + "/r2").SetReplayed(0x100)
			if r := simRead(t, db, ctx); r.Node != "primary" {
				t.Errorf("the session read went to %s (%s), which has the INSERT but not its COMMIT", r.Node, r.Reason)
			}
			sim.Node(cl + "/r2").SetReplayed(0x200)
			if r := simRead(t, db, ctx); r.Node != "replica2" {
				t.Errorf("the session read went to %s (%s), want replica2, which has the COMMIT", r.Node, r.Reason)
			}
		})
	}
}

// A transaction sent as SQL and rolled back records nothing; one still
// open when the *sql.Conn goes back (rolled back, or committed implicitly
// by DDL on MySQL) leaves its writes pending: their position is read at
// the session's next read.
func TestSessionSQLTransactionEnds(t *testing.T) {
	db, cl := openSim(t, "")
	p := sim.Node(cl + "/p")
	p.SetCommitRecords(true)
	ctx := rwpool.WithSession(context.Background())
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"BEGIN", "INSERT INTO t VALUES (1)", "ROLLBACK"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if r := simRead(t, db, ctx); r.Role != "replica" {
		t.Errorf("after a rolled-back transaction the session read went to %s (%s)", r.Node, r.Reason)
	}
	for _, q := range []string{"BEGIN", "INSERT INTO t VALUES (1)"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.Count("pg_current_wal_lsn()"); got != 0 {
		t.Errorf("%d position reads before any COMMIT", got)
	}
	c.Close()
	if r := simRead(t, db, ctx); r.Node != "primary" {
		t.Errorf("after a transaction left open the session read went to %s (%s)", r.Node, r.Reason)
	}
	if got := p.Count("pg_current_wal_lsn()"); got != 1 {
		t.Errorf("%d position reads, want 1 (at the read)", got)
	}
}

// Finding: a session's write in a transaction begun without the session
// was never recorded.
func TestSessionWriteInTxBegunWithoutSession(t *testing.T) {
	db, cl := openSim(t, "")
	sim.Node(cl + "/p").SetCommitRecords(true)
	ctx := rwpool.WithSession(context.Background())
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	sim.Node(cl + "/r1").SetReplayed(0x100) // the INSERT, not its commit
	if r := simRead(t, db, ctx); r.Node != "primary" {
		t.Errorf("the session read went to %s (%s), which has not the commit", r.Node, r.Reason)
	}
}

// Finding: a read-only transaction's Commit on a *sql.Conn gave the
// replica connection back to its pool while rows opened on the Conn still
// read from it.
func TestReplicaTxCommitKeepsRowsConnection(t *testing.T) {
	for _, end := range []string{"Commit", "Rollback"} {
		t.Run(end, func(t *testing.T) {
			db, _ := openSim(t, "readonly_tx=replica")
			ctx := context.Background()
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var rt rwpool.Route
			tx, err := c.BeginTx(rwpool.WithRoute(ctx, &rt), &sql.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if rt.Role != "replica" {
				t.Fatalf("read-only transaction on %s", rt.Node)
			}
			rows, err := c.QueryContext(ctx, "SELECT node")
			if err != nil {
				t.Fatal(err)
			}
			if end == "Commit" {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			if in, idle := replicaConns(t, db); in != 1 || idle != 0 {
				t.Errorf("after %s with rows open: %d replica connections in use, %d idle; want 1, 0", end, in, idle)
			}
			// Meanwhile the Conn's statements no longer run on the
			// transaction's replica connection.
			if _, err := c.ExecContext(rwpool.WithRoute(ctx, &rt), "INSERT INTO t VALUES (1)"); err != nil || rt.Node != "primary" {
				t.Errorf("a write after the transaction: %v on %s", err, rt.Node)
			}
			for rows.Next() {
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if in, idle := replicaConns(t, db); in != 0 || idle != 1 {
				t.Errorf("after the rows closed: %d replica connections in use, %d idle; want 0, 1", in, idle)
			}
		})
	}
}

// replicaConns returns how many replica connections are in use and idle.
func replicaConns(t *testing.T, db *sql.DB) (inUse, idle int) {
	t.Helper()
	s, err := rwpool.Stats(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range s.Nodes {
		if n.Role == "replica" {
			inUse += n.InUse
			idle += n.Idle
		}
	}
	return inUse, idle
}

// Suspected: asking a replica whether it has a session's write ran under
// the caller's context alone: a replica whose answer hangs hung the
// session's read with context.Background, or for the whole of a long
// deadline. It is bounded by probe_timeout, and the replica is passed
// over.
func TestSessionReplicaCheckBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"Background", func(ctx context.Context) (context.Context, context.CancelFunc) { return ctx, func() {} }},
		{"long deadline", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, time.Minute)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, cl := openSim(t, "probe_timeout=50ms")
			ctx := rwpool.WithSession(context.Background())
			if _, err := db.ExecContext(ctx, "UPDATE t SET x = 1"); err != nil {
				t.Fatal(err)
			}
			for _, r := range []string{"/r1", "/r2"} {
				n := sim.Node(cl + r)
				n.SetHangPositions(true)
				t.Cleanup(func() { n.SetHangPositions(false) })
			}
			rctx, cancel := tc.ctx(ctx)
			defer cancel()
			done := make(chan rwpool.Route, 1)
			go func() {
				var r rwpool.Route
				var node string
				db.QueryRowContext(rwpool.WithRoute(rctx, &r), "SELECT node").Scan(&node)
				done <- r
			}()
			select {
			case r := <-done:
				if r.Node != "primary" {
					t.Errorf("the session read went to %s (%s)", r.Node, r.Reason)
				}
			case <-time.After(5 * time.Second):
				t.Error("the session read hangs on replicas whose position queries hang")
				for _, r := range []string{"/r1", "/r2"} {
					sim.Node(cl + r).SetHangPositions(false)
				}
				<-done
			}
		})
	}
}

// Suspected: a session read while the rows of an INSERT … RETURNING are
// still open resolved the pending write with a position read before the
// write committed (a statement commits after its last row): later reads
// went to replicas without its commit.
func TestSessionReadWhileReturningRowsOpen(t *testing.T) {
	db, cl := openSim(t, "")
	sim.Node(cl + "/p").SetCommitRecords(true)
	ctx := rwpool.WithSession(context.Background())
	rows, err := db.QueryContext(ctx, "INSERT INTO t VALUES (1) RETURNING id")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() { // not to the end: database/sql would close the rows
		t.Fatal(rows.Err())
	}
	simRead(t, db, ctx) // the INSERT is at 0/100, its commit not yet
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	// Now its commit is at 0/200.
	sim.Node(cl + "/r1").SetReplayed(0x100)
	sim.Node(cl + "/r2").SetReplayed(0x100)
	if r := simRead(t, db, ctx); r.Node != "primary" {
		t.Errorf("after the rows closed the session read went to %s (%s), which has not the commit", r.Node, r.Reason)
	}
}
