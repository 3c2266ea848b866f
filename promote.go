package rwpool

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/health"
	"github.com/rwpool/rwpool/internal/replication"
)

// This file follows promotions (follow_promotion=on), for clusters whose
// failover tooling promotes a replica without an endpoint that moves
// (Patroni or repmgr with static host lists, self-managed MariaDB). The
// roles of the DSN are where rwpool starts; then, every time a health
// check reads a node's status:
//
//   - while the primary is available and reports itself writable,
//     nothing changes: a replica that reports itself writable is only
//     flagged (RoleMismatch). Two writable nodes while the old one still
//     answers is how split brain starts, and the old one wins.
//   - when the primary is unavailable or reports read-only and exactly
//     one other available node reports itself writable, that node becomes
//     the primary: writes go to it (those waiting, with failover_wait, go
//     at once), RoleChanged events say so, and the old primary becomes a
//     replica that serves no read, and is not made the primary again,
//     until it is seen following the new primary (checkFollowing). Every
//     other replica, too, serves no read until it is seen following the
//     new primary: one that still follows the old one, or nothing (its
//     failover tooling has not re-pointed it yet), replays nothing more,
//     and one left ahead of the new primary by the crash holds writes the
//     new history does not have.
//   - when two or more do, no node gets writes: they fail with an error
//     wrapping ErrUnavailable and ErrSplitBrain, and RoleChanged events
//     name the nodes that claim to be primary, until only one does.
//   - a primary that was unavailable or read-only while other nodes
//     claimed to be the primary and none was followed (two or more, or
//     one whose endpoint was not shown to lead to one server) has lost the
//     benefit of the doubt: if it comes back writable while one of them
//     still claims, that is a split brain too. Someone was promoted while
//     it was away (a crashed MariaDB primary comes back writable on its
//     old history), and the old one winning would put writes where the
//     rest of the cluster never sees them. It wins again only once no
//     other node claims.

// follower is the Connector's view of the roles the servers report.
type follower struct {
	mu    sync.Mutex            // serialises decisions
	split atomic.Pointer[error] // the split-brain refusal of writes, nil without one
	epoch atomic.Uint64         // promotions so far: sessions compare it (session.go)

	// behind: the replicas marked behind (markBehind); nil when none is.
	behind atomic.Pointer[behindSet]

	// contested: while the primary was unavailable or read-only, other
	// nodes claimed to be the primary and none was followed. Guarded by
	// mu; cleared when no node but the primary claims.
	contested bool
}

// readNode is a picker candidate with follow_promotion: any node that is
// available, not the primary, not yet seen following the primary of a
// followed promotion (a demoted primary, a replica), not a balancing
// endpoint that leads to the server of such a node (balancerbar.go), and
// still listed by its discovery source, if it has one (discover.go).
type readNode struct{ n *node }

func (r readNode) Available() bool {
	n := r.n
	return n.health.Available() && n != n.c.primaryNode() && n.rejoin.Load() == nil && !n.viaBarred.Load() && !n.unlisted.Load()
}

// isBehind reports whether n is marked behind (markBehind), while the
// failover is still under way (no primary is writable) and the replica it
// is behind is still available and not in doubt: should that one fail
// (or a statement fail there as on a dead or hung node, or run past
// probe_timeout, until a confirming probe answers), or a primary be writable again, before the next status read
// recomputes the marks, n serves at once. Without the suspicion, a hung
// replica ahead of the others would take every read, and fail them all,
// until its confirming probe timed out.
func (n *node) isBehind() bool {
	s := n.c.follow.behind.Load()
	if s == nil {
		return false
	}
	a := s.over[n]
	return a != nil && a.health.Available() && !a.doubted.Load() && n.c.noWritablePrimary()
}

// noWritablePrimary reports whether the primary is unavailable or reports
// itself read-only.
func (c *Connector) noWritablePrimary() bool {
	cur := c.primaryNode()
	ro, known := cur.health.ReadOnly()
	return cur.health.Tripped() || known && ro
}

// behindSet is markBehind's outcome: each replica marked behind, and a
// replica that has applied strictly more. Immutable once stored.
type behindSet struct {
	over map[*node]*node
}

