package rwpool_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A read in flight when the Connector closes keeps its caller's deadline:
// the watcher goes on merging the caller's context after Close, until the
// read ends (found in review: it returned on Close, and the read's Done
// never closed).
func TestCloseKeepsReadDeadline(t *testing.T) {
	cc := newCtlCluster(t, 1, "check_interval=1h")
	cc.replicas[0].SetHang(true)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var node string
		done <- cc.db.QueryRowContext(ctx, "SELECT node").Scan(&node)
	}()
	waitFor(t, "the read in flight on replica1", func() bool { return cc.stats(t, "replica1").InUse == 1 })
	cc.db.Close()
	select {
	case err := <-done:
		t.Logf("read ended: %v", err)
	case <-time.After(3 * time.Second):
		cc.replicas[0].SetHang(false)
		<-done
		t.Fatal("a read with a 300ms deadline still ran 3s after its Connector closed")
	}
}

// A read rescued while its hedge runs cancels the hedge: it must not keep
// its connection and goroutine on a hung node after the read answered.
func TestRescueStopsHedge(t *testing.T) {
	cc := newCtlCluster(t, 2, "check_interval=1h;hedge_after=20ms;hedge_budget=100%")
	cc.replicas[0].SetHang(true)
	cc.replicas[1].SetHang(true)
	var node string
	if err := cc.db.QueryRowContext(context.Background(), "SELECT node").Scan(&node); err != nil {
		t.Fatal(err)
	}
	t.Logf("answered by %s", node)
	deadline := time.Now().Add(3 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "runHedge") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a hedge still runs 3s after its read answered (read rescued elsewhere):\n%s", hedgeStack(stacks))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hedgeStack(all string) string {
	for _, g := range strings.Split(all, "\n\n") {
		if strings.Contains(g, "runHedge") {
			return g
		}
	}
	return ""
}

// A hedge refused by the budget counts no fallback on the primary (no
// read ran there).
func TestRefusedHedgeCountsNoFallback(t *testing.T) {
	cc := newCtlCluster(t, 1, "check_interval=1h;hedge_after=10ms;hedge_budget=0.01%")
	cc.replicas[0].SetHang(true)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	var node string
	err := cc.db.QueryRowContext(ctx, "SELECT node").Scan(&node)
	t.Logf("read: %v", err)
	r1, p := cc.stats(t, "replica1"), cc.stats(t, "primary")
	if r1.HedgesRefused == 0 {
		t.Fatalf("replica1: %d hedges refused, want some", r1.HedgesRefused)
	}
	if p.Fallbacks != 0 {
		t.Fatalf("primary: %d fallbacks, %d served; want no fallback counted for a refused hedge", p.Fallbacks, p.Served)
	}
}
