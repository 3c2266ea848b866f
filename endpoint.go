package rwpool

import (
	"errors"
	"fmt"
	"sync"
)

// A replica reached through an endpoint that moves (a read-only service
// name or VIP the failover tooling points at another server) keeps its old
// connections on the old server: the pool's and the health checker's. The
// old server may have been promoted (its reads then load the primary), or
// left behind, no longer replicating (its reads then go stale). Only a new
// dial goes through the moved endpoint, so the health checker dials a
// replica's probe connection anew every endpointCheckEvery probes, and at
// every probe while the replica reports itself writable (a promotion: the
// moment endpoints move), and compares the server it reaches with the
// ones it reached before (the first identity read, on whatever probe
// connection, is the baseline; an outage or a restart resets it). Another
// server, reached twice in a row (sameServer), means the endpoint moved:
// the old generation of connections is retired, as for a demoted primary
// (fence.go), and an EndpointMoved event says so.
//
// The cost: one dial (a new server session) and one identity query per
// replica every endpointCheckEvery × check_interval (10 s by default).

// endpointCheckEvery is how many probes of a replica go by between
// freshly dialled ones.
const endpointCheckEvery = 5

// checkEndpoint reports whether this probe of n should dial anew to check
// where its endpoint leads.
func (n *node) checkEndpoint() bool {
	if n.isPrimary() {
		return false // fence.go: a primary is checked when it answers read-only
	}
	if n.health.RoleMismatch() {
		return true
	}
	return n.probes.Add(1)%endpointCheckEvery == 0
}

// endpointSeen is what a replica's freshly dialled probe connections
// found behind its endpoint since its connections were last retired.
type endpointSeen struct {
	mu        sync.Mutex
	seen      map[string]bool // servers reached; nil before the first
	candidate string          // a new server, reached once: a move if reached again next
}

func (e *endpointSeen) known() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seen != nil
}

// reset forgets every server: the next one reached is the baseline.
func (e *endpointSeen) reset() {
	e.mu.Lock()
	e.seen, e.candidate = nil, ""
	e.mu.Unlock()
}

// sameServer records the identity of the server a freshly dialled
// connection of n reached, and retires n's connections if the endpoint
// moved. An endpoint may also balance over several servers (a read-only
// service over all replicas), whose fresh dials reach one or another: so
// a server not seen before is a move only if the next fresh dial (made at
// the next probe) reaches it again, with no known server in between; a
// known server reached in between shows a balancing endpoint, and the new
// server joins the known ones.
func (n *node) sameServer(ident string) {
	e := &n.endpoint
	e.mu.Lock()
	switch {
	case e.seen == nil:
		e.seen = map[string]bool{ident: true}
	case e.seen[ident]:
		if e.candidate != "" {
			e.seen[e.candidate] = true
			e.candidate = ""
		}
	case e.candidate != ident:
		e.candidate = ident
		n.refreshProbe.Store(true) // confirm at the next probe
	default:
		e.seen, e.candidate = map[string]bool{ident: true}, ""
		e.mu.Unlock()
		refresh := n.refreshProbe.Load()
		n.retire(fmt.Errorf("%w: freshly dialled connections reach another server than before", errReplicaMoved))
		// The probe connection that found it is a fresh one: no need to
		// dial again.
		n.refreshProbe.Store(refresh)
		return
	}
	e.mu.Unlock()
}

// errReplicaMoved is the cause of a replica's EndpointMoved event.
var errReplicaMoved = errors.New("the replica's endpoint leads to another server")