// markBehind marks, while no primary is writable (the primary unavailable
// or reporting read-only: a failover under way), every replica whose
// applied position another available replica's strictly covers: it serves
// no read until it catches up, or until a primary is writable again. When
// a primary dies, its standbys have received more or less of its last
// WAL; the one that got the most holds writes the primary acknowledged
// that the others never will, until they follow a new primary. Patroni
// promotes the most advanced one; until the promotion (its ttl, 10-30 s)
// and until rwpool follows it, the others would serve reads missing
// acknowledged writes (measured before this rule: 10.5 s stale under
// TestPatroniLeaderCrash). A replica is marked only when another one's
// position strictly covers its own: incomparable positions (MySQL GTID
// sets with an errant transaction, MariaDB domains) mark nothing, and an
// unknown position, or one of a node barred for rejoining, takes no part.
// The marks are computed whole under follow.mu and stored as one
// snapshot: status reads of several nodes end together (a refused write
// has them all probed), and interleaved marks could leave every replica
// marked. Called after every status read with follow_promotion.
//
// Positions are compared by LSN alone, without their timelines: the
// standbys of one primary are on its history, and a standby whose WAL
// receiver stopped (its primary died) reports its last restartpoint's
// timeline, which can be an older one than it replays on, and differ
// from standby to standby (seen under Patroni: 37 and 38 while both
// replayed timeline 39). Compared with timelines, the two would be
// incomparable, and the one behind could be taken for the one ahead.
func (c *Connector) markBehind() {
	f := &c.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	var set *behindSet
	if c.noWritablePrimary() {
		type cand struct {
			n *node
			p replication.Position
		}
		var cs []cand
		for _, n := range c.topo().nodes {
			if !(readNode{n}).Available() { // the candidates a read may go to: no primary, none barred
				continue
			}
			if p := n.repl.position().OnTimeline(0); !p.IsZero() {
				cs = append(cs, cand{n, p})
			}
		}
		for _, b := range cs {
			for _, a := range cs {
				if a.n != b.n && a.p.Covers(b.p) && !b.p.Covers(a.p) {
					if set == nil {
						set = &behindSet{over: map[*node]*node{}}
					}
					set.over[b.n] = a.n
					break
				}
			}
		}
	}
	if set != nil || f.behind.Load() != nil {
		f.behind.Store(set)
	}
}

// skipBehind returns skip extended to the readers marked behind
// (markBehind). For a read that failed on the nodes it tried (failed), a
// mark is waived when the replica it is behind is among them: any replica
// rather than none. A hedge (not failed: the read still runs there) waives
// nothing: a stale answer could win.
func (c *Connector) skipBehind(t *topology, tried []*node, failed bool, skip func(int) bool) func(int) bool {
	s := c.follow.behind.Load()
	if s == nil {
		return skip
	}
	return func(i int) bool {
		if skip != nil && skip(i) {
			return true
		}
		n := t.readers[i]
		return n.isBehind() && !(failed && slices.Contains(tried, s.over[n]))
	}
}

// role returns the role routing gives n now.
func (n *node) role() dsn.Role {
	if n == n.c.primaryNode() {
		return dsn.RolePrimary
	}
	return dsn.RoleReplica
}

// reportsWritable reports whether n's server last said it is writable.
func (n *node) reportsWritable() bool {
	ro, known := n.health.ReadOnly()
	return known && !ro
}

// followRoles decides, after a status read, whether the primary changes
// (see the file comment).
func (c *Connector) followRoles() {
	f := &c.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := c.primaryNode()
	if !c.noWritablePrimary() {
		if f.contested {
			if claim := c.contestants(cur); len(claim) > 0 {
				c.setSplit(append([]*node{cur}, claim...))
				return
			}
			f.contested = false
		}
		c.setSplit(nil)
		return
	}
	claim := c.claimants(cur)
	switch len(claim) {
	case 0:
		c.setSplit(nil)
	case 1:
		if !claim[0].mayFollow(cur) || !claim[0].leadsToOneServer() {
			f.contested = true
			if cur.health.Tripped() {
				// The probe that recovers cur reads its status while it is
				// still tripped: refuse its writes already.
				c.setSplit(append([]*node{cur}, claim...))
			} else {
				c.setSplit(nil)
			}
			return // not provably the new primary, or a balancing endpoint not learnt as such before
		}
		c.setSplit(nil)
		f.contested = false
		c.promote(cur, claim[0])
	default:
		f.contested = true
		c.setSplit(claim)
	}
}

