package rwpool_test

// Consistency on the real clusters: read-your-writes sessions against a
// replica whose replay is deliberately delayed, max_lag exclusion and
// return, and role checks (a promoted replica, a demoted primary).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
)

// replicaDelay is how late the delayed replica applies what it receives:
// far above the time a write and the read after it take, so that a read
// on it is observably stale.
const replicaDelay = "2"

// delayReplica makes the replica at addr apply replication late for the
// rest of the test; the cleanup ends the delay and waits until it caught
// up, so the next test starts from a synchronised cluster.
func (cl *cluster) delayReplica(t *testing.T, addr, seconds string) {
	t.Helper()
	t.Cleanup(func() {
		if out, err := clusterScript("delay-node", portOf(addr), "0"); err != nil {
			t.Errorf("cleanup: delay-node %s 0: %v\n%s", addr, err, out)
		}
		if out, err := clusterScript("wait-sync"); err != nil {
			t.Errorf("cleanup: wait-sync: %v\n%s", err, out)
		}
	})
	clusterOp(t, "delay-node", portOf(addr), seconds)
}

// clusterOp runs one cluster.sh command or fails the test.
func clusterOp(t *testing.T, args ...string) {
	t.Helper()
	if out, err := clusterScript(args...); err != nil {
		t.Fatalf("cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// openWith opens rwpool over the primary and the given replicas only.
func (cl *cluster) openWith(t *testing.T, extra string, replicas ...string) *sql.DB {
	t.Helper()
	db, err := sql.Open("rwpool", cl.DSNOver(cl.Primary, replicas, extra))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// ph returns the cluster's n-th placeholder.
func (cl *cluster) ph(n int) string {
	if cl.IsPostgres() {
		return fmt.Sprintf("$%d", n)
	}
	return "?"
}

// counterTable creates table (id, v) with one row (1, 0) on the primary
// and waits until every replica has it.
func (cl *cluster) counterTable(t *testing.T, db *sql.DB, table string) {
	t.Helper()
	ctx := rwpool.WithPrimary(context.Background())
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + table,
		"CREATE TABLE " + table + " (id INT PRIMARY KEY, v INT NOT NULL)",
		"INSERT INTO " + table + " VALUES (1, 0)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table) })
	cl.waitReplicas(t, "SELECT count(*) FROM "+table, "1")
}

// TestIntegrationReadYourWrites: with one replica applying everything two
// seconds late, a write followed at once by a read in a session always
// sees the write, while the same sequence without a session reads stale
// data from that replica (so the test can fail). A session's reads before
// its first write, and its reads once the replica has caught up, go to
// the replica.
func TestIntegrationReadYourWrites(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		delayed := cl.Replicas[0]
		db := cl.openWith(t, "check_interval=200ms", delayed)
		table := "ryw_" + cl.Name
		cl.counterTable(t, db, table)
		cl.delayReplica(t, delayed, replicaDelay)
		update := fmt.Sprintf("UPDATE %s SET v = %s WHERE id = 1", table, cl.ph(1))
		sel := "SELECT v FROM " + table + " WHERE id = 1"

		const iterations = 100
		served := map[string]int{}
		start := time.Now()
		for i := 1; i <= iterations; i++ {
			ctx := rwpool.WithSession(context.Background())
			var r rwpool.Route
			var v int
			if i == 1 {
				// Before any write, a session reads from the replica.
				if err := db.QueryRowContext(rwpool.WithRoute(ctx, &r), sel).Scan(&v); err != nil {
					t.Fatal(err)
				}
				if r.Node != "replica1" {
					t.Errorf("a session's read before any write went to %s (%s), want replica1", r.Node, r.Reason)
				}
			}
			if _, err := db.ExecContext(ctx, update, i); err != nil {
				t.Fatalf("iteration %d: %v", i, err)
			}
			if err := db.QueryRowContext(rwpool.WithRoute(ctx, &r), sel).Scan(&v); err != nil {
				t.Fatalf("iteration %d: %v", i, err)
			}
			if v != i {
				t.Errorf("iteration %d: the session read v = %d after writing %d (served by %s: %s)", i, v, i, r.Node, r.Reason)
			}
			served[r.Node+": "+r.Reason]++
		}
		t.Logf("%s: %d session write+read pairs in %s, reads served by %v", cl.Name, iterations,
			time.Since(start).Round(time.Millisecond), served)

		// Without a session the same sequence reads the delayed replica.
		stale := 0
		const plain = 20
		for i := 1; i <= plain; i++ {
			want := 1000 + i
			if _, err := db.Exec(update, want); err != nil {
				t.Fatal(err)
			}
			var r rwpool.Route
			var v int
			if err := db.QueryRowContext(rwpool.WithRoute(context.Background(), &r), sel).Scan(&v); err != nil {
				t.Fatal(err)
			}
			if r.Node != "replica1" {
				t.Errorf("a read outside any session went to %s (%s), want replica1", r.Node, r.Reason)
			}
			if v != want {
				stale++
			}
		}
		if stale == 0 {
			t.Fatalf("none of %d reads outside a session was stale on a replica %ss behind: the test cannot tell sessions work", plain, replicaDelay)
		}
		t.Logf("%s: %d of %d reads outside a session were stale", cl.Name, stale, plain)

		// Once the replica has the session's write, the session reads there.
		ctx := rwpool.WithSession(context.Background())
		if _, err := db.ExecContext(ctx, update, 7); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "a session read served by the replica once it applied the write", func() bool {
			var r rwpool.Route
			var v int
			err := db.QueryRowContext(rwpool.WithRoute(ctx, &r), sel).Scan(&v)
			if err != nil || v != 7 {
				t.Fatalf("session read: v = %d, %v; want 7", v, err)
			}
			return r.Node == "replica1"
		})
	})
}

// TestIntegrationReadYourWritesInTransaction: a write committed in a
// transaction of the session is seen by the session's next read.
func TestIntegrationReadYourWritesInTransaction(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		delayed := cl.Replicas[0]
		db := cl.openWith(t, "", delayed)
		table := "rywtx_" + cl.Name
		cl.counterTable(t, db, table)
		cl.delayReplica(t, delayed, replicaDelay)
		for i := 1; i <= 20; i++ {
			ctx := rwpool.WithSession(context.Background())
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET v = %s WHERE id = 1", table, cl.ph(1)), i); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			var v int
			if err := db.QueryRowContext(ctx, "SELECT v FROM "+table+" WHERE id = 1").Scan(&v); err != nil {
				t.Fatal(err)
			}
			if v != i {
				t.Fatalf("iteration %d: read %d after committing %d in the session", i, v, i)
			}
		}
	})
}

