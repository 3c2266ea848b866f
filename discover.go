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
	var added, removed []*node
	joinFail := map[string]string{}
	for _, m := range want {
		if _, ok := d.members[m.Name]; ok || ctx.Err() != nil {
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
	for name, n := range d.members {
		if !slices.ContainsFunc(want, func(m discovery.Member) bool { return m.Name == name }) && n != d.c.primaryNode() {
			removed = append(removed, n)
		}
	}
	if !d.c.changeTopology(added, removed, d.name) {
		return // closed: changeTopology closed the new nodes
	}
	for _, n := range added {
		d.members[n.member] = n
	}
	for _, n := range removed {
		delete(d.members, n.member)
	}
	d.count.Store(int64(len(d.members)))
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
			h, p := n.cfg.Address()
			taken[net.JoinHostPort(h, p)] = true
		}
	}
	primaryPort := func() string { _, p := d.c.cfg.Primary.Address(); return p }()
	seen := map[string]bool{}
	var out []discovery.Member
	var bad int
	for _, m := range ms {
		port := m.Port
		if port == "" {
			port = primaryPort
		}
		if m.Name == "" || m.Host == "" || seen[m.Name] || !validPort(m.Port) || hasCtl(m.Name) {
			bad++
			continue
		}
		seen[m.Name] = true
		if taken[net.JoinHostPort(m.Host, port)] {
			continue
		}
		out = append(out, m)
	}
	if room := dsn.MaxReplicas - len(d.c.cfg.Replicas); len(out) > room {
		return nil, fmt.Errorf("the source answered %d replicas, more than %d", len(out), room)
	}
	if len(out) == 0 && bad > 0 {
		return nil, fmt.Errorf("the source answered %d members, none usable (no name, no host, a bad port)", len(ms))
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

func hasCtl(s string) bool {
	return slices.ContainsFunc([]byte(s), func(b byte) bool { return b < 0x20 || b == 0x7f })
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
	n.src, n.member, n.stop = d, m.Name, make(chan struct{})
	var conn driver.Conn
	_, err = n.probe(&conn, true)
	if conn != nil {
		conn.Close()
	}
	if err == nil && c.cfg.FollowPromotion {
		if ro, known := n.health.ReadOnly(); known && !ro {
			err = errors.New("it reports itself writable")
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
// false, having closed the added nodes, when c is closed.
func (c *Connector) changeTopology(added, removed []*node, source string) bool {
	if len(added) == 0 && len(removed) == 0 {
		return !c.closed.Load()
	}
	c.topoMu.Lock()
	if c.closed.Load() {
		c.topoMu.Unlock()
		for _, n := range added {
			n.pool.Close()
			closeConnector(n.conn.Connector)
		}
		return false
	}
	cur := c.topo().nodes
	nodes := make([]*node, 0, len(cur)+len(added))
	for _, n := range cur {
		if !slices.Contains(removed, n) {
			nodes = append(nodes, n)
		}
	}
	nodes = append(nodes, added...)
	for _, n := range removed {
		n.gone.Store(true)
		c.draining = append(c.draining, n)
	}
	c.top.Store(c.newTopology(nodes))
	for _, n := range added {
		c.startChecker(n)
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
			Cause: fmt.Errorf("rwpool: node %s: gone from discover %s", n.cfg.Name, source)})
	}
	return true
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
