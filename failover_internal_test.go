package rwpool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
)

// newWaitConnector returns a Connector over rwpool-internal-fake's nodes
// (never dialled: no health check runs) with failover_wait and
// follow_promotion.
func newWaitConnector(t *testing.T) *Connector {
	t.Helper()
	cfg := dsn.NewConfig()
	cfg.Driver = "rwpool-internal-fake"
	cfg.Primary = dsn.Node{Name: "primary", DSN: "p", Weight: 1, Role: dsn.RolePrimary}
	cfg.Replicas = []dsn.Node{
		{Name: "replica1", DSN: "r1", Weight: 1, Role: dsn.RoleReplica},
		{Name: "replica2", DSN: "r2", Weight: 1, Role: dsn.RoleReplica},
	}
	cfg.CheckInterval = time.Hour
	cfg.FailoverWait = 5 * time.Second
	cfg.FollowPromotion = true
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A write that starts waiting for the primary's next change (its borrow
// was just refused) when the Connector has closed returns ErrClosed at
// once, not at the next nudge tick: Close's wake-up came before its wait.
func TestAwaitPrimaryAfterCloseReturnsAtOnce(t *testing.T) {
	c := newWaitConnector(t)
	c.Close()
	var until time.Time
	start := time.Now()
	err := c.awaitPrimary(context.Background(), &until, errors.New("dial refused"), true)
	if took := time.Since(start); !errors.Is(err, ErrClosed) || took > nudgeEvery/2 {
		t.Fatalf("wait after Close: %v after %s; want ErrClosed at once", err, took)
	}
}

// Writes waiting under failover_wait during a split brain are woken when
// it clears, not at their next nudge tick.
func TestSplitBrainClearedWakesWaiters(t *testing.T) {
	c := newWaitConnector(t)
	c.setSplit(c.topo().replicas)
	ch := c.primaryWatch.changed()
	c.setSplit(nil)
	select {
	case <-ch:
	default:
		t.Fatal("clearing the split brain woke no waiting write")
	}
}
