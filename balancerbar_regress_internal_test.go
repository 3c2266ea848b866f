package rwpool

import (
	"database/sql/driver"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// bbRig: a Connector with follow_promotion over fake PostgreSQL servers
// with identities, whose health checkers never run on their own
// (check_interval 1 h): the test runs each node's Check by hand, through
// the real probe and status path (probe.go, lag.go observeOn).
type bbRig struct {
	t     *testing.T
	c     *Connector
	conns map[*node]driver.Conn
	byN   map[string]*node
}

// newBBRig fakes servers (DSN → address) as read-only replicas at 0/1000
// and primary as a writable one, and opens a Connector of primary and the
// replica DSNs named in order (replica1, replica2, ...).
func newBBRig(t *testing.T, servers map[string]string, primary string, replicas ...string) *bbRig {
	t.Helper()
	for d, addr := range servers {
		n := endpointFake.Fresh(d)
		n.SetIdentity(fakedriver.Identity{Addr: addr, Started: "2026-12-01 10:00:00+00"})
		n.SetStatus(replicaStatus)
	}
	endpointFake.Node(primary).SetStatus(primaryStatus)
	cfg := dsn.NewConfig()
	cfg.Driver = "rwpool-internal-endpoint-postgres"
	cfg.Primary = dsn.Node{Name: "primary", DSN: primary, Weight: 1, Role: dsn.RolePrimary}
	for i, r := range replicas {
		cfg.Replicas = append(cfg.Replicas, dsn.Node{Name: fmt.Sprintf("replica%d", i+1), DSN: r, Weight: 1, Role: dsn.RoleReplica})
	}
	cfg.CheckInterval = time.Hour
	cfg.FollowPromotion = true
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rig := &bbRig{t: t, c: c, conns: map[*node]driver.Conn{}, byN: map[string]*node{}}
	for _, n := range c.topo().nodes {
		rig.byN[n.cfg.Name] = n
	}
	t.Cleanup(func() { closeByHand(c, rig.conns) })
	return rig
}

// check runs one round of n's health checker.
func (r *bbRig) check(n *node) { checkByHand(r.conns, n) }

func (r *bbRig) checkAll() {
	for _, n := range r.c.topo().nodes {
		r.check(n)
	}
}

func (r *bbRig) rejoining(name string) bool {
	for _, ns := range r.c.Stats().Nodes {
		if ns.Name == name {
			return ns.Rejoining
		}
	}
	r.t.Fatalf("no node %s", name)
	return false
}

func serves(n *node) bool { return readNode{n}.Available() }

// Availability: the sim's topology (a balancing replica endpoint rr over
// the replicas, each replica also a DSN entry of its own). A switchover
// to s2 (rwpool follows), then s2 crashes for good (hardware) and a crash
// failover promotes s1. rr's balancer no longer reaches s2 (it is dead),
// every live server follows s1, rr's own probe sees it following: yet rr
// serves no read for as long as s2 stays dead (hours), because s2's node
// keeps its rejoin bar (only a status read of s2 can clear it) and rr's
// known servers keep s2 forever. Before d1bec0a rr served again as soon as
// it was seen following.
func TestBalancingEndpointFreedWhenBarredNodeStaysDead(t *testing.T) {
	rig := newBBRig(t, map[string]string{
		"rbA-p": "10.7.0.1:5432", "rbA-r1": "10.7.0.2:5432", "rbA-r2": "10.7.0.3:5432", "rbA-r3": "10.7.0.4:5432",
	}, "rbA-p", "rbA-r1", "rbA-r2", "rbA-r3", "rbA-rr")
	var s2Primary, s2Dead atomic.Bool
	endpointFake.Fresh("rbA-rr")
	endpointFake.SetEndpoint("rbA-rr", func(dial int64) string {
		// A read-only service over the replicas: s2 and s3 while both
		// are replicas and alive, s3 alone otherwise.
		if s2Primary.Load() || s2Dead.Load() {
			return "rbA-r3"
		}
		return []string{"rbA-r2", "rbA-r3"}[dial%2]
	})
	c := rig.c
	p, r1, r2, r3, rr := rig.byN["primary"], rig.byN["replica1"], rig.byN["replica2"], rig.byN["replica3"], rig.byN["replica4"]
	rig.learnBalancing(rr)
	if !serves(rr) {
		t.Fatal("rr serves no read before any fault")
	}

	// Switchover to s2: the old primary read-only, s2 writable.
	endpointFake.Node("rbA-p").SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1000", ReplayAge: 0})
	endpointFake.Node("rbA-r2").SetStatus(fakedriver.Status{LSN: "0/1000", ReplayAge: -1})
	s2Primary.Store(true)
	rig.check(p)
	rig.check(r2)
	if c.primaryNode() != r2 {
		t.Fatalf("switchover to s2 not followed: primary %s", c.primaryNode().cfg.Name)
	}
	rig.checkAll() // every other node's basis

	// s2 crashes for good; s1 is promoted (crash failover).
	endpointFake.Node("rbA-r2").SetDown(true)
	s2Dead.Store(true)
	rig.check(r2)
	if !r2.health.Tripped() {
		t.Fatal("s2 down but not tripped")
	}
	endpointFake.Node("rbA-r1").SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1})
	rig.check(r1)
	if c.primaryNode() != r1 {
		t.Fatalf("crash failover to s1 not followed: primary %s", c.primaryNode().cfg.Name)
	}
	rig.checkAll() // bases after the promotion
	// s1 writes; s3 and the old primary replay it: all follow s1.
	endpointFake.Node("rbA-r1").SetStatus(fakedriver.Status{LSN: "0/3000", ReplayAge: -1})
	rig.check(r1)
	for _, d := range []string{"rbA-p", "rbA-r3"} {
		endpointFake.Node(d).SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/3000", ReplayAge: 0})
	}
	// s2 stays dead, everything else is probed. Within barGone, s2's bar
	// holds through rr: a crashed primary restarted at once may be back
	// writable on its own history before its first probe.
	for range 50 {
		rig.checkAll()
	}
	if serves(rr) {
		t.Fatal("rr serves reads while s2, barred and leading rr there, is down for less than barGone")
	}
	// Past barGone (shortened here: the rig's probes take no time), s2
	// is taken for gone from behind the balancer.
	c.barGone = 0
	rig.checkAll()
	if r3.rejoin.Load() != nil || p.rejoin.Load() != nil || rr.rejoin.Load() != nil {
		t.Fatalf("a live node is still barred: s3 %v, old primary %v, rr %v", r3.rejoin.Load() != nil, p.rejoin.Load() != nil, rr.rejoin.Load() != nil)
	}
	if !serves(r3) {
		t.Fatal("s3, following s1, serves no read")
	}
	if !serves(rr) || rig.rejoining("replica4") {
		t.Errorf("rr (balancing over s3 alone now, seen following s1) serves reads %v, Rejoining %v after s2 was down for barGone; "+
			"want true, false: a dead node's rejoin bar (s2, never probed again) keeps the balancing endpoint out of reads for as long as it is dead",
			serves(rr), rig.rejoining("replica4"))
	}
}

