package rwpool_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
)

// TestDiscoveryBreakerOff: with breaker=off "only the pools remain"
// (README): NewConnector starts no health checker (connector.go: `if
// cp.Breaker`), and a replica of the DSN never trips. changeTopology
// starts one for every discovered replica regardless (c.startChecker(n)
// with no Breaker check), so a discovered replica is probed every
// check_interval and trips, contrary to the setting, and unlike a
// replica of the DSN in the same state.
func TestDiscoveryBreakerOff(t *testing.T) {
	src := &testSource{}
	testSources.Store(t.Name(), src)
	defer testSources.Delete(t.Name())
	p := t.Name() + "-p"
	ctl.Fresh(p)
	listed := ctl.Fresh(t.Name() + "-r")
	m := ctl.Fresh(p + " host=127.0.0.1 port=7501")
	src.set(nil, mem("m", 7501))
	cfg, err := dsn.Parse("driver=rwpool-test-ctl;breaker=off;check_interval=20ms;probe_timeout=100ms;primary='" + p + "';" +
		"replica='" + t.Name() + "-r';discover='rwpooltest:" + t.Name() + "' every=10ms name=t")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rwpool.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	state := func(name string) (string, bool) {
		for _, n := range c.Stats().Nodes {
			if n.Name == name {
				return n.State.String(), true
			}
		}
		return "", false
	}
	waitFor(t, "m joined", func() bool { _, ok := state("t/m"); return ok })
	listed.SetDown(true)
	m.SetDown(true)
	time.Sleep(300 * time.Millisecond) // 15 check intervals
	rs, _ := state("replica1")
	ms, _ := state("t/m")
	if ms != rs {
		t.Fatalf("breaker=off, both replicas down for 15 check intervals: the DSN's replica is %s, the discovered one %s (dials to it: %d)",
			rs, ms, m.Dials())
	}
}
