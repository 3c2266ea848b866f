package rwpool_test

import (
	"context"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/fakedriver"
)

// A member listed under its name at a new address is not missing from its
// source: the grace before a missing member leaves (follow_promotion) is
// for a standby being promoted, which drops out of the list. Found by
// review: with follow_promotion the moved member's old node was kept for
// the whole grace (max(3 rounds, 2 check_interval + probe_timeout)),
// serving reads at the old address (2.5 s here), and the new address
// served none until then.
func TestDiscoveryMovedMemberHasNoGrace(t *testing.T) {
	for _, follow := range []string{"off", "on"} {
		t.Run("follow_promotion="+follow, func(t *testing.T) {
			p := graceServers(t, 7601, 7602)
			src := newTestSource(t, t.Name(), mem("x", 7601))
			rc := openGraceRig(t, p, follow)
			rc.waitFor("x joined", func() bool { return len(rc.discovered()) == 1 })
			// The pod is rescheduled; the old address still answers (the
			// old pod terminating, or the IP already someone else's).
			src.set(nil, mem("x", 7602))
			moveAt := time.Now()
			var lastOld time.Duration
			firstNew := time.Duration(-1)
			for time.Since(moveAt) < 4*time.Second && firstNew < 0 {
				var where string
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				err := rc.db.QueryRowContext(ctx, "SELECT node").Scan(&where)
				cancel()
				if err == nil {
					switch where {
					case memberDSN(p, 7601):
						lastOld = time.Since(moveAt)
					case memberDSN(p, 7602):
						firstNew = time.Since(moveAt)
					}
				}
				time.Sleep(2 * time.Millisecond)
			}
			t.Logf("last read at the old address %v after the move; first at the new one %v", lastOld, firstNew)
			if lastOld > 500*time.Millisecond || firstNew < 0 || firstNew > time.Second {
				t.Errorf("member x listed at a new address: reads kept going to the old address for %v, first read at the new one after %v (want both well under 1s, every=10ms)", lastOld, firstNew)
			}
		})
	}
}

// A member its source stops listing (Patroni: tagged noloadbalance, or
// past max_lag_bytes; a DNS record deleted) leaves the reads at once,
// also with follow_promotion, whose grace keeps the node only as one that
// may be promoted. Found by review: it served reads for the whole grace
// (2.5 s here; 30 s with the default every=10s).
func TestDiscoveryUnlistedMemberLeavesReadsAtOnce(t *testing.T) {
	p := graceServers(t, 7611, 7612)
	src := newTestSource(t, t.Name(), mem("x", 7611), mem("y", 7612))
	rc := openGraceRig(t, p, "on")
	rc.waitFor("x and y joined", func() bool { return len(rc.discovered()) == 2 })
	src.set(nil, mem("y", 7612)) // x: noloadbalance
	at := time.Now()
	var last time.Duration
	for time.Since(at) < 1500*time.Millisecond { // the grace is 2.5 s
		var where string
		if err := rc.db.QueryRow("SELECT node").Scan(&where); err == nil && where == memberDSN(p, 7611) {
			last = time.Since(at)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if last > 500*time.Millisecond {
		t.Errorf("x, no longer listed by its source (every=10ms), still served reads %v later", last)
	}
}

// graceServers makes a writable primary of t's own and a read-only
// server at each of ports (memberDSN), and returns the primary's DSN.
func graceServers(t *testing.T, ports ...int) string {
	p := t.Name() + "-p"
	sim.Fresh(p).SetStatus(fakedriver.Status{LSN: "0/1000", ReplayAge: -1})
	for _, port := range ports {
		sim.Fresh(memberDSN(p, port)).SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1000"})
	}
	return p
}

// openGraceRig opens rwpool on primary p with follow_promotion=follow,
// its replicas found through t's test source every 10 ms.
func openGraceRig(t *testing.T, p, follow string) *discoverRig {
	return openRig(t, "driver=rwpool-test-postgres-sim;follow_promotion="+follow+";check_interval=1s;probe_timeout=500ms;"+
		"primary='"+p+"';discover='rwpooltest:"+t.Name()+"' every=10ms name=t")
}