// TestIntegrationReadYourWritesWindow: with read_your_writes=300ms, a
// session reads from the primary for 300 ms after a write, then from the
// replica again; no position is read.
func TestIntegrationReadYourWritesWindow(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		delayed := cl.Replicas[0]
		db := cl.openWith(t, "read_your_writes=300ms", delayed)
		table := "rywwin_" + cl.Name
		cl.counterTable(t, db, table)
		cl.delayReplica(t, delayed, replicaDelay)
		ctx := rwpool.WithSession(context.Background())
		if _, err := db.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET v = 5 WHERE id = 1", table)); err != nil {
			t.Fatal(err)
		}
		wrote := time.Now()
		var r rwpool.Route
		var v int
		if err := db.QueryRowContext(rwpool.WithRoute(ctx, &r), "SELECT v FROM "+table+" WHERE id = 1").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != 5 || r.Node != "primary" || !strings.Contains(r.Reason, "read_your_writes") {
			t.Fatalf("read right after the write: v = %d from %s (%s); want 5 from the primary", v, r.Node, r.Reason)
		}
		eventually(t, 5*time.Second, "session reads back on the replica after the window", func() bool {
			db.QueryRowContext(rwpool.WithRoute(ctx, &r), "SELECT v FROM "+table+" WHERE id = 1").Scan(&v)
			return r.Node == "replica1"
		})
		if d := time.Since(wrote); d < 300*time.Millisecond {
			t.Errorf("the session read from the replica %s after its write, inside the 300ms window", d)
		}
	})
}

// TestIntegrationMaxLag: a replica delayed by 3 s under a steady write load
// is measured as lagging, excluded from reads under max_lag=1s (with an
// event), and returns once the delay ends and it has caught up; the other
// replica stays in rotation throughout.
func TestIntegrationMaxLag(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "max_lag=1s;check_interval=200ms")
		events := collectEvents(t, db)
		table := "lag_" + cl.Name
		cl.counterTable(t, db, table)

		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // the steady writes that make a delayed replica fall behind
			defer wg.Done()
			for i := 1; ctx.Err() == nil; i++ {
				db.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET v = %s WHERE id = 1", table, cl.ph(1)), i)
				time.Sleep(20 * time.Millisecond)
			}
		}()
		defer func() { stop(); wg.Wait() }()

		eventually(t, 10*time.Second, "a lag measured for both replicas", func() bool {
			return nodeStats(t, db, "replica1").LagKnown && nodeStats(t, db, "replica2").LagKnown
		})
		cl.delayReplica(t, cl.Replicas[0], "3")
		took := eventually(t, 15*time.Second, "replica1 lagging", func() bool {
			return nodeStats(t, db, "replica1").State == rwpool.Lagging
		})
		s1, s2 := nodeStats(t, db, "replica1"), nodeStats(t, db, "replica2")
		t.Logf("%s: replica1 out of reads %s after the delay began, lag %s; replica2 lag %s",
			cl.Name, took.Round(time.Millisecond), s1.Lag.Round(time.Millisecond), s2.Lag.Round(time.Millisecond))
		if s1.Available || s1.Lag <= time.Second {
			t.Errorf("replica1 lagging but Available %v, Lag %s", s1.Available, s1.Lag)
		}
		if s2.State != rwpool.Available || s2.Lag >= time.Second {
			t.Errorf("replica2: state %s, lag %s; want available, under 1s", s2.State, s2.Lag)
		}
		for range 50 {
			var r rwpool.Route
			var v int
			if err := db.QueryRowContext(rwpool.WithRoute(context.Background(), &r), "SELECT v FROM "+table+" WHERE id = 1").Scan(&v); err != nil {
				t.Fatal(err)
			}
			if r.Node == "replica1" {
				t.Fatalf("a read went to the lagging replica1")
			}
		}

		clusterOp(t, "delay-node", portOf(cl.Replicas[0]), "0")
		took = eventually(t, 15*time.Second, "replica1 back in reads", func() bool {
			return nodeStats(t, db, "replica1").State == rwpool.Available
		})
		t.Logf("%s: replica1 back %s after the delay ended", cl.Name, took.Round(time.Millisecond))
		evs := events.forNode("replica1")
		if len(evs) != 2 || evs[0].To != rwpool.Lagging || evs[1].From != rwpool.Lagging || evs[1].To != rwpool.Available ||
			evs[0].Cause == nil || !strings.Contains(evs[0].Cause.Error(), "max_lag") {
			t.Errorf("replica1 events: %+v; want available->lagging (cause naming max_lag), lagging->available", evs)
		}
		if others := events.others("replica1"); len(others) != 0 {
			t.Errorf("events of other nodes: %+v", others)
		}
	})
}

