package rwpool_test

import (
	"context"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// A session (WithSession) whose last read was on a replica keeps reading
// there (readPlan.prefer: routeCausal checks readNode.Available, not
// isBehind), although NodeStats.Behind says the replica "serves no read":
// for the whole outage, the session reads from the replica that lacks the
// crashed primary's last acknowledged writes.
func TestBehindSessionReadsOnBehindReplica(t *testing.T) {
	fc := openFollow(t)
	fc.p.SetStatus(fakedriver.Status{LSN: "0/2200", ReplayAge: -1})
	fc.r1.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2000"})
	fc.r2.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1800"})
	var ctx context.Context
	waitFor(t, "a session read on replica2 while the primary is healthy", func() bool {
		ctx = rwpool.WithSession(context.Background())
		return simRead(t, fc.db, ctx).Node == "replica2"
	})
	fc.p.SetDown(true)
	waitFor(t, "replica2 marked behind replica1", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[2].Behind && !s.Nodes[1].Behind
	})
	on := 0
	for range 20 {
		// (A read may fail here, routed to the down primary before any
		// pick: "the session's write position is unknown" while
		// replica2's endpoint is not yet learnt, as before the rule.)
		var r rwpool.Route
		var node string
		if err := fc.db.QueryRowContext(rwpool.WithRoute(ctx, &r), "SELECT node").Scan(&node); err == nil && r.Node == "replica2" {
			on++
		}
	}
	if s, _ := rwpool.Stats(fc.db); on > 0 && s.Nodes[2].Behind {
		t.Errorf("%d of 20 session reads went to replica2, reported Behind (\"serves no read\") with the primary down", on)
	}
}

// The primary's recovery probe reads its status while it is still tripped
// (markBehind: outage), then recovers it; nothing recomputes the marks
// until another status read. With the health checks far apart (here
// check_interval=1h; 2 s by default), replica2 stays out of reads with the
// primary back and writable, writes succeeding.
func TestBehindBehindStaysAfterPrimaryRecovers(t *testing.T) {
	fc := openSimCluster(t, sim, "rwpool-test-postgres-sim", "follow_promotion=on;check_interval=1h;probe_timeout=1s")
	fc.p.SetStatus(fakedriver.Status{LSN: "0/2200", ReplayAge: -1})
	fc.r1.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2000"})
	fc.r2.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1800"})
	if _, err := fc.write(); err != nil {
		t.Fatal(err)
	}
	fc.p.SetDown(true)
	// Failing writes ask for probes of every node (follow_promotion).
	waitFor(t, "replica2 marked behind replica1", func() bool {
		fc.write()
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[2].Behind && !s.Nodes[1].Behind
	})
	fc.p.SetDown(false)
	waitFor(t, "a write on the recovered primary", func() bool {
		node, err := fc.write()
		return err == nil && node == "primary"
	})
	time.Sleep(500 * time.Millisecond)
	on := 0
	for range 50 {
		if r := simRead(t, fc.db, context.Background()); r.Node == "replica2" {
			on++
		}
	}
	if s, _ := rwpool.Stats(fc.db); s.Nodes[2].Behind || on == 0 {
		t.Errorf("primary writable again for 500 ms: replica2 Behind %v, %d of 50 reads on it\n%v", s.Nodes[2].Behind, on, s)
	}
}

// The ahead replica hangs (not yet tripped: its probe times out after
// probe_timeout=1s). Reads with a 100 ms deadline: before the rule, those
// picking replica2 succeeded (5 and 10 of 14-19 at 407e68b); now every
// one waits on replica1 and fails, replica2 (behind, healthy) being
// skipped until replica1 trips.
func TestBehindReadsFailWhileAheadReplicaHangs(t *testing.T) {
	fc := openFollow(t)
	fc.p.SetStatus(fakedriver.Status{LSN: "0/2200", ReplayAge: -1})
	fc.r1.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/2000"})
	fc.r2.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1800"})
	simRead(t, fc.db, context.Background())
	fc.p.SetDown(true)
	waitFor(t, "replica2 marked behind replica1", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[2].Behind && !s.Nodes[1].Behind
	})
	fc.r1.SetHang(true)
	defer fc.r1.SetHang(false)
	fails, ok := 0, 0
	for start := time.Now(); time.Since(start) < 900*time.Millisecond; {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		var node string
		if err := fc.db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
			fails++
		} else {
			ok++
		}
		cancel()
	}
	if ok == 0 {
		t.Errorf("replica1 (ahead) hung, replica2 healthy: %d reads with 100 ms deadlines failed, none succeeded", fails)
	}
}
