package rwpool_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// followCluster is a simulated PostgreSQL cluster opened with
// follow_promotion=on, whose nodes report what each test sets.
type followCluster struct {
	db     *sql.DB
	p, r1  *fakedriver.Node
	r2     *fakedriver.Node
	mu     sync.Mutex
	events []rwpool.Event
}

func openFollow(t *testing.T) *followCluster {
	t.Helper()
	return openSimCluster(t, sim, "rwpool-test-postgres-sim", "follow_promotion=on;check_interval=20ms;probe_timeout=1s")
}

// openSimCluster opens a primary and two replicas on drv, registered as
// driverName, with the options opts; their nodes are named after the test
// (t.Name()+"/p", "/r1", "/r2").
func openSimCluster(t *testing.T, drv *fakedriver.Driver, driverName, opts string) *followCluster {
	t.Helper()
	name := t.Name()
	fc := &followCluster{p: drv.Fresh(name + "/p"), r1: drv.Fresh(name + "/r1"), r2: drv.Fresh(name + "/r2")}
	fc.p.SetStatus(fakedriver.Status{LSN: "0/1000", ReplayAge: -1})
	fc.r1.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1000"})
	fc.r2.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1000"})
	db, err := sql.Open("rwpool", fmt.Sprintf("driver=%[2]s;primary=%[1]s/p;replica=%[1]s/r1;replica=%[1]s/r2;%[3]s",
		name, driverName, opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := rwpool.Configure(db, rwpool.WithEventHandler(func(e rwpool.Event) {
		fc.mu.Lock()
		fc.events = append(fc.events, e)
		fc.mu.Unlock()
	})); err != nil {
		t.Fatal(err)
	}
	fc.db = db
	return fc
}

// write runs one write and returns the node that took it.
func (fc *followCluster) write() (string, error) {
	var r rwpool.Route
	_, err := fc.db.ExecContext(rwpool.WithRoute(context.Background(), &r), "INSERT INTO t VALUES (1)")
	return r.Node, err
}

func (fc *followCluster) roleEvents(node string) []rwpool.Event {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	var out []rwpool.Event
	for _, e := range fc.events {
		if e.Kind == rwpool.RoleChanged && e.Node == node {
			out = append(out, e)
		}
	}
	return out
}

// With follow_promotion, a replica that reports itself writable becomes
// the primary once the primary is unavailable; the old primary serves no
// read until it follows the new one.
func TestFollowPromotion(t *testing.T) {
	fc := openFollow(t)
	if node, err := fc.write(); err != nil || node != "primary" {
		t.Fatalf("write before the failover: %s, %v", node, err)
	}
	fc.p.SetDown(true)
	fc.r1.SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1}) // promoted: writable
	waitFor(t, "writes to reach the promoted replica1", func() bool {
		node, err := fc.write()
		return err == nil && node == "replica1"
	})
	s, err := rwpool.Stats(fc.db)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Nodes[1]; n.Role != "primary" || n.RoleSince.IsZero() || n.RoleMismatch() {
		t.Errorf("replica1 after the promotion: role %s since %v, mismatch %v", n.Role, n.RoleSince, n.RoleMismatch())
	}
	if n := s.Nodes[0]; n.Role != "replica" {
		t.Errorf("the old primary's role is %s, want replica", n.Role)
	}
	if ev := fc.roleEvents("replica1"); len(ev) == 0 || ev[len(ev)-1].Role != "primary" {
		t.Errorf("no RoleChanged event made replica1 the primary: %+v", ev)
	}

	// The old primary comes back read-only, behind the promotion point:
	// it serves no read until it has what the new primary had then.
	fc.p.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1800"})
	fc.p.SetDown(false)
	waitFor(t, "the old primary to be available again", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[0].Available
	})
	for range 50 {
		if r := simRead(t, fc.db, context.Background()); r.Node == "primary" {
			s, _ := rwpool.Stats(fc.db)
			fc.mu.Lock()
			t.Fatalf("a read went to the old primary before it followed the new one: %+v\nevents: %+v\n%s", r, fc.events, s)
		}
	}
	// It follows: it applies what the new primary wrote after the
	// promotion (that write, and no less, shows it).
	fc.r1.SetStatus(fakedriver.Status{LSN: "0/2100", ReplayAge: -1})
	fc.p.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2000"})
	for range 50 {
		if r := simRead(t, fc.db, context.Background()); r.Node == "primary" {
			t.Fatalf("a read went to the old primary at the new primary's promotion point, nothing of its since applied: %+v", r)
		}
	}
	fc.p.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2100"})
	waitFor(t, "a read on the old primary, following the new one", func() bool {
		return simRead(t, fc.db, context.Background()).Node == "primary"
	})
	if node, err := fc.write(); err != nil || node != "replica1" {
		t.Errorf("a write after the old primary came back went to %s (%v)", node, err)
	}
}

