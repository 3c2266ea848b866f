package rwpool_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// A primary that hangs is tripped by a statement's deadline and the probe
// that confirms it (which times out too). The writes refused afterwards
// must not each nudge another probe: every one would stay stuck in the
// driver (ctl's SetHang ignores contexts, as lib/pq does) until the
// server answers. At most one probe may be stuck at a time.
func TestHungPrimaryRefusedWritesPileUpNoProbes(t *testing.T) {
	cc := newCtlCluster(t, 1, "check_interval=1h") // no probe but the ones statements ask for
	if _, err := cc.db.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	cc.primary.SetHang(true)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := cc.db.ExecContext(ctx, "INSERT INTO t VALUES (2)")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write on the hung primary: %v, want context.DeadlineExceeded", err)
	}
	waitFor(t, "hung primary tripped", func() bool { return cc.stats(t, "primary").State == rwpool.Unavailable })
	most := 0
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		if _, err := cc.db.Exec("INSERT INTO t VALUES (3)"); !errors.Is(err, rwpool.ErrUnavailable) {
			t.Fatalf("write on the tripped primary: %v, want ErrUnavailable", err)
		}
		most = max(most, cc.primary.Hung("SELECT 1"))
		time.Sleep(10 * time.Millisecond) // a steady trickle of writes, as an application's
	}
	if most > 1 {
		t.Errorf("%d probes stuck on the hung primary at once, want at most 1", most)
	}
}

// failoverSim is a simulated PostgreSQL cluster, as sim, whose nodes also
// run the hook a test sets for them (setHook) before each statement: a
// write refused as read-only, a statement held in the driver, ...
var failoverSim = fakedriver.Register("rwpool-test-postgres-failover", fakedriver.Options{
	Replication: true, Record: true,
	Fail: func(dsn, query string) error {
		if h, ok := failoverHooks.Load(dsn); ok {
			return h.(func(string) error)(query)
		}
		return nil
	},
})

// failoverHooks holds the hooks of failoverSim's nodes, by DSN.
var failoverHooks sync.Map

// setHook makes failoverSim's node dsn run hook before each statement,
// until the test ends.
func setHook(t *testing.T, dsn string, hook func(query string) error) {
	failoverHooks.Store(dsn, hook)
	t.Cleanup(func() { failoverHooks.Delete(dsn) })
}

// openFailover opens a primary and two replicas on failoverSim.
func openFailover(t *testing.T, opts string) *followCluster {
	t.Helper()
	return openSimCluster(t, failoverSim, "rwpool-test-postgres-failover", opts)
}

// errReadOnly is PostgreSQL's refusal of a write on a read-only server.
var errReadOnly = &fakedriver.PostgresError{Code: "25006", Message: "cannot execute INSERT in a read-only transaction"}

func isInsert(query string) bool { return strings.HasPrefix(query, "INSERT") }

// A write that the primary answers read-only while the promotion of
// another node is followed (by the health checker, or by the fence's
// fresh probe of the old primary) applied nothing: with failover_wait it
// runs again on the new primary instead of failing with the raw 25006.
func TestFailoverWaitRetriesAfterFollowedPromotion(t *testing.T) {
	for _, by := range []string{"health checker", "fence"} {
		t.Run(by, func(t *testing.T) {
			fc := openFailover(t, "follow_promotion=on;failover_wait=3s;check_interval=20ms;probe_timeout=1s")
			if node, err := fc.write(); err != nil || node != "primary" {
				t.Fatalf("write before the failover: %s, %v", node, err)
			}
			if by == "fence" {
				// replica1 turns writable first: only flagged while the
				// primary is writable, so the old primary's first
				// read-only status (the fence's fresh probe, say)
				// promotes it.
				fc.r1.SetStatus(fakedriver.Status{LSN: "0/1000", ReplayAge: -1})
				waitFor(t, "replica1 flagged as writable", func() bool {
					s, _ := rwpool.Stats(fc.db)
					return s.Nodes[1].RoleMismatch()
				})
			}
			var once sync.Once
			setHook(t, t.Name()+"/p", func(q string) error {
				if !isInsert(q) {
					return nil
				}
				// The failover happens while the write is on its way;
				// the old primary refuses it.
				once.Do(func() {
					fc.p.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1000"})
					fc.r1.SetStatus(fakedriver.Status{LSN: "0/1000", ReplayAge: -1})
					if by == "health checker" {
						waitFor(t, "the promotion of replica1 followed", func() bool {
							s, _ := rwpool.Stats(fc.db)
							return s.Nodes[1].Role == "primary"
						})
					}
				})
				return errReadOnly
			})
			if node, err := fc.write(); err != nil || node != "replica1" {
				t.Fatalf("write during the failover: went to %q, %v; want replica1", node, err)
			}
		})
	}
}