// mayFollow reports whether n, the one node that claims while cur is
// unavailable or read-only, may be made the primary: it was seen
// read-only since cur's promotion (its rejoin bar is based, or gone: seen
// following), so its writable answer is a promotion by the failover
// tooling; or it was promoted after cur (a later PostgreSQL timeline); or
// cur is up and read-only (a switchover away from it, done on purpose).
// Otherwise n has said nothing but "writable" since cur's promotion: it
// may be a primary of before, back on its own history with writes cur
// lacks (a switchover to it, a crash failover away from it before rwpool
// saw it the primary, and a restart writable: MariaDB forgets read_only),
// as the demoted primary itself may (unfollowed). Its claim is contested
// instead: no writes until either stops claiming, rather than the writes
// on the wrong server when cur misses a probe (TestSimulation:
// write-off-primary, MariaDB, a switchover and a crash failover 26 ms
// apart, then a slow primary).
//
// "Up and read-only" is read afresh here, both halves: followRoles found
// cur unavailable or read-only a moment before, and cur may have
// recovered since, writable. Read as "not tripped" alone, that recovery
// let a crashed primary back writable on its own history, never seen
// read-only, be followed over a current primary that had been only slow
// (TestSimulation's regression plan write-off-primary-crash-after-
// switchover in CI: the second *sql.DB promoted it 0 ms after the current
// primary's probe recovered, and its writes went to the wrong server).
func (n *node) mayFollow(cur *node) bool {
	bar := n.rejoin.Load()
	ro, known := cur.health.ReadOnly()
	return bar == nil || bar.based || n.promotedSince(cur) || !cur.health.Tripped() && known && ro
}

// claimants returns the nodes other than cur that claim to be the
// primary: available, reporting themselves writable, and neither a
// demoted primary not seen read-only since nor a balancing endpoint.
func (c *Connector) claimants(cur *node) []*node {
	var claim []*node
	for _, n := range c.topo().nodes {
		// A primary demoted by a followed promotion claims nothing until
		// it has been seen read-only (checkFollowing): one that comes
		// back writable without that (MariaDB does not persist
		// read_only) holds writes the others do not have, or lacks
		// theirs, and must not take the writes back when the current
		// primary misses a probe.
		// A node whose endpoint balances over several servers is no
		// primary, whichever of them answered writable: its next
		// connection may reach another.
		if n.writableBesides(cur) && !n.health.Tripped() && (!n.unfollowed.Load() || n.promotedSince(cur)) {
			claim = append(claim, n)
		}
	}
	return claim
}

// promotedSince reports whether n, a primary demoted by a followed
// promotion and not seen read-only since, is writable on a later
// PostgreSQL timeline than cur's: promoted after cur was, so not its old
// self back with writes cur lacks, which is on an older one. It followed
// cur, unseen, and was promoted when cur failed (a switchover and a crash
// failover in a row, faster than a check_interval). Only PostgreSQL
// positions carry a timeline; elsewhere, or while either is unknown, n
// claims nothing until it is seen read-only.
func (n *node) promotedSince(cur *node) bool {
	mine, theirs := n.repl.position().Timeline(), cur.repl.position().Timeline()
	return mine != 0 && theirs != 0 && mine > theirs
}

// contestants returns the nodes other than cur that keep a contested
// primary from taking writes: the claimants, and those unavailable now
// whose last word was writable. A claimant that misses a probe has not
// stopped claiming; taken for gone, it let the contested primary, back
// writable on its own history, take the writes the moment the other one
// was slow (TestSimulation: write-off-primary, MariaDB, a second
// *sql.DB that had followed a primary which crashed right after a
// switchover to it). The contest ends when they all report read-only
// (rewound, re-pointed), or are gone from the list of writable nodes.
func (c *Connector) contestants(cur *node) []*node {
	var claim []*node
	for _, n := range c.topo().nodes {
		if n.writableBesides(cur) && !n.unfollowed.Load() {
			claim = append(claim, n)
		}
	}
	return claim
}

// writableBesides reports whether n, another node than cur, last said it
// is writable, and its endpoint is not known to balance over several
// servers (the next one reached may not be the one that answered): what
// any claim to be the primary starts with (claimants, contestants).
func (n *node) writableBesides(cur *node) bool {
	return n != cur && n.reportsWritable() && !n.endpoint.balancing()
}

// leadsToOneServer reports whether n's endpoint leads to one server, as a
// primary's must: known so (endpointSeen.single), or shown so now by
// endpointMoveDials fresh dials that all reach the same server. A node
// whose server rwpool cannot identify (no identity query for its driver)
// is taken at its word. Asked only of a node about to be made the primary,
// so the burst of dials is paid once per promotion.
func (n *node) leadsToOneServer() bool {
	if n.endpoint.single() {
		return true
	}
	if n.endpoint.balancing() {
		return false
	}
	first := ""
	for range endpointMoveDials {
		ident, err := n.freshIdentity()
		if err != nil {
			return false
		}
		if ident == "" {
			return true
		}
		n.sameServer(ident, true)
		switch s := n.serverOf(ident); {
		case first == "":
			first = s
		case s != first:
			return false
		}
	}
	return true
}