// After a followed promotion, a replica serves reads only once it is seen
// following the new primary: it has applied a position the new primary
// reached after the replica's first status read since the promotion. One
// that still follows nothing replays nothing more (the stale reads #23
// measured after every Patroni failover), and one the crash left ahead of
// the new primary, on the old history, reads as far in LSNs without
// having anything the new primary writes (#21's abandoned reads).
func TestFollowPromotionReplicasRejoinOnceFollowing(t *testing.T) {
	fc := openFollow(t)
	fc.p.SetDown(true)
	// replica2 replayed further than replica1 got: the crash left it on
	// the old history, ahead of the new primary's position.
	fc.r2.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2500"})
	fc.r1.SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1}) // promoted
	waitFor(t, "writes to reach the promoted replica1", func() bool {
		node, err := fc.write()
		return err == nil && node == "replica1"
	})
	noReadOn := func(what, node string) {
		t.Helper()
		seen := fc.r2.Count("pg_is_in_recovery()")
		waitFor(t, "two status reads of replica2", func() bool { return fc.r2.Count("pg_is_in_recovery()") >= seen+2 })
		for range 50 {
			if r := simRead(t, fc.db, context.Background()); r.Node == node {
				t.Fatalf("%s: a read went to %s: %+v", what, node, r)
			}
		}
	}
	noReadOn("the new primary has written nothing since", "replica2")
	// The new primary writes on, still short of replica2's position:
	// replica2 covers it in LSNs, without any of it.
	fc.r1.SetStatus(fakedriver.Status{LSN: "0/2400", ReplayAge: -1})
	noReadOn("the new primary at 0/2400, replica2 at 0/2500 on the old history", "replica2")
	fc.r1.SetStatus(fakedriver.Status{LSN: "0/2600", ReplayAge: -1})
	noReadOn("the new primary at 0/2600, replica2 still at 0/2500", "replica2")
	if s, _ := rwpool.Stats(fc.db); !s.Nodes[2].Rejoining || s.Nodes[1].Rejoining {
		t.Errorf("Rejoining: replica2 %v (want true), replica1, the primary, %v (want false)", s.Nodes[2].Rejoining, s.Nodes[1].Rejoining)
	}
	// Rewound and streaming from the new primary, it applies its writes.
	fc.r2.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2600"})
	waitFor(t, "a read on replica2, following the new primary", func() bool {
		return simRead(t, fc.db, context.Background()).Node == "replica2"
	})
	if s, _ := rwpool.Stats(fc.db); s.Nodes[2].Rejoining {
		t.Error("replica2 serves reads and is still Rejoining in Stats")
	}
}

// splitBrain makes both replicas report themselves writable (the healthy
// primary keeps the writes), then takes the primary down, and waits for a
// write refused as split brain; it returns that refusal.
func (fc *followCluster) splitBrain(t *testing.T) error {
	t.Helper()
	fc.r1.SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1})
	fc.r2.SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1})
	waitFor(t, "both replicas flagged as writable", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[1].RoleMismatch() && s.Nodes[2].RoleMismatch()
	})
	fc.p.SetDown(true)
	var err error
	waitFor(t, "writes refused as split brain", func() bool {
		_, err = fc.write()
		return errors.Is(err, rwpool.ErrSplitBrain)
	})
	return err
}

