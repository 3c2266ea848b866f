package rwpool_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
)

// TestIntegrationReplicaEndpointMoves: the only replica is reached through
// an endpoint, which is moved from replica1's server to replica2's while
// 8 readers keep every pooled connection busy on the old one. The health
// checker's periodic fresh dial finds another server behind the endpoint:
// the old connections are retired, an EndpointMoved event says so, and
// reads stop reaching the old server, within endpointCheckEvery
// (5) × check_interval + check_interval + 1 s; no read fails.
func TestIntegrationReplicaEndpointMoves(t *testing.T) {
	const checkInterval = 500 * time.Millisecond
	bound := 6*checkInterval + time.Second
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		ep := newEndpoint(t, cl.Replicas[0])
		db, err := sql.Open("rwpool", cl.DSNOver(cl.Primary, []string{ep.addr()}, "check_interval="+checkInterval.String()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		evs := collectEvents(t, db)
		seen := newSightings()
		l := startLoad(t, db, 8, cl.readFn(db, seen))
		oldPort, newPort := portOf(cl.Replicas[0]), portOf(cl.Replicas[1])
		eventually(t, 5*time.Second, "reads reach replica1's server", func() bool { return !seen.lastSeen(oldPort).IsZero() })
		// The health checker has seen the server behind the endpoint.
		eventually(t, 5*time.Second, "replica1's first status", func() bool { return nodeStats(t, db, "replica1").Reports != "" })

		ep.moveTo(cl.Replicas[1])
		moved := time.Now()
		took, ok := within(t, bound, "no read reaches the old server for 500ms", func() bool {
			last := seen.lastSeen(oldPort)
			return time.Since(last) > 500*time.Millisecond && !seen.lastSeen(newPort).IsZero()
		})
		res := l.stop()
		var zero time.Time
		t.Logf("%s: reads left the old server %s after the move (bound %s); %s", cl.Name,
			seen.lastSeen(oldPort).Sub(moved).Round(time.Millisecond), bound, res.summary(zero, zero))
		if !ok {
			t.Errorf("reads still reached the old server %s after the endpoint moved", took.Round(time.Millisecond))
		}
		if errs := res.failures(zero, zero); len(errs) > 0 {
			t.Errorf("%d reads failed: %s", len(errs), errSummary(errs, 3))
		}
		var movedEv bool
		for _, e := range evs.forNode("replica1") {
			movedEv = movedEv || e.Kind == rwpool.EndpointMoved
		}
		if !movedEv {
			t.Errorf("no EndpointMoved event for replica1: %+v", evs.forNode("replica1"))
		}
	})
}
