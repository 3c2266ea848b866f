package rwpool_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/discovery"
)

// TestDiscoveryMemberMoves: a member whose address changes under the
// same name (a Patroni member on Kubernetes is named after its pod, whose
// IP changes when the pod is rescheduled; the Member doc only says a
// member whose *Name* changes is a new one) must be reached at its new
// address. round() skips every member whose Name it knows, whatever its
// Host and Port, so the node keeps dialling the old address for ever.
func TestDiscoveryMemberMoves(t *testing.T) {
	rc := openCtlRig(t, t.Name()+"-p", "", mem("pg1", 7001))
	old := ctl.Fresh(rc.memberDSN(7001))
	moved := ctl.Fresh(rc.memberDSN(7002))
	rc.waitFor("pg1 joined", func() bool { return len(rc.discovered()) == 1 })
	// The pod is rescheduled: the old address is gone, the member
	// answers at its new one, under the same name.
	old.SetDown(true)
	rc.src.set(nil, mem("pg1", 7002))
	rc.src.waitRounds(t, 5)
	ok := rc.poll(2*time.Second, func() bool { // reads on the new address
		var where string
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := rc.db.QueryRowContext(ctx, "SELECT node").Scan(&where); err != nil {
			return false
		}
		return where == rc.memberDSN(7002)
	})
	if !ok {
		var state string
		for _, n := range rc.c.Stats().Nodes {
			if n.Source == "t" {
				state += fmt.Sprintf(" %s(%s draining=%v)", n.Name, n.State, n.Draining)
			}
		}
		t.Fatalf("member pg1 moved to port 7002 but no read reached it in 2s (dials there: %d); discovered nodes:%s",
			moved.Dials(), state)
	}
}

// TestDiscoveryOnlyKnownAddresses: an answer whose every member is
// already a node of the DSN (here: the primary alone, as a DNS name
// listing every pod answers while the replicas restart) has nothing
// usable. usable's doc says "It fails when none is left", and the
// discoverer's: "an empty answer or one with nothing usable keeps the
// members of the last good answer". But usable fails only when some
// member was malformed (bad > 0): here it returns an empty set, and the
// round removes every replica found before.
func TestDiscoveryOnlyKnownAddresses(t *testing.T) {
	primary := t.Name() + "-p host=127.0.0.1 port=7100"
	rc := openCtlRig(t, primary, "", mem("r1", 7101), mem("r2", 7102))
	ctl.Fresh(rc.memberDSN(7101))
	ctl.Fresh(rc.memberDSN(7102))
	rc.waitFor("r1 and r2 joined", func() bool { return len(rc.discovered()) == 2 })
	rc.src.set(nil, mem("leader", 7100)) // the primary's own address, nothing else
	rc.src.waitRounds(t, 5)
	if got := rc.discovered(); len(got) != 2 {
		d := rc.c.Stats().Discovery[0]
		t.Fatalf("after an answer with nothing usable (only the primary's address) the discovered replicas are %v, want t/r1 and t/r2 kept (Failures=%d LastError=%q)",
			got, d.Failures, d.LastError)
	}
}

// TestDiscoveryReadOnlyTxWhileLeaving: the promise is 0 failed reads
// while replicas join and leave. A read-only transaction (readonly_tx
// =replica, the default) is routed to a replica by routeTx and borrows
// there once (conn.BeginTx): when the replica it picked from the
// topology it loaded has just left and drained, acquire fails with
// ErrUnavailable ("it left discovery"), which BeginTx returns to the
// caller instead of routing again. Plain reads replay; these do not.
func TestDiscoveryReadOnlyTxWhileLeaving(t *testing.T) {
	rc := openCtlRig(t, t.Name()+"-p", " every=2ms", mem("a", 7201), mem("b", 7202))
	for p := 7201; p <= 7204; p++ {
		ctl.Fresh(rc.memberDSN(p))
	}
	rc.waitFor("a and b joined", func() bool { return len(rc.discovered()) == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var txs, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && failed.Load() == 0 {
				tx, err := rc.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
				if err == nil {
					err = tx.Rollback()
				}
				if ctx.Err() != nil {
					return
				}
				txs.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	// Members come and go: every set keeps two replicas.
	sets := [][]discovery.Member{
		{mem("a", 7201), mem("b", 7202)},
		{mem("c", 7203), mem("d", 7204)},
	}
	for i := 0; ctx.Err() == nil && failed.Load() == 0; i++ {
		rc.src.set(nil, sets[i%2]...)
		time.Sleep(4 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if n := failed.Load(); n != 0 {
		err := *firstErr.Load()
		t.Fatalf("%d of %d read-only transactions failed while replicas joined and left; first: %v (ErrUnavailable: %v)",
			n, txs.Load(), err, errors.Is(err, rwpool.ErrUnavailable))
	}
	t.Logf("%d read-only transactions, 0 failed", txs.Load())
}

// TestDiscoveryConfigCopy: NewConnector copies cfg ("later changes
// to cfg have no effect") and Config returns a copy; but both copy the
// Discover slice by reference (Config clones Replicas only), so a change
// to the caller's cfg.Discover, or to the Discover of what Config
// returned, changes the Connector's configuration.
func TestDiscoveryConfigCopy(t *testing.T) {
	newTestSource(t, t.Name())
	ctl.Fresh(t.Name() + "-p")
	rc := openRig(t, "driver=rwpool-test-ctl;primary='"+t.Name()+"-p';discover='rwpooltest:"+t.Name()+"' name=t")
	c := rc.c
	rc.cfg.Discover[0].Name = "changed-by-caller"
	if got := c.Config().Discover[0].Name; got != "t" {
		t.Errorf("after the caller changed its cfg.Discover, Connector.Config().Discover[0].Name = %q, want %q", got, "t")
	}
	c.Config().Discover[0].Source = "rwpooltest:changed-through-Config"
	if got := c.Config().Discover[0].Source; !strings.HasSuffix(got, t.Name()) {
		t.Errorf("after a change to a copy from Config, Connector.Config().Discover[0].Source = %q", got)
	}
}