// Safety: the abandoned-read case the rule is for, with the old primary
// being the DSN's primary (a libpq multi-host "host=db1,db2
// load_balance_hosts=random", or a DNS name over all hosts, as the
// balancing replica entry). A primary's identity is never read while it
// is writable (wantsIdentity), so its server is unknown when a crash
// failover bars it. When it comes back writable on its own history, the
// probe that reaches it reads its identity; but markBalancers runs in
// observeOn, before status() records that identity (sameServer), so rr
// still serves after that probe, and its reads may land on the crashed
// primary's abandoned rows, until some other node's status read.
func TestBalancingEndpointNotMarkedAtTheProbeThatFindsTheBarredServer(t *testing.T) {
	rig := newBBRig(t, map[string]string{
		"rbC-p": "10.8.0.1:5432", "rbC-r1": "10.8.0.2:5432", "rbC-r2": "10.8.0.3:5432",
	}, "rbC-p", "rbC-r1", "rbC-r2", "rbC-rr")
	var pDown atomic.Bool
	endpointFake.Fresh("rbC-rr")
	endpointFake.SetEndpoint("rbC-rr", func(dial int64) string {
		if pDown.Load() {
			return "rbC-r2"
		}
		return []string{"rbC-p", "rbC-r2"}[dial%2]
	})
	c := rig.c
	p, r1, r2, rr := rig.byN["primary"], rig.byN["replica1"], rig.byN["replica2"], rig.byN["replica3"]
	rig.learnBalancing(rr)
	// The primary crashes; s1 is promoted.
	endpointFake.Node("rbC-p").SetDown(true)
	pDown.Store(true)
	rig.check(p)
	endpointFake.Node("rbC-r1").SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1})
	rig.check(r1)
	if c.primaryNode() != r1 {
		t.Fatalf("crash failover to s1 not followed: primary %s", c.primaryNode().cfg.Name)
	}
	rig.check(r2)
	rig.check(rr)
	endpointFake.Node("rbC-r1").SetStatus(fakedriver.Status{LSN: "0/3000", ReplayAge: -1})
	rig.check(r1)
	endpointFake.Node("rbC-r2").SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/3000", ReplayAge: 0})
	rig.check(r2)
	rig.check(rr)
	rig.check(rr)
	if !serves(rr) {
		t.Fatal("rr, seen following s1, serves no read")
	}
	t.Logf("while the old primary is down: its known servers %v, rr's %v", p.endpoint.knownServers(), rr.endpoint.knownServers())

	// The old primary comes back writable on its own history (MariaDB
	// forgets read_only; PostgreSQL starts as a primary), and the
	// balancer leads to it again.
	endpointFake.Node("rbC-p").SetStatus(fakedriver.Status{LSN: "0/1800", ReplayAge: -1})
	endpointFake.Node("rbC-p").SetDown(false)
	pDown.Store(false)
	rig.check(p)
	if p.health.Tripped() || p.rejoin.Load() == nil {
		t.Fatalf("the old primary: tripped %v, barred %v; want false, true", p.health.Tripped(), p.rejoin.Load() != nil)
	}
	t.Logf("after its probe: the old primary's known servers %v", p.endpoint.knownServers())
	if serves(rr) {
		t.Errorf("after the probe that found the old primary back writable on its own history (barred, server %v, which rr leads to: %v), rr still serves reads",
			p.endpoint.knownServers(), rr.endpoint.knownServers())
	}
	rig.check(r2) // any other status read
	t.Logf("after another node's status read: rr serves %v", serves(rr))
}

