package rwpool

import (
	"testing"

	"github.com/rwpool/rwpool/internal/replication"
)

// After a followed MariaDB switchover, the target a demoted primary must
// reach to serve reads again can be taken before the new primary's first
// status read as the primary: its position is then the one it read as a
// replica, whose last GTID names the old primary. Re-pointed, the demoted
// primary's GTIDs name the new one, whatever it applies, so a target
// naming the old one was never matched and it served no read again
// (TestIntegrationFollowSwitchover, MariaDB, in CI). The target now moves
// on to the primary's later position, of other sources; a node on the
// GTIDs of a third server is not let through by that.
func TestFollowTargetOfOldSourcesMovesOn(t *testing.T) {
	for _, c := range []struct {
		name  string
		after string // what the demoted primary applied once re-pointed
		reads bool
	}{{"following the new primary", "0-2-160", true}, {"following a third server", "0-3-160", false}} {
		t.Run(c.name, func(t *testing.T) {
			rig := newEndpointRig(t, "tg-p-"+c.name, "tg-r-"+c.name, map[string]string{"tg-p-" + c.name: "10.0.0.1:3306", "tg-r-" + c.name: "10.0.0.2:3306"}, "tg-p-"+c.name)
			cn := rig.c
			cn.cfg.FollowPromotion = true
			p, r := cn.primaryNode(), cn.topo().replicas[0]
			gtid := func(s string) replication.Position {
				if s == "" {
					return replication.Position{}
				}
				pos, err := replication.ParseMariaDBGTID(s)
				if err != nil {
					t.Fatal(err)
				}
				return pos
			}
			// r, which applied the old primary's (server 1) writes up to
			// 100, is promoted while p is read-only.
			p.repl.advance(gtid("0-1-100"))
			r.repl.advance(gtid("0-1-100"))
			p.health.SetReadOnly(true)
			r.health.SetReadOnly(false)
			cn.followRoles()
			if cn.primaryNode() != r {
				t.Fatal("the switchover was not followed")
			}
			status := func(pos string) { p.checkFollowing(replication.Status{ReadOnly: true, Pos: gtid(pos)}) }
			// p's replica position: none (a primary has no gtid_slave_pos).
			status("")                      // the basis
			status("")                      // the target: r's position as a replica, 0-1-100
			r.repl.advance(gtid("0-2-150")) // r's first status as the primary
			status(c.after)
			status(c.after)
			if got := p.rejoin.Load() == nil; got != c.reads {
				t.Errorf("re-pointed, at %s, the demoted primary may serve reads: %v, want %v", c.after, got, c.reads)
			}
		})
	}
}
