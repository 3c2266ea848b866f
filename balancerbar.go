package rwpool

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
// status read finds none. Called after every status read with
// follow_promotion, under nothing: it takes follow.mu, so that the marks of
// status reads that end together are computed whole, one after the other.
func (c *Connector) markBalancers() {
	f := &c.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	var barred map[string]bool
	cur := c.primaryNode()
	for _, n := range c.nodes {
		if n == cur || n.rejoin.Load() == nil || n.endpoint.balancing() {
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
	for _, n := range c.nodes {
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