// Two nodes that report themselves writable while the primary is down get
// no write at all.
func TestFollowPromotionSplitBrain(t *testing.T) {
	fc := openFollow(t)
	err := fc.splitBrain(t)
	if !errors.Is(err, rwpool.ErrUnavailable) {
		t.Errorf("split-brain refusal %v does not wrap ErrUnavailable", err)
	}
	for range 50 {
		if node, err := fc.write(); err == nil {
			t.Fatalf("a write reached %s during split brain", node)
		}
	}
	for _, n := range []string{"replica1", "replica2"} {
		if ev := fc.roleEvents(n); len(ev) == 0 || !errors.Is(ev[len(ev)-1].Cause, rwpool.ErrSplitBrain) {
			t.Errorf("no split-brain event names %s: %+v", n, ev)
		}
	}
	// One of them steps down: the other becomes the primary.
	fc.r2.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2000"})
	waitFor(t, "writes to reach the one writable replica", func() bool {
		node, err := fc.write()
		return err == nil && node == "replica1"
	})
}

// A primary that was down while two replicas claimed to be the primary,
// none followed, gets no write when it comes back writable while one of
// them still claims: someone was promoted while it was away (a crashed
// MariaDB primary returns writable on its old history). It takes the
// writes again only once no other node claims.
func TestFollowPromotionSplitBrainOutlivesPrimaryReturn(t *testing.T) {
	fc := openFollow(t)
	fc.splitBrain(t)
	fc.p.SetDown(false)
	waitFor(t, "the primary available again", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[0].Available
	})
	for i := range 50 {
		node, err := fc.write()
		if err == nil {
			t.Fatalf("write %d reached %s while replicas still claim to be the primary", i, node)
		}
		if !errors.Is(err, rwpool.ErrSplitBrain) {
			t.Fatalf("write %d: %v, want ErrSplitBrain", i, err)
		}
	}
	if n := fc.p.Count("INSERT INTO t VALUES (1)"); n != 0 {
		t.Errorf("the returned primary ran %d writes", n)
	}
	// The replicas step down (the old primary won after all): it takes
	// the writes again.
	fc.r1.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2000"})
	fc.r2.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2000"})
	waitFor(t, "writes to reach the primary again", func() bool {
		node, err := fc.write()
		return err == nil && node == "primary"
	})
}

// During a split brain, a read with something to prove (a session that
// read or wrote, a resumed token, a staleness bound) fails with
// ErrSplitBrain: its proof is measured against the primary's position,
// and rwpool does not know which claimant the others follow. Plain reads,
// and a new session's first read, still run.
func TestFollowPromotionSplitBrainRefusesSessionReads(t *testing.T) {
	fc := openFollow(t)
	session := rwpool.WithSession(context.Background())
	simRead(t, fc.db, session) // the session has read: its next read proves something
	fc.splitBrain(t)
	var node string
	err := fc.db.QueryRowContext(session, "SELECT node").Scan(&node)
	if !errors.Is(err, rwpool.ErrSplitBrain) || !errors.Is(err, rwpool.ErrUnavailable) {
		t.Fatalf("a session's second read during split brain: %v (served by %q), want ErrSplitBrain and ErrUnavailable", err, node)
	}
	err = fc.db.QueryRowContext(rwpool.WithMaxStaleness(context.Background(), time.Second), "SELECT node").Scan(&node)
	if !errors.Is(err, rwpool.ErrSplitBrain) {
		t.Errorf("a bounded-staleness read during split brain: %v, want ErrSplitBrain", err)
	}
	simRead(t, fc.db, context.Background())
	simRead(t, fc.db, rwpool.WithSession(context.Background()))
}

