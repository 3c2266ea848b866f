package rwpool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
)

// A read hedged on another node answers with that node's rows, long
// before the hung node is found out; its hedge counts on the hung node.
func TestHedgeAnswersForHungReplica(t *testing.T) {
	cc := newCtlCluster(t, 2, "check_interval=1h;hedge_after=20ms;hedge_budget=100%")
	cc.replicas[0].SetHang(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var hedged int
	for range 20 {
		var r rwpool.Route
		var node string
		start := time.Now()
		err := cc.db.QueryRowContext(rwpool.WithRoute(ctx, &r), "SELECT node").Scan(&node)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("read: %v (route %+v)", err, r)
		}
		if strings.Contains(node, "-r1") {
			t.Fatalf("the hung replica answered: %s", node)
		}
		if took > 500*time.Millisecond {
			t.Fatalf("read took %s (route %+v), want a hedge's answer within 500ms", took, r)
		}
		if strings.HasPrefix(r.Reason, "hedged") {
			hedged++
			if r.Node != "replica2" && r.Node != "primary" {
				t.Fatalf("hedged read answered by %s", r.Node)
			}
		}
	}
	st := cc.stats(t, "replica1")
	if hedged == 0 || st.Hedges == 0 || st.HedgeWins == 0 {
		t.Fatalf("%d reads hedged; replica1: %d hedges, %d won; want some", hedged, st.Hedges, st.HedgeWins)
	}
	if st.HedgeWins > st.Hedges {
		t.Fatalf("replica1: %d hedges won of %d", st.HedgeWins, st.Hedges)
	}
	cc.replicas[0].SetHang(false)
	// The losers' connections, cut mid-statement, are not reused.
	waitFor(t, "the losers' connections closed", func() bool { return cc.stats(t, "replica1").ClosedBroken >= st.HedgeWins })
}

// On a healthy cluster nothing is hedged.
func TestHedgeNotWhenAnswered(t *testing.T) {
	cc := newCtlCluster(t, 2, "hedge_after=20ms")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 200 {
		var node string
		if err := cc.db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"primary", "replica1", "replica2"} {
		if st := cc.stats(t, n); st.Hedges != 0 || st.HedgesRefused != 0 {
			t.Fatalf("%s: %d hedges, %d refused on a healthy cluster", n, st.Hedges, st.HedgesRefused)
		}
	}
}

// Over budget, a slow read is not hedged (and is counted); a hung node's
// reads are still rescued once it is found out.
func TestHedgeBudgetRefuses(t *testing.T) {
	cc := newCtlCluster(t, 2, "check_interval=1h;hedge_after=10ms;hedge_budget=0.01%")
	cc.replicas[0].SetHang(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 10 {
		var node string
		if err := cc.db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
			t.Fatalf("read: %v", err)
		}
	}
	st := cc.stats(t, "replica1")
	if st.Hedges != 0 || st.HedgesRefused == 0 {
		t.Fatalf("replica1: %d hedges, %d refused; want none, some", st.Hedges, st.HedgesRefused)
	}
	cc.replicas[0].SetHang(false)
}