// TestIntegrationRoleChecks: a replica promoted to a writable server and a
// primary made read-only are flagged in Stats and by events, and no write
// is sent to the read-only primary.
func TestIntegrationRoleChecks(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "check_interval=200ms")
		events := collectEvents(t, db)
		table := "role_" + cl.Name
		cl.counterTable(t, db, table)
		eventually(t, 10*time.Second, "every node's role read", func() bool {
			return nodeStats(t, db, "primary").Reports == "writable" &&
				nodeStats(t, db, "replica1").Reports == "read-only" && nodeStats(t, db, "replica2").Reports == "read-only"
		})

		promoted := portOf(cl.Replicas[1])
		t.Cleanup(func() {
			if out, err := clusterScript("rejoin-node", promoted); err != nil {
				t.Errorf("cleanup: rejoin-node %s: %v\n%s", promoted, err, out)
			}
		})
		clusterOp(t, "promote-node", promoted)
		eventually(t, 10*time.Second, "the promoted replica2 flagged", func() bool {
			s := nodeStats(t, db, "replica2")
			return s.RoleMismatch() && s.Reports == "writable"
		})
		clusterOp(t, "rejoin-node", promoted)
		eventually(t, 30*time.Second, "replica2 a replica again", func() bool {
			return !nodeStats(t, db, "replica2").RoleMismatch()
		})
		evs := events.forNode("replica2")
		var roles []rwpool.Event
		for _, e := range evs {
			if e.Kind == rwpool.RoleChanged {
				roles = append(roles, e)
			}
		}
		if len(roles) != 2 || roles[0].ReadOnly || !errors.Is(roles[0].Cause, rwpool.ErrRoleMismatch) ||
			!roles[1].ReadOnly || roles[1].Cause != nil {
			t.Errorf("replica2 role events: %+v; want promoted (writable, ErrRoleMismatch), then read-only again", roles)
		}

		// Demote the primary: writes are refused by rwpool, not sent.
		primary := portOf(cl.Primary)
		t.Cleanup(func() {
			if out, err := clusterScript("set-read-only", primary, "off"); err != nil {
				t.Errorf("cleanup: set-read-only %s off: %v\n%s", primary, err, out)
			}
		})
		clusterOp(t, "set-read-only", primary, "on")
		eventually(t, 10*time.Second, "the read-only primary flagged", func() bool {
			return nodeStats(t, db, "primary").RoleMismatch()
		})
		served := nodeStats(t, db, "primary").Served
		start := time.Now()
		_, err := db.Exec(fmt.Sprintf("UPDATE %s SET v = 9 WHERE id = 1", table))
		if !errors.Is(err, rwpool.ErrReadOnly) || !errors.Is(err, rwpool.ErrUnavailable) {
			t.Fatalf("write to a read-only primary: %v; want ErrReadOnly", err)
		}
		t.Logf("%s: write refused in %s: %v", cl.Name, time.Since(start).Round(time.Microsecond), err)
		if got := nodeStats(t, db, "primary").Served; got != served {
			t.Errorf("the refused write reached the primary (served %d -> %d)", served, got)
		}
		var v int
		if err := db.QueryRowContext(rwpool.WithPrimary(context.Background()), "SELECT v FROM "+table+" WHERE id = 1").Scan(&v); err != nil || v != 0 {
			t.Errorf("read on the read-only primary: v = %d, %v; want 0", v, err)
		}
		clusterOp(t, "set-read-only", primary, "off")
		eventually(t, 10*time.Second, "writes accepted again", func() bool {
			_, err := db.Exec(fmt.Sprintf("UPDATE %s SET v = 9 WHERE id = 1", table))
			return err == nil
		})
	})
}