// A replica that turns writable while the primary is healthy and writable
// changes nothing but a role-mismatch flag: it gets no write, ever.
func TestFollowPromotionHealthyPrimaryKeepsWrites(t *testing.T) {
	fc := openFollow(t)
	fc.r1.SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1})
	waitFor(t, "replica1 flagged as writable", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[1].RoleMismatch()
	})
	for i := range 200 {
		if node, err := fc.write(); err != nil || node != "primary" {
			t.Fatalf("write %d went to %s (%v)", i, node, err)
		}
	}
	if n := fc.r1.Count("INSERT INTO t VALUES (1)"); n != 0 {
		t.Errorf("replica1 ran %d writes", n)
	}
}

// A write refused by a failed primary has the other nodes probed at once
// with follow_promotion, not at their next health check: a promotion made
// by the failover tooling is followed within a fraction of a second even
// with a long check_interval. Without the nudge, nothing reads replica1's
// status again for an hour.
func TestFollowPromotionRefusedWritesProbeCandidates(t *testing.T) {
	fc := openSimCluster(t, sim, "rwpool-test-postgres-sim", "follow_promotion=on;check_interval=1h;probe_timeout=1s")
	if node, err := fc.write(); err != nil || node != "primary" {
		t.Fatalf("write before the failover: %s, %v", node, err)
	}
	fc.p.SetDown(true)
	fc.r1.SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1}) // promoted: writable
	start := time.Now()
	deadline := start.Add(5 * time.Second)
	for {
		node, err := fc.write()
		if err == nil && node == "replica1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes did not reach the promoted replica1 within 5s (check_interval=1h); last: %s, %v", node, err)
		}
		time.Sleep(10 * time.Millisecond) // a poll with a deadline
	}
	t.Logf("writes reached the promoted replica1 %s after the primary went down", time.Since(start).Round(time.Millisecond))
}

// While no primary is writable, a replica that has applied less than
// another serves no read: the standbys of a crashed primary got more or
// less of its last WAL, and the one behind lacks writes the primary
// acknowledged (TestPatroniLeaderCrash saw reads 10.5 s stale on it before
// this rule). It serves again once it catches up, or once the primary is
// writable again.
func TestFollowPromotionNoReadsBehindDuringOutage(t *testing.T) {
	fc := openFollow(t)
	fc.p.SetStatus(fakedriver.Status{LSN: "0/2200", ReplayAge: -1})
	fc.r1.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2000"})
	fc.r2.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1800"})
	readsOn := func(node string) func() bool {
		return func() bool { return simRead(t, fc.db, context.Background()).Node == node }
	}
	waitFor(t, "a read on replica2 while the primary is healthy", readsOn("replica2"))

	fc.p.SetDown(true)
	waitFor(t, "replica2 marked behind replica1", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[2].Behind && !s.Nodes[1].Behind
	})
	for range 100 {
		if r := simRead(t, fc.db, context.Background()); r.Node == "replica2" {
			t.Fatalf("a read went to replica2, behind replica1 with the primary down: %+v", r)
		}
	}
	// Caught up with replica1: it serves again.
	fc.r2.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2000"})
	waitFor(t, "a read on replica2, caught up with replica1", readsOn("replica2"))
	// replica1 gets further: replica2 is behind again.
	fc.r1.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2100"})
	waitFor(t, "replica2 behind replica1 again", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[2].Behind
	})
	// replica1 fails: replica2 is the most advanced available replica.
	fc.r1.SetDown(true)
	waitFor(t, "a read on replica2, replica1 down", readsOn("replica2"))
	fc.r1.SetDown(false)
	waitFor(t, "replica2 behind the returned replica1", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[2].Behind
	})
	// The primary is back, writable: nothing is behind any more.
	fc.p.SetDown(false)
	waitFor(t, "a read on replica2, the primary back", readsOn("replica2"))
	if s, _ := rwpool.Stats(fc.db); s.Nodes[2].Behind {
		t.Error("replica2 is still Behind with the primary back")
	}
}
