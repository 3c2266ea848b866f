package rwpool

import (
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/fakedriver"
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
			gtid := func(s string) replication.Position { return followGTID(t, s) }
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
	at := func(lsn string, tli uint32) replication.Position { return lsnAt(t, lsn, tli) }
	// p crashes; r, which had received less, is promoted (timeline 2).
	crashFollowed(t, cn, p, r, at("0/9100", 1), at("0/9000", 2))
	status := func(lsn string, tli uint32) {
		p.checkFollowing(replication.Status{ReadOnly: true, Pos: at(lsn, tli), Received: at(lsn, tli)})
	}
	// p back as a standby on its own history, ahead of r's promotion;
	// r has written a little, still below p's LSN.
	r.repl.advance(at("0/9050", 2))
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

// followRig3 opens a Connector of a primary and two replicas on
// endpointFake, whose health checkers never run (check_interval is an hour).
func followRig3(t *testing.T, prefix string) (*Connector, *node, *node, *node) {
	t.Helper()
	p, r1, r2 := prefix+"-p", prefix+"-r1", prefix+"-r2"
	for i, d := range []string{p, r1, r2} {
		n := endpointFake.Fresh(d)
		n.SetIdentity(fakedriver.Identity{Addr: "10.0.9." + string(rune('1'+i)) + ":3306", Started: "2026-12-01 10:00:00+00"})
		n.SetStatus(replicaStatus)
	}
	endpointFake.Node(p).SetStatus(primaryStatus)
	cfg := dsn.NewConfig()
	cfg.Driver = "rwpool-internal-endpoint-postgres"
	cfg.Primary = dsn.Node{Name: "primary", DSN: p, Weight: 1, Role: dsn.RolePrimary}
	cfg.Replicas = []dsn.Node{
		{Name: "replica1", DSN: r1, Weight: 1, Role: dsn.RoleReplica},
		{Name: "replica2", DSN: r2, Weight: 1, Role: dsn.RoleReplica},
	}
	cfg.CheckInterval = time.Hour
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeByHand(c, map[*node]driver.Conn{}) })
	c.cfg.FollowPromotion = true
	return c, c.primaryNode(), c.topo().replicas[0], c.topo().replicas[1]
}

