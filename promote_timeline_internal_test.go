package rwpool

import (
	"errors"
	"testing"

	"github.com/rwpool/rwpool/internal/replication"
)

// A primary demoted by a followed switchover, not seen read-only since,
// that reports itself writable on a later PostgreSQL timeline than the
// current primary's was promoted after it (it followed, unseen, and took
// over when the current one crashed): it claims, and is followed. The
// same node writable on an older timeline is its old self back, with
// writes the current primary lacks: it claims nothing. Before timelines,
// neither claimed: writes failed until the crashed primary came back on
// its own history and took them (TestSimulation: write-off-primary, a
// switchover and a crash failover 157 ms apart; 1 run in 4 of its plan).
func TestDemotedPrimaryOnLaterTimelineIsFollowed(t *testing.T) {
	for _, c := range []struct {
		name   string
		tli    uint32
		follow bool
	}{{"later timeline", 3, true}, {"old timeline", 1, false}, {"unknown timeline", 0, false}} {
		t.Run(c.name, func(t *testing.T) {
			rig := newEndpointRig(t, "tl-p-"+c.name, "tl-r-"+c.name, map[string]string{"tl-p-" + c.name: "10.0.0.1:5432", "tl-r-" + c.name: "10.0.0.2:5432"}, "tl-p-"+c.name)
			cn := rig.c
			cn.cfg.FollowPromotion = true
			p, r := cn.primaryNode(), cn.topo().replicas[0]
			at := func(lsn string, tli uint32) replication.Position { return lsnAt(t, lsn, tli) }
			// The switchover, followed: r, on timeline 2, is the primary.
			p.repl.advance(at("0/9000", 1))
			r.repl.advance(at("0/9100", 2))
			p.health.SetReadOnly(true)
			r.health.SetReadOnly(false)
			cn.followRoles()
			if cn.primaryNode() != r || !p.unfollowed.Load() {
				t.Fatal("the switchover was not followed")
			}
			// r crashes; p, not seen read-only since, reports writable.
			r.health.Trip(errors.New("probe: connection refused"))
			p.repl.advance(at("0/9200", c.tli))
			p.health.SetReadOnly(false)
			cn.followRoles()
			if got := cn.primaryNode() == p; got != c.follow {
				t.Errorf("the demoted primary, writable on timeline %d (the current primary's: 2), followed: %v, want %v", c.tli, got, c.follow)
			}
		})
	}
}