// Availability, second trigger: every server alive. After a crash
// failover to s1, s3 follows closely; s2 follows too, steadily 2 s behind
// (a busy or remote replica: lag above check_interval under a steady
// write load). checkFollowing asks a replica to cover the primary's
// latest known position, which moves on with every write, so s2 keeps
// its rejoin bar for as long as its lag stays above that gap (pre-existing
// for s2 itself); with d1bec0a, rr, which balances over s2 and s3, serves
// no read for as long either, although its own probe saw it following.
func TestBalancingEndpointBarredByLaggingReplica(t *testing.T) {
	rig := newBBRig(t, map[string]string{
		"rbD-p": "10.6.0.1:5432", "rbD-r1": "10.6.0.2:5432", "rbD-r2": "10.6.0.3:5432", "rbD-r3": "10.6.0.4:5432",
	}, "rbD-p", "rbD-r1", "rbD-r2", "rbD-r3", "rbD-rr")
	endpointFake.Fresh("rbD-rr")
	endpointFake.SetEndpoint("rbD-rr", func(dial int64) string { return []string{"rbD-r2", "rbD-r3"}[dial%2] })
	c := rig.c
	p, r1, r2, r3, rr := rig.byN["primary"], rig.byN["replica1"], rig.byN["replica2"], rig.byN["replica3"], rig.byN["replica4"]
	rig.learnBalancing(rr)
	endpointFake.Node("rbD-p").SetDown(true)
	rig.check(p)
	lsn := uint64(0x2000)
	st := func(ro bool, l uint64) fakedriver.Status {
		if ro {
			return fakedriver.Status{ReadOnly: true, LSN: fmt.Sprintf("0/%X", l), ReplayAge: 0}
		}
		return fakedriver.Status{LSN: fmt.Sprintf("0/%X", l), ReplayAge: -1}
	}
	endpointFake.Node("rbD-r1").SetStatus(st(false, lsn))
	rig.check(r1)
	if c.primaryNode() != r1 {
		t.Fatalf("crash failover to s1 not followed: primary %s", c.primaryNode().cfg.Name)
	}
	// 100 check intervals of a steady write load: each round s1 has
	// written 0x100 more; s3 has replayed all of it, s2 what s1 had one
	// round (one check_interval) earlier.
	for range 100 {
		lsn += 0x100
		endpointFake.Node("rbD-r1").SetStatus(st(false, lsn))
		endpointFake.Node("rbD-r3").SetStatus(st(true, lsn))
		endpointFake.Node("rbD-r2").SetStatus(st(true, lsn-0x100))
		rig.check(r1)
		rig.check(r3)
		rig.check(r2)
		rig.check(rr)
	}
	if r3.rejoin.Load() != nil || rr.rejoin.Load() != nil {
		t.Fatalf("s3 barred %v, rr barred %v: want both seen following", r3.rejoin.Load() != nil, rr.rejoin.Load() != nil)
	}
	t.Logf("s2 (following, one check_interval behind) still barred: %v", r2.rejoin.Load() != nil)
	if !serves(rr) {
		t.Errorf("rr (seen following s1) serves no read after 100 check intervals: s2, alive and following s1 with a steady lag, keeps the balancing endpoint out of reads")
	}
}