func followGTID(t *testing.T, s string) replication.Position {
	t.Helper()
	if s == "" {
		return replication.Position{}
	}
	pos, err := replication.ParseMariaDBGTID(s)
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

// A MariaDB crash failover: the old primary p (server 1) crashes at
// 0-1-100; replica1, at 0-1-95, is promoted; replica2 lags at 0-1-90. The
// new primary has not written yet, so its known position, 0-1-95, names
// the old primary: replica2's target is taken from it. Then replica2's IO
// thread reconnects to the old primary (restarted, or never dead for
// replica2: a partition), which feeds it 0-1-91..0-1-100, transactions
// the new primary never had. replica2 follows the OLD primary, covers the
// target and names its sources: it is let back into reads, and every
// later write of the new primary (0-2-96..) is missing there. A target
// now holds something the new primary wrote (followBar.since).
func TestFollowTargetNotOfOldPrimaryMariaDB(t *testing.T) {
	cn, p, r1, r2 := followRig3(t, "rv-ft")
	r2.repl.advance(followGTID(t, "0-1-90"))
	crashFollowed(t, cn, p, r1, followGTID(t, "0-1-100"), followGTID(t, "0-1-95"))
	status := func(pos string) {
		r2.checkFollowing(replication.Status{ReadOnly: true, Pos: followGTID(t, pos), Received: followGTID(t, pos)})
	}
	status("0-1-90") // the basis: stuck, its source crashed
	status("0-1-90") // the target: the new primary's position, 0-1-95 (server 1)
	if r2.rejoin.Load() == nil {
		t.Fatal("replica2 let into reads before anything")
	}
	// replica2 reconnects to the old primary and applies its diverged tail.
	status("0-1-100")
	// The new primary writes on its own history meanwhile.
	r1.repl.advance(followGTID(t, "0-2-97"))
	if r2.rejoin.Load() == nil || (readNode{r2}).Available() {
		t.Errorf("replica2, replicating from the crashed OLD primary (0-1-100, with 0-1-96..100 the new primary never had, and none of the new primary's 0-2-96..97), serves reads again: bar=%v readable=%v", r2.rejoin.Load(), readNode{r2}.Available())
	}
	status("0-1-100")
	status("0-1-100")
	if r2.rejoin.Load() == nil {
		t.Errorf("still on the old primary's history after the new primary wrote 0-2-97, replica2 serves reads")
	}
}

// The same with MySQL GTID sets: the target taken before the new
// primary's first write is a set of the old primary's transactions only,
// which a replica fed the old primary's diverged tail covers.
func TestFollowTargetNotOfOldPrimaryMySQL(t *testing.T) {
	const u1, u2 = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "4f22fb58-82db-22f2-0f44-d91bb0530673"
	set := func(s string) replication.Position {
		pos, err := replication.ParseMySQLGTIDSet(s)
		if err != nil {
			t.Fatal(err)
		}
		return pos
	}
	cn, p, r1, r2 := followRig3(t, "rv-ftm")
	r2.repl.advance(set(u1 + ":1-90"))
	crashFollowed(t, cn, p, r1, set(u1+":1-100"), set(u1+":1-95"))
	status := func(pos string) {
		r2.checkFollowing(replication.Status{ReadOnly: true, Pos: set(pos), Received: set(pos)})
	}
	status(u1 + ":1-90")
	status(u1 + ":1-90")
	status(u1 + ":1-100") // fed by the old primary
	r1.repl.advance(set(u1 + ":1-95," + u2 + ":1-2"))
	if r2.rejoin.Load() == nil {
		t.Errorf("replica2 at %s:1-100, from the OLD primary, none of the new primary's %s:1-2, serves reads", u1, u2)
	}
}

// lsnAt returns the PostgreSQL position lsn on timeline tli.
func lsnAt(t *testing.T, lsn string, tli uint32) replication.Position {
	t.Helper()
	pos, err := replication.ParseLSN(lsn)
	if err != nil {
		t.Fatal(err)
	}
	return pos.OnTimeline(tli)
}

// A node never seen read-only since the last promotion (a crashed primary
// back writable on its own history) may be followed over the current
// primary only while that one is up and read-only (a switchover away
// from it) or unavailable: not once it is up and writable again. The
// check used to read "not tripped" alone, so a current primary that
// recovered between followRoles' test and mayFollow's let the other one
// take the writes.
func TestMayFollowNotOverARecoveredWritablePrimary(t *testing.T) {
	cn, p, r1, r3 := followRig3(t, "mf")
	crashFollowed(t, cn, p, r1, followGTID(t, "0-1-100"), followGTID(t, "0-1-100"))
	// r3 comes back writable, never seen read-only since; r1 is up and
	// writable.
	r3.health.SetReadOnly(false)
	if r3.mayFollow(r1) {
		t.Error("a node never seen read-only since the promotion may be followed over a current primary up and writable")
	}
	r1.health.SetReadOnly(true) // a switchover away from r1
	if !r3.mayFollow(r1) {
		t.Error("with the current primary up and read-only, the writable node may not be followed")
	}
}

// crashFollowed has p, the primary at pPos, crash, and r, at rPos, report
// itself writable, and checks that cn followed r as the new primary.
func crashFollowed(t *testing.T, cn *Connector, p, r *node, pPos, rPos replication.Position) {
	t.Helper()
	p.repl.advance(pPos)
	r.repl.advance(rPos)
	p.health.Trip(errors.New("probe: connection refused"))
	r.health.SetReadOnly(false)
	cn.followRoles()
	if cn.primaryNode() != r {
		t.Fatal("the crash failover was not followed")
	}
}
