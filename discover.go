package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool/discovery"
	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/health"
	"github.com/rwpool/rwpool/internal/ascii"
)

// A discoverer asks one source of replicas (a DSN's discover item) for its
// members every Every, and changes the topology by what it answers:
//
//   - A member it did not know is dialled and probed on a connection of
//     its own (probe_timeout) before it joins: a replica that does not
//     answer yet is tried again at the next round, and never gets a read
//     in between.
//   - A member that is gone leaves the topology at once, so no new
//     statement goes to it, and drains: its health checker stops, the
//     statements running on it finish, then its pool and connector close
//     (drain). A read that raced the change and finds the pool closed
//     fails with ErrUnavailable and is replayed elsewhere.
//   - An error, an empty answer or one with nothing usable keeps the
//     members of the last good answer, and says so once (DiscoveryFailed)
//     until the source answers again. An empty answer is refused rather
//     than taken: a source that hiccups (a DNS server restarting, a
//     Patroni API without its DCS) must not take every replica out of the
//     reads, and a replica that is truly gone is tripped by its breaker
//     anyway.
//
// The current primary is never removed, even when its source no longer
// lists it (with follow_promotion a discovered replica may be promoted):
// it leaves at the first round after it is no longer the primary.
type discoverer struct {
	c    *Connector
	d    dsn.Discovery
	name string
	src  discovery.Source

	members map[string]*node // by Member.Name; owned by the goroutine

	rounds   atomic.Int64
	failures atomic.Int64
	count    atomic.Int64                      // len(members)
	lastErr  atomic.Pointer[string]            // the last round's error, nil after a good answer
	lastOK   atomic.Int64                      // UnixNano of the last good answer
	failing  bool                              // owned by the goroutine: a DiscoveryFailed with a Cause was sent
	real     driver.Driver                     // the underlying driver, for new nodes
	joinFail atomic.Pointer[map[string]string] // members whose join probe failed, and why
}

// startDiscovery opens the DSN's sources and starts one goroutine per
// source, owned by c.bg. Opening fails for a scheme nobody registered.
func (c *Connector) startDiscovery(real driver.Driver) error {
	for _, d := range c.cfg.Discover {
		src, err := discovery.Open(d.Source)
		if err != nil {
			return fmt.Errorf("rwpool: dsn: discover %s: %w", d.DisplayName(), err)
		}
		c.discoverers = append(c.discoverers, &discoverer{c: c, d: d, name: d.DisplayName(), src: src,
			members: map[string]*node{}, real: real})
	}
	for _, dd := range c.discoverers {
		c.bg.Go(dd.run)
	}
	return nil
}

// run asks the source at once, then every Every, until Close.
func (d *discoverer) run() {
	ctx := d.c.bgCtx // cancelled by Close: a round in flight ends at once
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-d.c.stop:
			return
		case <-t.C:
		}
		d.round(ctx)
		t.Reset(d.d.Every)
	}
}

// roundTimeout bounds one round's question to the source; the probes of
// new members have probe_timeout each on top.
const roundTimeout = 5 * time.Second

// round asks the source once and applies its answer.
func (d *discoverer) round(ctx context.Context) {
	d.rounds.Add(1)
	qctx, cancel := context.WithTimeout(ctx, min(roundTimeout, d.d.Every))
	ms, err := d.src.Members(qctx)
	cancel()
	if ctx.Err() != nil {
		return // closing
	}
	want, err := d.usable(ms, err)
	if err != nil {
		d.failed(fmt.Errorf("%w (keeping the %d replicas found before)", err, len(d.members)))
		return
	}
	d.lastErr.Store(nil)
	d.lastOK.Store(time.Now().UnixNano())
	if d.failing {
		d.failing = false
		d.c.notify(Event{Kind: health.DiscoveryFailed, Node: d.name, At: time.Now()})
	}
	byName := make(map[string]discovery.Member, len(want))
	for _, m := range want {
		byName[m.Name] = m
	}
	// Gone: a member no longer listed, or listed at another address (a
	// pod rescheduled under its name): its node, dialled at the old
	// address, drains, and a node at the new one joins once it has.
	var removed []*node
	now := time.Now()
	for name, n := range d.members {
		m, listed := byName[name]
		if listed && n.memberAddr == d.addrOf(m) {
			n.absentSince = time.Time{}
			n.unlisted.Store(false)
			continue
		}
		// Out of the reads at once; with follow_promotion, kept a grace
		// as a node that may be promoted (grace).
		n.unlisted.Store(true)
		if n.absentSince.IsZero() {
			n.absentSince = now
		}
		// The grace is for a member missing from the list; one listed
		// at another address has moved, and its old address may lead to
		// another server already (a terminated pod's reused IP): it
		// drains now, and the new address joins once it has.
		if !listed && now.Sub(n.absentSince) < d.grace() || d.keep(n) {
			continue
		}
		removed = append(removed, n)
	}
	var added []*node
	joinFail := map[string]string{}
	for _, m := range want {
		if n, ok := d.members[m.Name]; ok && !slices.Contains(removed, n) || ctx.Err() != nil {
			continue
		}
		name := d.name + "/" + m.Name
		if slices.ContainsFunc(removed, func(n *node) bool { return n.cfg.Name == name }) || d.c.isDraining(name) {
			// One node per name at a time (Stats, metrics): the new one
			// joins once the old one has drained.
			joinFail[m.Name] = "waiting for its earlier node to drain"
			continue
		}
		n, err := d.join(m)
		if err != nil {
			joinFail[m.Name] = err.Error()
			continue
		}
		added = append(added, n)
	}
	d.joinFail.Store(&joinFail)
	added, ok := d.c.changeTopology(added, removed, d.name)
	if !ok {
		return // closed: changeTopology closed the new nodes
	}
	for _, n := range removed {
		delete(d.members, n.member)
	}
	for _, n := range added {
		d.members[n.member] = n
	}
	d.count.Store(int64(len(d.members)))
}