// promote makes n the primary instead of old. Every other node must now
// be seen following n to serve reads; old, and any node demoted earlier
// that has not followed yet, to claim to be the primary again.
func (c *Connector) promote(old, n *node) {
	// The new primary's own position, just read in the status that made
	// it claim, is of the new history by definition: kept, as its
	// timeline tells a later promotion from its old self's return
	// (promotedSince) before n's next status read. It is also the floor
	// of every rejoin target (followBar.since).
	pos := n.repl.position()
	for _, x := range c.topo().nodes {
		if x == n {
			x.rejoin.Store(nil)
			continue
		}
		x.rejoin.Store(&followBar{since: pos})
		if x == old {
			x.unfollowed.Store(true)
		}
	}
	c.forgetPositions()
	n.repl.advance(pos)
	c.prim.Store(n)
	c.follow.epoch.Add(1)
	now := time.Now()
	old.roleSince.Store(now.UnixNano())
	n.roleSince.Store(now.UnixNano())
	old.health.SetRole(dsn.RoleReplica.String())
	n.health.SetRole(dsn.RolePrimary.String())
	cause := fmt.Errorf("rwpool: node %s reports itself writable while %s is %s: it is the primary now",
		n.cfg.Name, old.cfg.Name, primaryTrouble(old))
	for _, x := range []*node{n, old} {
		ro, _ := x.health.ReadOnly()
		c.notify(Event{Kind: health.RoleChanged, Node: x.cfg.Name, Role: x.role().String(),
			From: x.health.State(), To: x.health.State(), Cause: cause, ReadOnly: ro, At: now})
	}
}

// primaryTrouble says why the primary gave way.
func primaryTrouble(p *node) string {
	if p.health.Tripped() {
		return "unavailable"
	}
	return "read-only"
}

// setSplit records the nodes that claim to be primary together (none:
// no split brain), and reports the start of a split brain once. Its end
// wakes the writes waiting for the primary (failover_wait): the primary
// may take them now.
func (c *Connector) setSplit(claim []*node) {
	f := &c.follow
	if len(claim) == 0 {
		if f.split.Swap(nil) != nil {
			c.primaryWatch.signal()
		}
		return
	}
	names := make([]string, len(claim))
	for i, n := range claim {
		names[i] = n.cfg.Name
	}
	err := error(&nodeError{node: strings.Join(names, ", "), op: "write",
		err: fmt.Errorf("%w: %w: %d nodes report themselves writable", ErrUnavailable, ErrSplitBrain, len(claim))})
	if f.split.Swap(&err) != nil {
		return
	}
	now := time.Now()
	for _, n := range claim {
		c.notify(Event{Kind: health.RoleChanged, Node: n.cfg.Name, Role: n.role().String(),
			From: n.health.State(), To: n.health.State(), Cause: err, At: now})
	}
}

// splitRefusal returns the error writes get during a split brain.
func (c *Connector) splitRefusal() error {
	if e := c.follow.split.Load(); e != nil {
		return *e
	}
	return nil
}

// splitReadRefusal returns the error a read with something to prove (a
// session's, after its writes, reads or a resumed token; one with a
// staleness bound) gets during a split brain, nil without one. What such
// a read may rely on is measured against the primary's position: while
// several nodes claim to be the primary, rwpool does not know which one
// the others follow, nor whose positions a token from elsewhere carries
// (a MariaDB primary back on its old history writes sequence numbers the
// new one also writes), so a replica that seems to have a position may
// lack it. Found by TestSimulation: a session read a row on the claimant
// that was the real primary, and its next read, on a replica behind it,
// missed the row (the primary rwpool knew bounded nothing).
func (c *Connector) splitReadRefusal() error {
	e := c.follow.split.Load()
	if e == nil {
		return nil
	}
	if ne, ok := (*e).(*nodeError); ok {
		return &nodeError{node: ne.node, op: "session read", err: ne.err}
	}
	return *e
}

// beyondNot reports whether q, a position of the new primary, is not
// beyond basis, a node's first position after the promotion: basis
// covers it, or, on PostgreSQL, basis's LSN alone does. On another
// timeline, q covers nothing of basis's and basis nothing of q's, so by
// Covers alone a q at a lower LSN would pass for beyond; and a node whose
// timeline then reads as unknown (a standby's WAL receiver row without
// the pg_read_all_stats privilege: received_tli NULL) is compared by LSN
// alone, so it covered that q at once with nothing of the new primary's
// applied: a standby left ahead of the promoted one by a crash, which can
// follow nothing until it is rewound, served reads as of the crash
// (promote_target_internal_test.go; a likely cause of a 4.08 s stale read
// in CI under TestPatroniLeaderCrash, seen once, not reproduced in 34
// local crash runs). The target's LSN must pass the basis's too: no node gets
// there on the abandoned history, which holds nothing past what it had.
func beyondNot(basis, q replication.Position) bool {
	return basis.Covers(q) || basis.OnTimeline(0).Covers(q.OnTimeline(0))
}

