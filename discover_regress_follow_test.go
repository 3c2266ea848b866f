package rwpool_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/discovery"
	"github.com/rwpool/rwpool/dsn"
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
	src := &testSource{}
	testSources.Store(t.Name(), src)
	defer testSources.Delete(t.Name())
	p := t.Name() + "-p"
	mdsn := func(port int) string { return fmt.Sprintf("%s host=127.0.0.1 port=%d", p, port) }
	primary := sim.Fresh(p)
	primary.SetStatus(fakedriver.Status{LSN: "0/1000", ReplayAge: -1})
	x := sim.Fresh(mdsn(7401))
	x.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1000"})
	y := sim.Fresh(mdsn(7402))
	y.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1000"})
	src.set(nil, mem("x", 7401), mem("y", 7402))
	cfg, err := dsn.Parse("driver=rwpool-test-postgres-sim;follow_promotion=on;check_interval=1s;probe_timeout=500ms;failover_wait=3s;" +
		"primary='" + p + "';discover='rwpooltest:" + t.Name() + "' every=10ms name=t")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var logMu sync.Mutex
	var log []string
	note := func(format string, args ...any) {
		logMu.Lock()
		log = append(log, fmt.Sprintf("%v ", time.Since(start).Round(time.Millisecond))+fmt.Sprintf(format, args...))
		logMu.Unlock()
	}
	c, err := rwpool.NewConnector(cfg, rwpool.WithEventHandler(func(e rwpool.Event) {
		note("event %v %s %v->%v role=%s cause=%v", e.Kind, e.Node, e.From, e.To, e.Role, e.Cause)
	}))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	node := func(name string) (rwpool.NodeStats, bool) {
		for _, n := range c.Stats().Nodes {
			if n.Name == name {
				return n, true
			}
		}
		return rwpool.NodeStats{}, false
	}
	waitFor(t, "x and y joined", func() bool {
		_, okx := node("t/x")
		_, oky := node("t/y")
		return okx && oky
	})
	// The primary dies and rwpool sees it.
	primary.SetDown(true)
	waitFor(t, "the primary unavailable", func() bool { n, _ := node("primary"); return !n.Available })
	// Patroni promotes x, a while later (its ttl): mid-way between two
	// health checks here, as most of the time with check_interval=2s.
	time.Sleep(300 * time.Millisecond)
	// Patroni promotes x: x is writable, and /cluster lists it as the
	// leader, so the source answers y alone.
	note("x promoted, the source answers y alone")
	x.SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1})
	src.set(nil, discovery.Member{Name: "y", Host: "127.0.0.1", Port: "7402"})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var r rwpool.Route
	_, err = db.ExecContext(rwpool.WithRoute(ctx, &r), "INSERT INTO t VALUES (1)")
	if err != nil || r.Node != "t/x" {
		n, present := node("t/x")
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("a write after x's promotion: node %q, err %v; t/x in Stats: %v (draining %v, role %s)\n%s",
			r.Node, err, present, n.Draining, n.Role, strings.Join(log, "\n"))
	}
}
