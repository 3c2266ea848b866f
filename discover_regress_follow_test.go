package rwpool_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// TestDiscoveryFollowPromotedMember: with follow_promotion=on, "a
// discovered replica may be promoted, and it leaves only once it no
// longer is the primary" (README). But a source stops listing a member
// as a replica the moment it is promoted (Patroni's /cluster gives it the
// role leader; join even refuses a member that reports itself
// writable), and round() removes every member no longer listed unless it
// is rwpool's primary *already*. When the round comes before the
// member's next status read (every shorter than check_interval, or
// simply first), the promoted replica is drained and closed, and no
// failover is ever followed: writes find no primary.
func TestDiscoveryFollowPromotedMember(t *testing.T) {
	p := t.Name() + "-p"
	primary := sim.Fresh(p)
	primary.SetStatus(fakedriver.Status{LSN: "0/1000", ReplayAge: -1})
	x := sim.Fresh(memberDSN(p, 7401))
	x.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1000"})
	y := sim.Fresh(memberDSN(p, 7402))
	y.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1000"})
	src := newTestSource(t, t.Name(), mem("x", 7401), mem("y", 7402))
	start := time.Now()
	var logMu sync.Mutex
	var log []string
	note := func(format string, args ...any) {
		logMu.Lock()
		log = append(log, fmt.Sprintf("%v ", time.Since(start).Round(time.Millisecond))+fmt.Sprintf(format, args...))
		logMu.Unlock()
	}
	rc := openRig(t, "driver=rwpool-test-postgres-sim;follow_promotion=on;check_interval=1s;probe_timeout=500ms;failover_wait=3s;"+
		"primary='"+p+"';discover='rwpooltest:"+t.Name()+"' every=10ms name=t", rwpool.WithEventHandler(func(e rwpool.Event) {
		note("event %v %s %v->%v role=%s cause=%v", e.Kind, e.Node, e.From, e.To, e.Role, e.Cause)
	}))
	rc.waitFor("x and y joined", func() bool {
		_, okx := rc.node("t/x")
		_, oky := rc.node("t/y")
		return okx && oky
	})
	// The primary dies and rwpool sees it.
	primary.SetDown(true)
	rc.waitFor("the primary unavailable", func() bool { n, _ := rc.node("primary"); return !n.Available })
	// Patroni promotes x, a while later (its ttl): mid-way between two
	// health checks here, as most of the time with check_interval=2s.
	time.Sleep(300 * time.Millisecond)
	// Patroni promotes x: x is writable, and /cluster lists it as the
	// leader, so the source answers y alone.
	note("x promoted, the source answers y alone")
	x.SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1})
	src.set(nil, mem("y", 7402))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var r rwpool.Route
	_, err := rc.db.ExecContext(rwpool.WithRoute(ctx, &r), "INSERT INTO t VALUES (1)")
	if err != nil || r.Node != "t/x" {
		n, present := rc.node("t/x")
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("a write after x's promotion: node %q, err %v; t/x in Stats: %v (draining %v, role %s)\n%s",
			r.Node, err, present, n.Draining, n.Role, strings.Join(log, "\n"))
	}
}