// followBar is what a node has yet to show, after a followed promotion,
// to be seen following the new primary (checkFollowing).
type followBar struct {
	// basis is the node's own position at its first status read after
	// the promotion: what it had received (a PostgreSQL standby's streamed
	// WAL), or else applied. Nothing up to there proves anything: a
	// replica of the old primary, and a crashed old primary, may hold
	// that much, and more than the new primary has, on the old history.
	basis replication.Position
	based bool
	// target: the first position of the new primary known beyond basis
	// and since (checkFollowing); zero until then.
	target replication.Position
	// since is the new primary's position when it was promoted. A target
	// must hold something it wrote after that: until its first write, its
	// position is all the old primary's (MariaDB GTIDs naming the old
	// server, a MySQL set of the old server's transactions). A replica fed
	// more of the old primary's history (it reconnected to the crashed
	// primary, back or only cut off from rwpool) covered such a target and
	// was let back into reads without one write of the new primary; and a
	// node that follows the new primary, whose MariaDB GTIDs then name the
	// new server, never matched it, and was barred for good (the likely
	// cause of a CI failure of TestIntegrationFollowSwitchover on MariaDB:
	// the demoted primary, re-pointed and 19,661 transactions past the new
	// primary's position, served no read for 15 s). Both are tested in
	// promote_target_internal_test.go.
	since replication.Position
}

// checkFollowing lets a node serve reads again after a followed
// promotion once it is seen following the current primary, and a demoted
// primary claim to be primary again (followRoles) once it is seen
// read-only. The
// health checker's status query reads only the role and positions, not
// which server a node replicates from, so "seen following" is: it reports
// itself read-only and has applied a position of the new primary that
// lies beyond everything it had received at its first status after the
// promotion (the basis), with the same sources (a MariaDB GTID written by
// the same server). A node on the abandoned history cannot get there: it
// can apply no more than it had received, and its GTIDs name the old
// primary. Positions alone cannot prove more (a PostgreSQL timeline is
// not readable without pg_read_all_stats), so a node that was fed more of
// the old history after its basis (a crashed primary back on its own,
// still streamed from) could pass on PostgreSQL; a node that passes takes
// no write before the primary it follows fails (it is read-only).
//
// The price: after a promotion, replicas serve reads again only once the
// new primary has written something after their first status read, and
// they replayed it, about two check intervals under a steady write load;
// on an idle cluster, reads go to the primary (or per fallback) until its
// next write.
func (n *node) checkFollowing(st replication.Status) {
	bar := n.rejoin.Load()
	if bar == nil || !st.ReadOnly || n.isPrimary() {
		return
	}
	// A demoted primary seen read-only has been demoted in fact (or
	// restarted as a standby): should it report itself writable later,
	// someone promoted it (the failover tooling, say when the primary it
	// handed over to failed), and it may claim to be the primary again. It
	// is not made to wait until it is seen following: a switchover back
	// to it before rwpool had seen that, or a crash of the new primary
	// meanwhile, would leave no primary rwpool writes to. One that comes
	// back writable without having been read-only (a MariaDB primary
	// restarted: read_only does not persist) is its old self, with writes
	// the new primary lacks: it claims nothing.
	n.unfollowed.Store(false)
	if !bar.based {
		basis := st.Pos
		if st.Received.Covers(basis) {
			basis = st.Received
		}
		n.rejoin.CompareAndSwap(bar, &followBar{basis: basis, based: true, since: bar.since})
		return
	}
	// The target is the first position of the new primary known beyond
	// the basis, kept: the primary's latest moves on with every write,
	// and a replica steadily further behind than the primary's position
	// is fresh never covered it (barred for good, and every balancing
	// endpoint leading to it with it: markBalancers).
	q := bar.target
	if q.IsZero() {
		q = n.c.primaryNode().repl.position()
		if q.IsZero() || beyondNot(bar.basis, q) || beyondNot(bar.since, q) {
			return
		}
		nb := &followBar{basis: bar.basis, based: true, target: q, since: bar.since}
		if !n.rejoin.CompareAndSwap(bar, nb) {
			return
		}
		bar = nb
	}
	if !st.Pos.Covers(q) || !st.Pos.SameSources(q) {
		return
	}
	n.rejoin.CompareAndSwap(bar, nil)
}
