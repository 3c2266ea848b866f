package rwpool

import (
	"fmt"
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
//     until it is seen following the new primary (checkFollowing).
//   - when two or more do, no node gets writes: they fail with an error
//     wrapping ErrUnavailable and ErrSplitBrain, and RoleChanged events
//     name the nodes that claim to be primary, until only one does.

// follower is the Connector's view of the roles the servers report.
type follower struct {
	mu    sync.Mutex            // serialises decisions
	split atomic.Pointer[error] // the split-brain refusal of writes, nil without one
	epoch atomic.Uint64         // promotions so far: sessions compare it (session.go)
}

// readNode is a picker candidate with follow_promotion: any node that is
// available, not the primary, and not a demoted primary that does not yet
// follow the new one.
type readNode struct{ n *node }

func (r readNode) Available() bool {
	n := r.n
	return n.health.Available() && n != n.c.primaryNode() && !n.unfollowed.Load()
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
	if ro, known := cur.health.ReadOnly(); !cur.health.Tripped() && !(known && ro) {
		c.setSplit(nil)
		return
	}
	var claim []*node
	for _, n := range c.nodes {
		// A primary demoted by a followed promotion claims nothing until
		// it has been seen following (checkFollowing): one that comes
		// back writable without having followed (MariaDB does not
		// persist read_only) holds writes the others do not have, or
		// lacks theirs, and must not take the writes back when the
		// current primary misses a probe.
		// A node whose endpoint balances over several servers is no
		// primary, whichever of them answered writable: its next
		// connection may reach another.
		if n != cur && !n.health.Tripped() && n.reportsWritable() && !n.unfollowed.Load() && !n.endpoint.balancing() {
			claim = append(claim, n)
		}
	}
	switch len(claim) {
	case 0:
		c.setSplit(nil)
	case 1:
		c.setSplit(nil)
		if !claim[0].leadsToOneServer() {
			return // a balancing endpoint, not learnt as such before
		}
		c.promote(cur, claim[0])
	default:
		c.setSplit(claim)
	}
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
		n.sameServer(ident)
		switch s := n.serverOf(ident); {
		case first == "":
			first = s
		case s != first:
			return false
		}
	}
	return true
}

// promote makes n the primary instead of old. old, and any node demoted
// earlier that has not followed yet, must now be seen following n.
func (c *Connector) promote(old, n *node) {
	at := n.repl.position()
	for _, x := range c.nodes {
		if x == old || x != n && x.unfollowed.Load() {
			x.followFrom.Store(&at)
			x.unfollowed.Store(true)
		}
	}
	c.forgetPositions()
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

// checkFollowing lets a demoted primary serve reads again, and claim to
// be primary again (followRoles), once it is seen following the current
// primary. The health checker's status query reads only the role and the
// position, not which server a node replicates from, so "seen following"
// is: it reports itself read-only (in recovery, read_only) and its applied
// position covers the current primary's at the promotion. Read-only, it
// takes no write; the position keeps one that stopped short of the
// promotion out. A position alone cannot prove the node's history is the
// new primary's (a diverged old primary's may be as far); what it must
// not do, come back writable and be handed the writes, needs it to have
// reported read-only first.
func (n *node) checkFollowing(st replication.Status) {
	if !n.unfollowed.Load() || !st.ReadOnly {
		return
	}
	from := n.followFrom.Load()
	if from == nil || from.IsZero() {
		// The new primary's position at the promotion was not known:
		// its position now is a later one, so a stricter bar.
		now := n.c.primaryNode().repl.position()
		from = &now
	}
	if !from.IsZero() && st.Pos.Covers(*from) {
		n.unfollowed.Store(false)
	}
}
