package rwpool_test

import (
	"context"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/discovery"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// TestDiscoveryListsPrimaryByIP: "An address that is already a node
// of the DSN (the primary, a replica item) is not added twice: a service
// that lists every pod, the primary's included, is fine" (README). usable
// compares the strings host:port only: the README's own example has the
// primary at 'pg-leader:5432' and an SRV source that answers pod IPs, so
// the primary's pod joins as a discovered replica (its join probe does
// not look at the role it reports, without follow_promotion) and serves
// reads, although it reports itself writable (not in recovery: for
// PostgreSQL, never a replica).
func TestDiscoveryListsPrimaryByIP(t *testing.T) {
	p := t.Name() + "-p host=pg-leader port=5432"
	primary := sim.Fresh(p)
	primary.SetStatus(fakedriver.Status{LSN: "0/1000", ReplayAge: -1})
	primary.SetIdentity(fakedriver.Identity{Addr: "10.0.0.1:5432", Started: "t0"})
	// The service lists both pods by IP: 10.0.0.1 is the primary's pod
	// (its dials reach the primary's server), 10.0.0.2 a replica's.
	viaIP := p + " host=10.0.0.1 port=5432"
	sim.Fresh(viaIP)
	sim.SetEndpoint(viaIP, func(int64) string { return p })
	defer sim.SetEndpoint(viaIP, nil)
	r := sim.Fresh(p + " host=10.0.0.2 port=5432")
	r.SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1000"})
	r.SetIdentity(fakedriver.Identity{Addr: "10.0.0.2:5432", Started: "t1"})
	newTestSource(t, t.Name(),
		discovery.Member{Name: "10.0.0.1:5432", Host: "10.0.0.1", Port: "5432"},
		discovery.Member{Name: "10.0.0.2:5432", Host: "10.0.0.2", Port: "5432"})
	rc := openRig(t, "driver=rwpool-test-postgres-sim;check_interval=50ms;probe_timeout=500ms;"+
		"primary='"+p+"';discover='rwpooltest:"+t.Name()+"' every=10ms name=srv")
	c, db := rc.c, rc.db
	rc.waitFor("the replica's pod joined", func() bool { _, ok := rc.node("srv/10.0.0.2:5432"); return ok })
	time.Sleep(100 * time.Millisecond) // a few more rounds and health checks
	onPrimary := 0
	for range 200 {
		var route rwpool.Route
		var where string
		ctx, cancel := context.WithTimeout(rwpool.WithRoute(context.Background(), &route), time.Second)
		err := db.QueryRowContext(ctx, "SELECT node").Scan(&where)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if where == p {
			onPrimary++
		}
	}
	if onPrimary > 0 {
		var nodes []string
		for _, n := range c.Stats().Nodes {
			nodes = append(nodes, n.Name+"("+n.Role+", "+n.Reports+")")
		}
		t.Fatalf("%d of 200 reads ran on the primary's server, through a discovered replica; nodes: %v", onPrimary, nodes)
	}
}