// addrOf returns where m listens, host:port, the primary DSN's port
// standing for a member without one.
func (d *discoverer) addrOf(m discovery.Member) string {
	port := m.Port
	if port == "" {
		_, port = d.c.cfg.Primary.Address()
	}
	return net.JoinHostPort(m.Host, port)
}

// grace is how long a member must be missing before its node leaves:
// none without follow_promotion. With it, a standby being promoted drops
// out of its source's replicas (Patroni lists it as the leader) while
// its promotion runs and it still reports itself read-only; removed
// then, it could never come back (a writable member does not join) and
// the failover would go unfollowed (a CI run: Patroni's switchover to a
// discovered standby). Three rounds and two status reads cover a
// promotion's end. It serves no read meanwhile (node.unlisted): its
// source dropped it from the replicas for a reason (promoted, tagged
// noloadbalance, lagging past max_lag_bytes), and is not second-guessed.
func (d *discoverer) grace() time.Duration {
	if !d.c.cfg.FollowPromotion {
		return 0
	}
	return max(3*d.d.Every, 2*d.c.cfg.CheckInterval+d.c.cfg.ProbeTimeout)
}

// keep reports whether n stays although its source no longer lists it:
// it is the primary, or, with follow_promotion, it reports itself
// writable (a source stops listing a replica as one the moment it is
// promoted, Patroni's as soon as it holds the leader key, which may be
// before rwpool's next status read of it follows the promotion). It
// leaves once it is neither.
func (d *discoverer) keep(n *node) bool {
	if n == d.c.primaryNode() {
		return true
	}
	if !d.c.cfg.FollowPromotion {
		return false
	}
	// Its status is read afresh: the last status read may be up to a
	// check_interval old, from before the promotion.
	var conn driver.Conn
	n.probe(&conn, true)
	if conn != nil {
		conn.Close()
	}
	ro, known := n.health.ReadOnly()
	return known && !ro || n == d.c.primaryNode()
}

// usable returns the members of an answer that can be used: named, with a
// host and a valid port, once each, not a node of the DSN (the primary,
// a replica listed by hand, a member of another source), within
// MaxReplicas. It fails when none is left.
func (d *discoverer) usable(ms []discovery.Member, err error) ([]discovery.Member, error) {
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, errors.New("the source answered no replica")
	}
	taken := map[string]bool{}
	for _, n := range d.c.topo().nodes {
		if n.src != d {
			taken[n.hostPort()] = true
		}
	}
	seen := map[string]bool{}
	var out []discovery.Member
	var bad int
	for _, m := range ms {
		// A member's name becomes part of a node name, which dsn's
		// Validate keeps free of control characters; but it comes from
		// the source at run time, past that validation: the same check
		// is made here.
		if m.Name == "" || m.Host == "" || seen[m.Name] || !validPort(m.Port) || ascii.HasControl(m.Name) {
			bad++
			continue
		}
		seen[m.Name] = true
		if taken[d.addrOf(m)] {
			continue
		}
		out = append(out, m)
	}
	if room := dsn.MaxReplicas - len(d.c.cfg.Replicas); len(out) > room {
		return nil, fmt.Errorf("the source answered %d replicas, more than %d", len(out), room)
	}
	if len(out) == 0 {
		// Nothing usable is no answer: taken as one, it would empty the
		// source's replicas.
		return nil, fmt.Errorf("the source answered %d members, none usable (%d without a name or a host or with a bad port, the others nodes rwpool has already)", len(ms), bad)
	}
	return out, nil
}

func validPort(p string) bool {
	if p == "" {
		return true
	}
	v, err := strconv.ParseUint(p, 10, 16)
	return err == nil && v > 0
}

// failed records a round that kept the last members, and says so once.
func (d *discoverer) failed(err error) {
	d.failures.Add(1)
	msg := err.Error()
	d.lastErr.Store(&msg)
	if !d.failing {
		d.failing = true
		d.c.notify(Event{Kind: health.DiscoveryFailed, Node: d.name, Cause: fmt.Errorf("rwpool: discover %s: %w", d.name, err), At: time.Now()})
	}
}