// Safety: rr forgets a barred server it had learnt. The sim's scenario
// (MariaDB: a switchover to s3, a crash failover from s3 to s1, s3 back
// writable on its own history), with rr balancing over the replicas and
// having learnt two of the three (learnEndpoint stops at the second
// server; here s1 and s3). s3 crashes with rr's probe connection on it:
// the probe's broken connection resets the endpoint (reset: adopt), and
// the next fresh dial, reaching s2 (a server rr had not met), makes rr's
// known servers {s2}: s3 is forgotten (then s1 is relearnt). When s3
// comes back writable on its own history, barred, rr is not marked and
// serves reads, a third of which its balancer sends to s3: the
// abandoned-read the rule was for.
func TestBalancingEndpointForgetsBarredServerOnAdopt(t *testing.T) {
	rig := newBBRig(t, map[string]string{
		"rbE-p": "10.5.0.1:5432", "rbE-r1": "10.5.0.2:5432", "rbE-r2": "10.5.0.3:5432", "rbE-r3": "10.5.0.4:5432",
	}, "rbE-p", "rbE-r1", "rbE-r2", "rbE-r3", "rbE-rr")
	var route atomic.Pointer[[]string]
	set := func(ss ...string) { route.Store(&ss) }
	set("rbE-r1", "rbE-r3")
	endpointFake.Fresh("rbE-rr")
	endpointFake.SetEndpoint("rbE-rr", func(dial int64) string {
		ss := *route.Load()
		return ss[int(dial)%len(ss)]
	})
	c := rig.c
	p, r1, r2, r3, rr := rig.byN["primary"], rig.byN["replica1"], rig.byN["replica2"], rig.byN["replica3"], rig.byN["replica4"]
	rig.learnBalancing(rr)
	// rr's probe connection ends up on s3 (a fresh dial that reached it).
	set("rbE-r3")
	rr.refreshProbe.Store(true)
	rig.check(rr)
	t.Logf("before the switchover: rr knows %v", rr.endpoint.knownServers())
	// Switchover to s3, followed.
	endpointFake.Node("rbE-p").SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/1000", ReplayAge: 0})
	endpointFake.Node("rbE-r3").SetStatus(fakedriver.Status{LSN: "0/1000", ReplayAge: -1})
	rig.check(p)
	rig.check(r3)
	if c.primaryNode() != r3 {
		t.Fatalf("switchover to s3 not followed: primary %s", c.primaryNode().cfg.Name)
	}
	rig.check(p)
	rig.check(r1)
	rig.check(r2)
	// s3 crashes; the balancer reaches s2 and s1 only; s1 is promoted.
	endpointFake.Node("rbE-r3").SetDown(true)
	set("rbE-r2") // s1 is about to be the primary: the read-only balancer leaves it out
	rig.check(r3)
	endpointFake.Node("rbE-r1").SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1})
	rig.check(r1)
	if c.primaryNode() != r1 {
		t.Fatalf("crash failover to s1 not followed: primary %s", c.primaryNode().cfg.Name)
	}
	rig.check(rr) // its connection to s3 is broken: reset, a fresh dial reaches s2
	rig.check(r2)
	t.Logf("s3 down: rr knows %v, rr marked %v", rr.endpoint.knownServers(), !serves(rr))
	// Everything alive follows s1.
	endpointFake.Node("rbE-r1").SetStatus(fakedriver.Status{LSN: "0/3000", ReplayAge: -1})
	rig.check(r1)
	for _, d := range []string{"rbE-p", "rbE-r2"} {
		endpointFake.Node(d).SetStatus(fakedriver.Status{ReadOnly: true, LSN: "0/3000", ReplayAge: 0})
	}
	set("rbE-r2")
	for range 3 {
		rig.check(p)
		rig.check(r2)
		rig.check(rr)
	}
	// s3 comes back writable on its own history; the balancer leads to
	// it again. Its probe finds it so, and some more status reads go by.
	endpointFake.Node("rbE-r3").SetStatus(fakedriver.Status{LSN: "0/1800", ReplayAge: -1})
	endpointFake.Node("rbE-r3").SetDown(false)
	set("rbE-r1", "rbE-r2", "rbE-r3")
	rig.check(r3)
	rig.check(p)
	rig.check(r2)
	if r3.health.Tripped() || r3.rejoin.Load() == nil {
		t.Fatalf("s3: tripped %v, barred %v; want false, true", r3.health.Tripped(), r3.rejoin.Load() != nil)
	}
	if serves(rr) {
		t.Errorf("s3 back writable on its own history (barred; server %v), and rr, whose balancer leads to it, serves reads: rr knows only %v",
			r3.endpoint.knownServers(), rr.endpoint.knownServers())
	}
}

