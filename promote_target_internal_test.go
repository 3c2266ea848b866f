package rwpool

import (
	"errors"
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

// After a PostgreSQL crash failover, a standby the crash left ahead of
// the promoted one (it received WAL the new primary never had) cannot
// follow it until it is rewound, and replays nothing new. The new
// primary's first known position, on the new timeline, lies below that
// standby's basis by LSN; on another timeline, Covers took it for beyond,
// and once the standby's timeline read as unknown (a WAL receiver row
// without pg_read_all_stats) its LSN alone covered that target: it served
// reads as of the crash. The target must now pass the basis by LSN too;
// the standby, rewound and streaming, then reaches it.
func TestFollowTargetBelowBasisOnOtherTimeline(t *testing.T) {
	rig := newEndpointRig(t, "tb-p", "tb-r", map[string]string{"tb-p": "10.0.0.1:5432", "tb-r": "10.0.0.2:5432"}, "tb-p")
	cn := rig.c
	cn.cfg.FollowPromotion = true
	p, r := cn.primaryNode(), cn.topo().replicas[0]
	at := func(lsn string, tli uint32) replication.Position {
		pos, err := replication.ParseLSN(lsn)
		if err != nil {
			t.Fatal(err)
		}
		return pos.OnTimeline(tli)
	}
	// p crashes; r, which had received less, is promoted (timeline 2).
	p.repl.advance(at("0/9100", 1))
	r.repl.advance(at("0/9000", 2))
	p.health.Trip(errors.New("probe: connection refused"))
	r.health.SetReadOnly(false)
	cn.followRoles()
	if cn.primaryNode() != r {
		t.Fatal("the crash failover was not followed")
	}
	status := func(lsn string, tli uint32) {
		p.checkFollowing(replication.Status{ReadOnly: true, Pos: at(lsn, tli), Received: at(lsn, tli)})
	}
	// p back as a standby on its own history, ahead of r's promotion.
	status("0/9100", 1) // the basis
	status("0/9100", 0) // its WAL receiver tries r: timeline unknown
	status("0/9100", 0)
	if p.rejoin.Load() == nil {
		t.Fatal("a standby ahead of the promoted primary on the old history, replaying nothing of the new one, may serve reads")
	}
	r.repl.advance(at("0/9200", 2)) // r writes on
	status("0/9100", 0)
	status("0/9100", 0)
	if p.rejoin.Load() == nil {
		t.Fatal("still on the old history, the standby may serve reads once the primary wrote on")
	}
	status("0/9300", 2) // rewound, streaming from r
	status("0/9300", 2)
	if p.rejoin.Load() != nil {
		t.Error("rewound and past the primary's position on its timeline, the standby still serves no read")
	}
}
