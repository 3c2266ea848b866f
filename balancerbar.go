package rwpool

import "time"

// A followed promotion bars every node but the new primary from reads
// until it is seen following the new primary (followBar, checkFollowing).
// The bar is a server's, not a DSN entry's: a balancing endpoint (a
// read-only service or a DNS name over several servers) is seen following
// as soon as the server one probe reached is, while another server behind
// it may still be barred as a node of its own: a crashed MariaDB primary
// back writable on its own history, with the rows the failover abandoned,
// or a replica not yet re-pointed. Reads through the endpoint would reach
// it at random (TestSimulation: abandoned-read, a crash failover right
// after a switchover; the balancing endpoint served the abandoned rows of
// the crashed primary, barred as a node of its own, until the simulation
// rewound it). So a balancing endpoint serves no read while it is known to
// lead to the server of a node barred from reads (markBalancers).
//
// What rwpool cannot see it cannot bar: a server behind a balancing
// endpoint and nowhere else in the DSN, or one the endpoint's identity
// reads have not reached yet (they learn its servers at its first probe
// and every endpointCheckEvery probes after), is judged by the status of
// whichever server the endpoint's probe reaches.

// markBalancers marks every balancing endpoint known to lead to the
// server of a node barred from reads (its rejoin bar), other than the
// primary's: such an endpoint serves no read (readNode) until the next
// status read finds none. Called with follow_promotion after every status
// read, and again once the probe has recorded the identity it read (a
// server just learnt may be a barred node's own), with no lock held: it
// takes follow.mu, so that the marks of status reads that end together
// are computed whole, one after the other.
func (c *Connector) markBalancers() {
	f := &c.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	var barred map[string]bool
	cur := c.primaryNode()
	for _, n := range c.topo().nodes {
		if n == cur || n.rejoin.Load() == nil || n.endpoint.balancing() || n.downSinceTrip() {
			continue
		}
		for _, s := range n.endpoint.knownServers() {
			if barred == nil {
				barred = map[string]bool{}
			}
			barred[s] = true
		}
	}
	if barred != nil {
		// The primary's server is never barred, whichever DSN entry
		// also leads there (a VIP that moved to it).
		for _, s := range cur.endpoint.knownServers() {
			delete(barred, s)
		}
	}
	for _, n := range c.topo().nodes {
		mark := false
		if barred != nil && n.endpoint.balancing() {
			for _, s := range n.endpoint.knownServers() {
				if barred[s] {
					mark = true
					break
				}
			}
		}
		if n.viaBarred.Load() != mark {
			n.viaBarred.Store(mark)
		}
	}
}

// downSinceTrip reports whether n has been unavailable, without
// answering a status read since it was tripped, for barGone at least: its
// server is down, and a balancer cannot reach it either. Barred, it then
// bars no balancing endpoint until the status read of the probe that
// finds it back (status marks the endpoints again at once, before the
// breaker lets anything read from the node). Barring through a dead
// server kept a balancing endpoint out of reads for as long as the server
// stayed dead: a crashed old primary gone for hours (found by review).
// The price is a window when it comes back after barGone: from its
// restart to its first probe (DownInterval, at most check_interval), a
// read through the balancer may reach it. Before barGone, the bar holds:
// a crashed MariaDB primary restarted at once, writable on its own
// history, is the case the bar is for (TestSimulation restarts one 0.6 s
// after the crash).
func (n *node) downSinceTrip() bool {
	if !n.health.Tripped() {
		return false
	}
	since := n.health.Since()
	return n.statusAt.Load() < since.UnixNano() && time.Since(since) >= n.c.barGone
}

// barGoneAfter is how long a barred node must be down before its server
// stops barring balancing endpoints (downSinceTrip).
const barGoneAfter = time.Minute

// knownServers returns the servers known behind the endpoint (IdentityServer
// form).
func (e *endpointSeen) knownServers() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.servers))
	for s := range e.servers {
		out = append(out, s)
	}
	return out
}
