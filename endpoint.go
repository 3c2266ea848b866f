package rwpool

import (
	"errors"
	"fmt"
)

// A replica reached through an endpoint that moves (a read-only service
// name or VIP the failover tooling points at another server) keeps its old
// connections on the old server: the pool's and the health checker's. The
// old server may have been promoted (its reads then load the primary), or
// left behind, no longer replicating (its reads then go stale). Only a new
// dial goes through the moved endpoint, so the health checker dials a
// replica's probe connection anew every endpointCheckEvery probes, and at
// every probe while the replica reports itself writable (a promotion: the
// moment endpoints move), and compares the server it reaches with the one
// it reached before (the first identity read, on whatever probe
// connection, is the baseline; an outage resets it). Another server means the endpoint moved: the old
// generation of connections is retired, as for a demoted primary
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

// sameServer compares the identity of the server a freshly dialled
// connection of n reached with the one before, and retires n's
// connections if it differs.
func (n *node) sameServer(ident string) {
	prev := n.ident.Swap(&ident)
	if prev == nil || *prev == ident {
		return
	}
	n.retire(fmt.Errorf("%w: a freshly dialled connection reaches another server than before", errReplicaMoved))
}

// errReplicaMoved is the cause of a replica's EndpointMoved event.
var errReplicaMoved = errors.New("the replica's endpoint leads to another server")