// A primary demoted by a followed promotion that comes back writable
// without ever following the new primary (MariaDB does not persist
// read_only) must not take the writes back when the new primary misses a
// probe: the two would diverge. Once it has been seen read-only, a
// writable answer is a promotion by the failover tooling: followed.
func TestFollowPromotionDemotedPrimaryNotPromotedBack(t *testing.T) {
	fc := openFollow(t)
	fc.p.SetDown(true)
	fc.r1.SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1})
	waitFor(t, "writes to reach the promoted replica1", func() bool {
		node, err := fc.write()
		return err == nil && node == "replica1"
	})
	fc.p.SetStatus(fakedriver.Status{LSN: "0/1800", ReplayAge: -1}) // writable, diverged
	fc.p.SetDown(false)
	waitFor(t, "the old primary back, writable", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[0].Available && s.Nodes[0].RoleMismatch()
	})
	fc.r1.SetDown(true)
	waitFor(t, "the new primary tripped", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[1].State == rwpool.Unavailable
	})
	seen := fc.p.Count("pg_is_in_recovery()")
	waitFor(t, "two more status reads of the old primary", func() bool {
		return fc.p.Count("pg_is_in_recovery()") >= seen+2
	})
	for range 20 {
		node, err := fc.write()
		if err == nil {
			t.Fatalf("a write reached %s while the new primary is down and the old one never followed it", node)
		}
		if !errors.Is(err, rwpool.ErrUnavailable) {
			t.Fatalf("write refused with %v, want ErrUnavailable", err)
		}
	}
	if s, _ := rwpool.Stats(fc.db); s.Nodes[0].Role != "replica" {
		t.Fatalf("the old primary's role is %s, want replica", s.Nodes[0].Role)
	}
	// It is made a standby (read-only), then the failover tooling
	// promotes it: that is followed. (Nothing proves it follows the new
	// primary, which is down and wrote nothing since: it serves no read
	// meanwhile, TestFollowPromotionReplicasRejoinOnceFollowing.)
	fc.p.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2000"})
	seen = fc.p.Count("pg_is_in_recovery()")
	waitFor(t, "a status read of the old primary, read-only", func() bool {
		return fc.p.Count("pg_is_in_recovery()") >= seen+2
	})
	fc.p.SetStatus(fakedriver.Status{LSN: "0/2100", ReplayAge: -1})
	waitFor(t, "writes to reach the re-promoted old primary", func() bool {
		node, err := fc.write()
		return err == nil && node == "primary"
	})
}

// A read-write transaction waits out failover_wait like a write: a
// borrow refused by the primary (a refused dial, before the breaker
// confirms it) waits for the primary instead of failing BeginTx.
func TestFailoverWaitBeginTxRetriesRefusedBorrow(t *testing.T) {
	cc := newCtlCluster(t, 1, "check_interval=1h;failover_wait=3s")
	cc.primary.SetDown(true) // no connection yet: the first borrow dials
	done := make(chan struct{})
	defer func() { <-done }()
	go func() {
		defer close(done)
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if s, err := rwpool.Stats(cc.db); err == nil && s.Nodes[0].State == rwpool.Unavailable {
				break
			}
		}
		cc.primary.SetDown(false)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tx, err := cc.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("BeginTx while the primary fails over: %v", err)
	}
	if _, err := tx.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// The fence's identity queries run within probe_timeout even on a driver
// that ignores contexts (lib/pq; failoverSim's hooks hold the query
// regardless of its context): on the connection that answered read-only,
// and on the freshly dialled one.
func TestFenceIdentityBoundedOnHungNode(t *testing.T) {
	for _, which := range []string{"pinned", "fresh"} {
		t.Run(which, func(t *testing.T) {
			fc := openFailover(t, "check_interval=1h;probe_timeout=100ms")
			release := make(chan struct{})
			t.Cleanup(func() { close(release) }) // before the DB closes
			var identities atomic.Int32
			setHook(t, t.Name()+"/p", func(q string) error {
				switch {
				case isInsert(q):
					return errReadOnly
				case strings.Contains(q, "inet_server_addr()"):
					// The first identity query runs on the pinned
					// connection, the second on the fresh one.
					if k := identities.Add(1); k == 1 && which == "pinned" || k == 2 && which == "fresh" {
						<-release
					}
				}
				return nil
			})
			res := make(chan error, 1)
			go func() {
				_, err := fc.write()
				res <- err
			}()
			select {
			case err := <-res:
				var pe *fakedriver.PostgresError
				if !errors.As(err, &pe) || pe.Code != "25006" {
					t.Fatalf("write refused with %v, want the server's 25006", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("the write still waits for an identity query held by a hung server")
			}
		})
	}
}

// A hung node collects no stuck probes from the health checker: while one
// probe is still stuck in the driver (which ignores its context, as
// lib/pq does), the next check does not send another, and once the node
// resumes it is probed and back within a few check intervals. Found by
// TestSimulation (stuck-probes): one more stuck probe, goroutine and
// connection per check_interval for as long as the node hung.
func TestHungNodeCollectsNoStuckProbes(t *testing.T) {
	cc := newCtlCluster(t, 1, "check_interval=20ms")
	r := cc.replicas[0]
	r.SetHang(true)
	waitFor(t, "hung replica tripped", func() bool { return cc.stats(t, "replica1").State == rwpool.Unavailable })
	most := 0
	for end := time.Now().Add(time.Second); time.Now().Before(end); { // 50 check intervals
		most = max(most, r.Hung(""))
		time.Sleep(5 * time.Millisecond)
	}
	if most > 1 {
		t.Errorf("%d statements of the health checker stuck on the hung replica at once over 50 check intervals, want at most 1", most)
	}
	r.SetHang(false)
	waitFor(t, "resumed replica available again", func() bool { return cc.stats(t, "replica1").State == rwpool.Available })
}
