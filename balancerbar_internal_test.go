package rwpool

import (
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
)

// A balancing endpoint leads to the servers of other nodes: while one of
// them is barred from reads after a followed promotion, so is the
// endpoint. Without the rule, the endpoint's bar ended when its probe
// reached a server that follows, and its reads reached the barred one at
// random (TestSimulation: abandoned-read, testdata/simulation/
// write-off-primary-crash-after-switchover.json, 1 replay in 20 to 30).
func TestBalancingEndpointBarredWithItsServers(t *testing.T) {
	cfg := dsn.NewConfig()
	cfg.Driver = "rwpool-internal-endpoint-postgres"
	cfg.Primary = dsn.Node{Name: "primary", DSN: "bb-p", Weight: 1, Role: dsn.RolePrimary}
	cfg.Replicas = []dsn.Node{
		{Name: "replica1", DSN: "bb-r1", Weight: 1, Role: dsn.RoleReplica},
		{Name: "replica2", DSN: "bb-r2", Weight: 1, Role: dsn.RoleReplica},
		{Name: "rr", DSN: "bb-rr", Weight: 1, Role: dsn.RoleReplica},
	}
	cfg.CheckInterval = time.Hour // no probe runs: the test is the health checker
	cfg.FollowPromotion = true
	for _, d := range []string{"bb-p", "bb-r1", "bb-r2", "bb-rr"} {
		endpointFake.Fresh(d).SetStatus(replicaStatus)
	}
	endpointFake.Node("bb-p").SetStatus(primaryStatus)
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, r1, r2, rr := c.topo().nodes[0], c.topo().nodes[1], c.topo().nodes[2], c.topo().nodes[3]
	setServers(p, "s0")
	setServers(r1, "s1")
	setServers(r2, "s2")
	setServers(rr, "s1", "s2", "s3")
	serves := func(n *node) bool { return readNode{n}.Available() }
	rejoining := func(name string) bool {
		for _, ns := range c.Stats().Nodes {
			if ns.Name == name {
				return ns.Rejoining
			}
		}
		t.Fatalf("no node %s in Stats", name)
		return false
	}

	c.markBalancers()
	if !serves(rr) || rejoining("rr") {
		t.Fatalf("rr serves reads %v, Rejoining %v with no node barred: want true, false", serves(rr), rejoining("rr"))
	}
	// A followed promotion bars replica1 (not yet seen following); rr,
	// which leads to its server too, is barred with it, and replica2,
	// which does not, is not.
	r1.rejoin.Store(&followBar{})
	c.markBalancers()
	if serves(rr) || !rejoining("rr") {
		t.Errorf("replica1 barred: rr serves reads %v, Rejoining %v; want false, true", serves(rr), rejoining("rr"))
	}
	if !serves(r2) {
		t.Error("replica1 barred: replica2, a single server, serves no read")
	}
	// replica1 is seen following: rr serves again.
	r1.rejoin.Store(nil)
	c.markBalancers()
	if !serves(rr) || rejoining("rr") {
		t.Errorf("replica1 following again: rr serves reads %v, Rejoining %v; want true, false", serves(rr), rejoining("rr"))
	}
	// A node barred whose server is the primary's (two DSN entries that
	// lead to one server) bars nothing: the primary's server is current.
	setServers(r2, "s0")
	r2.rejoin.Store(&followBar{})
	rr.endpoint.mu.Lock()
	rr.endpoint.servers["s0"] = true
	rr.endpoint.mu.Unlock()
	c.markBalancers()
	if !serves(rr) {
		t.Error("rr barred for a server that is the primary's")
	}
}

// setServers makes ss the servers known behind n's endpoint.
func setServers(n *node, ss ...string) {
	n.endpoint.mu.Lock()
	defer n.endpoint.mu.Unlock()
	n.endpoint.servers = map[string]bool{}
	for _, s := range ss {
		n.endpoint.servers[s] = true
	}
}
