package rwpool_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// A replica that hangs while the primary is down (follow_promotion=on,
// writes refused) must still be tripped by the confirming probe a read's
// deadline starts, as TestDeadlineOnHungNode shows without the outage.
// With the candidate nudges of cc10c81, the nudge probe of the replica
// holds n.confirming while it hangs: the read's confirm is dropped (the
// nudge never looks at reconfirm), and the nudge probe's own timeout
// trips nothing, so the hung replica stays in rotation until the next
// health check (check_interval) or the next read that fails on it.
// Passes on 30298f9 (tripped 310 ms after the read), fails on cc10c81.
func TestNudgeAnswersConfirmOfHungReplica(t *testing.T) {
	fc := openSimCluster(t, sim, "rwpool-test-postgres-sim", "follow_promotion=on;check_interval=1h;probe_timeout=300ms")
	if node, err := fc.write(); err != nil || node != "primary" {
		t.Fatalf("write before the outage: %s, %v", node, err)
	}
	fc.p.SetDown(true)
	waitFor(t, "the primary tripped", func() bool {
		fc.write()
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[0].State == rwpool.Unavailable
	})
	time.Sleep(300 * time.Millisecond) // the nudge probes of the loop above are done, nudgeEvery is past
	fc.r1.SetHang(true)
	fc.r2.SetHang(true)
	t.Cleanup(func() { fc.r1.SetHang(false); fc.r2.SetHang(false) }) // before the db closes

	// A refused write nudges the replicas: their nudge probes hang.
	if _, err := fc.write(); err == nil {
		t.Fatal("a write succeeded with the primary down")
	}
	hungProbes := func() int { return fc.r1.Hung("SELECT 1") + fc.r2.Hung("SELECT 1") }
	for i := 0; hungProbes() < 2 && i < 20; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("probes hung on the replicas before the read: %d", hungProbes())
	// A read on a hung replica: its deadline asks for a confirming probe.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var node string
	if err := fc.db.QueryRowContext(ctx, "SELECT node").Scan(&node); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read on a hung replica: %q, %v; want context.DeadlineExceeded", node, err)
	}
	start := time.Now()
	deadline := start.Add(2 * time.Second) // probe_timeout is 300ms
	for {
		s, _ := rwpool.Stats(fc.db)
		if s.Nodes[1].State == rwpool.Unavailable || s.Nodes[2].State == rwpool.Unavailable {
			t.Logf("the hung replica tripped %s after the read failed", time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no hung replica tripped within 2s of a read that timed out on it (probe_timeout=300ms):\n%s", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The candidate nudges skip, for good, a replica whose last trip (ever)
// was a probe timeout: nudgeProbe tests health.LastError(), which keeps
// the cause of the last trip after the node recovered. A replica that
// hung once (a pause, a blip), recovered, and is promoted later is then
// followed only at its next health check, not within nudgeEvery as
// TestFollowPromotionRefusedWritesProbeCandidates promises. Not a
// regression (30298f9 has no candidate nudges and fails too); the control,
// replica2 promoted instead of replica1, passes in 22 ms on cc10c81.
func TestNudgeReachesReplicaThatOnceHung(t *testing.T) {
	fc := openSimCluster(t, sim, "rwpool-test-postgres-sim", "follow_promotion=on;check_interval=5s;probe_timeout=300ms")
	if node, err := fc.write(); err != nil || node != "primary" {
		t.Fatalf("write before the outage: %s, %v", node, err)
	}
	stats := func() rwpool.Snapshot { s, _ := rwpool.Stats(fc.db); return s }
	// replica1 hangs for a moment: a read's deadline trips it, confirmed
	// by a probe that timed out.
	fc.r1.SetHang(true)
	t.Cleanup(func() { fc.r1.SetHang(false) })
	waitFor(t, "replica1 tripped by a probe timeout", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		var node string
		fc.db.QueryRowContext(ctx, "SELECT node").Scan(&node)
		return stats().Nodes[1].State == rwpool.Unavailable
	})
	fc.r1.SetHang(false)
	deadline := time.Now().Add(6 * time.Second)
	for stats().Nodes[1].State != rwpool.Available {
		if time.Now().After(deadline) {
			t.Fatalf("replica1 did not recover:\n%s", stats())
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("replica1 recovered; its last trip's cause: %s", stats().Nodes[1].LastError)

	// Now the primary fails and the failover tooling promotes replica1.
	fc.p.SetDown(true)
	fc.r1.SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1})
	start := time.Now()
	deadline = start.Add(1500 * time.Millisecond) // 7 × nudgeEvery; the next health check is 4-5 s away
	for {
		node, err := fc.write()
		if err == nil && node == "replica1" {
			t.Logf("writes reached the promoted replica1 %s after the primary went down", time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes did not reach the promoted replica1 within 1.5s; last: %s, %v\n%s", node, err, stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