// join makes the node of a new member and probes it once, on a connection
// of its own, before it may serve: a replica is in the reads only once it
// has answered.
func (d *discoverer) join(m discovery.Member) (*node, error) {
	c := d.c
	nc, err := c.cfg.Primary.WithAddress(m.Host, m.Port)
	if err != nil {
		return nil, err
	}
	nc.Name, nc.Role, nc.Weight = d.name+"/"+m.Name, dsn.RoleReplica, d.d.Weight
	n, err := c.newNode(d.real, nc)
	if err != nil {
		return nil, err
	}
	n.src, n.member, n.memberAddr, n.stop = d, m.Name, d.addrOf(m), make(chan struct{})
	var conn driver.Conn
	_, err = n.probe(&conn, true)
	if conn != nil {
		conn.Close()
	}
	if err == nil {
		// A replica that is writable is no replica: the primary, listed
		// by another name or address than the DSN's (a service over
		// every pod, by IP), or a server promoted by hand.
		if ro, known := n.health.ReadOnly(); known && !ro {
			err = errors.New("it reports itself writable (the primary?)")
		}
	}
	if err != nil {
		n.pool.Close()
		closeConnector(n.conn.Connector)
		return nil, &nodeError{node: nc.Name, op: "join", err: err}
	}
	return n, nil
}

// changeTopology publishes the topology without removed and with added,
// starts the new nodes' checkers and drains the removed ones. It returns
// the nodes it added: not those whose address another source's node took
// meanwhile (two sources listing one replica, joined at once), which it
// closes; and false, having closed every added node, when c is closed.
func (c *Connector) changeTopology(added, removed []*node, source string) ([]*node, bool) {
	if len(added) == 0 && len(removed) == 0 {
		return nil, !c.closed.Load()
	}
	c.topoMu.Lock()
	if c.closed.Load() {
		c.topoMu.Unlock()
		closeNodes(added)
		return nil, false
	}
	cur := c.topo().nodes
	nodes := make([]*node, 0, len(cur)+len(added))
	taken := make(map[string]bool, len(cur))
	for _, n := range cur {
		if !slices.Contains(removed, n) {
			nodes = append(nodes, n)
			taken[n.hostPort()] = true
		}
	}
	var dup []*node
	added = slices.DeleteFunc(added, func(n *node) bool {
		if taken[n.hostPort()] {
			dup = append(dup, n)
			return true
		}
		taken[n.hostPort()] = true
		return false
	})
	defer closeNodes(dup)
	if len(added) == 0 && len(removed) == 0 {
		c.topoMu.Unlock()
		return nil, true
	}
	nodes = append(nodes, added...)
	for _, n := range removed {
		n.gone.Store(true)
		c.draining = append(c.draining, n)
	}
	c.top.Store(c.newTopology(nodes))
	for _, n := range added {
		if c.cfg.Breaker {
			c.startChecker(n)
		}
	}
	for _, n := range removed {
		close(n.stop)
		c.bg.Go(func() { c.drain(n) })
	}
	c.topoMu.Unlock()
	now := time.Now()
	for _, n := range added {
		c.notify(Event{Kind: health.NodeAdded, Node: n.cfg.Name, Role: dsn.RoleReplica.String(), To: n.health.State(), At: now})
	}
	for _, n := range removed {
		c.notify(Event{Kind: health.NodeRemoved, Node: n.cfg.Name, Role: dsn.RoleReplica.String(), To: n.health.State(), At: now,
			Cause: fmt.Errorf("rwpool: node %s: gone from discover %s, or moved", n.cfg.Name, source)})
	}
	return added, true
}

// closeNodes closes the pools and connectors of nodes that never joined.
func closeNodes(ns []*node) {
	for _, n := range ns {
		n.pool.Close()
		closeConnector(n.conn.Connector)
	}
}

// isDraining reports whether a node called name is still draining.
func (c *Connector) isDraining(name string) bool {
	c.topoMu.Lock()
	defer c.topoMu.Unlock()
	return slices.ContainsFunc(c.draining, func(n *node) bool { return n.cfg.Name == name })
}

// hostPort returns where n's DSN leads: the member's address for a
// discovered node, host:port from the DSN for the others.
func (n *node) hostPort() string {
	if n.memberAddr != "" {
		return n.memberAddr
	}
	h, p := n.cfg.Address()
	return net.JoinHostPort(h, p)
}

// drainPoll is how often a draining node's pool is looked at.
const drainPoll = 50 * time.Millisecond

// drain waits until no statement runs on n, which left the topology, then
// closes its pool and connector. Close closes what is still draining.
func (c *Connector) drain(n *node) {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for n.pool.Stat().InUse > 0 {
		select {
		case <-c.stop:
			return // Close closes it
		case <-t.C:
		}
	}
	c.topoMu.Lock()
	defer c.topoMu.Unlock()
	if c.closed.Load() {
		return
	}
	n.pool.Close()
	closeConnector(n.conn.Connector)
	c.draining = slices.DeleteFunc(c.draining, func(x *node) bool { return x == n })
}
