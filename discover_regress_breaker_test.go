package rwpool_test

import (
	"testing"
	"time"
)

// TestDiscoveryBreakerOff: with breaker=off "only the pools remain"
// (README): NewConnector starts no health checker (connector.go: `if
// cp.Breaker`), and a replica of the DSN never trips. changeTopology
// starts one for every discovered replica regardless (c.startChecker(n)
// with no Breaker check), so a discovered replica is probed every
// check_interval and trips, contrary to the setting, and unlike a
// replica of the DSN in the same state.
func TestDiscoveryBreakerOff(t *testing.T) {
	p := t.Name() + "-p"
	ctl.Fresh(p)
	listed := ctl.Fresh(t.Name() + "-r")
	m := ctl.Fresh(memberDSN(p, 7501))
	newTestSource(t, t.Name(), mem("m", 7501))
	rc := openRig(t, "driver=rwpool-test-ctl;breaker=off;check_interval=20ms;probe_timeout=100ms;primary='"+p+"';"+
		"replica='"+t.Name()+"-r';discover='rwpooltest:"+t.Name()+"' every=10ms name=t")
	state := func(name string) string {
		if n, ok := rc.node(name); ok {
			return n.State.String()
		}
		return ""
	}
	rc.waitFor("m joined", func() bool { _, ok := rc.node("t/m"); return ok })
	listed.SetDown(true)
	m.SetDown(true)
	time.Sleep(300 * time.Millisecond) // 15 check intervals
	rs := state("replica1")
	ms := state("t/m")
	if ms != rs {
		t.Fatalf("breaker=off, both replicas down for 15 check intervals: the DSN's replica is %s, the discovered one %s (dials to it: %d)",
			rs, ms, m.Dials())
	}
}
