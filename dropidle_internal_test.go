package rwpool

import (
	"context"
	"database/sql/driver"
	"testing"

	"github.com/rwpool/rwpool/pool"
)

// A connection error on a node discards its idle connections before the
// failing statement returns, not in the background: a write begun just
// after the first failure of a crash, and leased before a background
// discard ran, went out on a dead idle connection and failed with its
// outcome unknown (TestPatroniLeaderCrash: a write begun under 1 ms after
// the first failure ended). Here the idle count is read the moment the
// error has been noted, with no wait: a discard left to another goroutine
// has not run yet.
func TestConnErrorDropsIdleBeforeReturning(t *testing.T) {
	cl := openHeld(t, "", func(*heldCluster, context.Context, string) {})
	p := cl.c.primaryNode()
	var pcs []*pool.Conn
	for range 3 {
		pc, err := p.pool.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		pcs = append(pcs, pc)
	}
	for _, pc := range pcs {
		pc.Release()
	}
	if idle := p.pool.Stat().Idle; idle != 3 {
		t.Fatalf("%d idle connections before the error, want 3", idle)
	}
	p.noteErr(driver.ErrBadConn)
	if idle := p.pool.Stat().Idle; idle != 0 {
		t.Errorf("%d idle connections right after a connection error on the node, want 0: the next statement may be sent on a dead one", idle)
	}
}