// Availability: markBehind ignores viaBarred. After a followed promotion
// to s1, s2 and rr follow, s3 (not re-pointed yet) keeps its bar, so rr
// (over s2 and s3) is marked viaBarred. Then s1 fails (a second failure,
// or a switchover: no writable primary). markBehind takes rr, which
// serves no read, as the replica ahead of s2 (rr's last status read on
// s2 came after s2's own): s2 is marked behind rr, rr is marked
// viaBarred, and no replica serves at all during the failover; reads fall
// back to the unavailable primary. Before d1bec0a rr served. A node
// barred for rejoining takes no part in markBehind; one viaBarred should
// not either.
func TestBehindOverViaBarredEndpoint(t *testing.T) {
	rig := newBBRig(t, map[string]string{
		"rbF-p": "10.4.0.1:5432", "rbF-r1": "10.4.0.2:5432", "rbF-r2": "10.4.0.3:5432", "rbF-r3": "10.4.0.4:5432",
	}, "rbF-p", "rbF-r1", "rbF-r2", "rbF-r3", "rbF-rr")
	c := rig.c
	p, r1, r2, r3, rr := rig.byN["primary"], rig.byN["replica1"], rig.byN["replica2"], rig.byN["replica3"], rig.byN["replica4"]
	setServers(p, "s0")
	setServers(r1, "s1")
	setServers(r2, "s2")
	setServers(r3, "s3")
	setServers(rr, "s2", "s3")
	c.promote(p, r1) // a followed crash failover to s1
	p.health.Trip(fmt.Errorf("probe: connection refused"))
	for _, n := range []*node{r2, rr} {
		n.rejoin.Store(nil) // seen following s1
	}
	r2.repl.pos.Store(reviewLSN(t, 0x3000))
	rr.repl.pos.Store(reviewLSN(t, 0x3100)) // its last status read, on s2, came after s2's own
	r3.repl.pos.Store(reviewLSN(t, 0x1000))
	c.markBalancers()
	c.markBehind()
	if !serves(r2) || r2.isBehind() || serves(rr) {
		t.Fatalf("s1 writable: s2 serves %v, behind %v; rr serves %v: want true, false, false", serves(r2), r2.isBehind(), serves(rr))
	}
	// s1 fails.
	r1.health.Trip(fmt.Errorf("probe: connection refused"))
	c.markBalancers()
	c.markBehind()
	n, why, err := c.pickRead(false, nil, true, false)
	name := "nothing"
	if n != nil {
		name = n.cfg.Name
	}
	t.Logf("s2 serves %v, behind %v; rr serves %v; a read goes to %s (%q, %v)", serves(r2), r2.isBehind(), serves(rr), name, why, err)
	if err != nil || n == c.primaryNode() {
		t.Errorf("no replica serves during the failover: s2 is marked behind rr, which serves no read itself (viaBarred); the read goes to %s (%q, err %v)", name, why, err)
	}
}

// learnBalancing runs three rounds of probes, in which rr's endpoint must
// be learnt as balancing.
func (r *bbRig) learnBalancing(rr *node) {
	r.t.Helper()
	for range 3 {
		r.checkAll()
	}
	if !rr.endpoint.balancing() {
		r.t.Fatal("rr not learnt as balancing")
	}
}
