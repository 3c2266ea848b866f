package rwpool

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A suspicion raised while a probe of the node runs is not lost: that
// probe may have reached the server before it hung, and answer, late,
// that all is well. Here the replica's first probe is held until the
// replica has hung and a second suspicion came; it then succeeds. The
// second suspicion's probe follows at once and trips the replica within
// its probe_timeout (100 ms). Before, the second suspicion was dropped
// (a probe was running) and spent the suspicion's turn: nothing probed
// the hung replica until the next health check (an hour here).
func TestSuspicionDuringProbeIsNotLost(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var probes atomic.Int32
	cl := openHeld(t, ";probe_query='SELECT node'", func(cl *heldCluster, ctx context.Context, dsn string) {
		if dsn == cl.r && probes.Add(1) == 1 {
			close(started)
			<-release // reached the server before the hang: answers well, late
		}
	})
	r1 := cl.c.topo().replicas[0]
	r1.suspect()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the suspicion started no probe")
	}
	cl.replica.SetHang(true) // what reaches it now hangs, whatever the context
	defer cl.replica.SetHang(false)
	r1.suspect() // a hedge won meanwhile: the replica may have hung since
	close(release)
	freed := time.Now()
	if !until(func() bool { return r1.health.Tripped() }) {
		t.Fatalf("the hung replica was not tripped (%d probes): the suspicion raised during the first probe was lost", probes.Load())
	}
	if took := time.Since(freed); took > 2*time.Second {
		t.Errorf("tripped %s after the first probe answered, want about probe_timeout (100ms)", took)
	}
	if n := cl.replica.Hung("SELECT node"); n != 1 {
		t.Errorf("%d probes hung, want 1 (the one asked for during the held one)", n)
	}
}
