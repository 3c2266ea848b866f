package rwpool

import (
	"errors"
	"fmt"
	"sync"

	"github.com/rwpool/rwpool/internal/replication"
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
// connection, is the first one known). See sameServer for when that is a
// move: the old generation of connections is then retired, as for a
// demoted primary (fence.go), and an EndpointMoved event says so.
//
// What a server is: the part of its identity that survives a restart
// (replication.IdentityServer): PostgreSQL's address and port, MySQL's host
// name, port and server_id. A server restarted (PostgreSQL's start time
// changed) is the same server, whether or not the checker saw its
// connection break: its old connections are gone, nothing is left to
// retire. So are servers taking turns on one virtual IP, for the same
// reason: a connection opened before the address moved cannot reach the
// old holder any more, and fails on its own.
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

// endpointMoveDials is how many fresh dials in a row must reach one
// server that is none of those known behind an endpoint for it to have
// moved, once the endpoint was seen leading to a known one that many
// times in a row; after fewer, the dials of both runs must add up to twice
// endpointMoveDials. A run of new servers that are not all one (a move to
// a balancing endpoint) is a move after 4 × endpointMoveDials dials.
//
// An endpoint balancing at random over k servers looks like a move only
// while it has not yet been seen to lead to two of them (each known server
// reached again makes the others known): for two, three or four servers
// taken at random, about once in 3,000, 40,000 and 7,000 starts
// (simulated), instead of at every other switch. A real move is found
// endpointMoveDials probes after its first fresh dial (sameServer asks
// for a fresh dial at every probe meanwhile), 2 × endpointMoveDials
// at most right after the first dial.
const endpointMoveDials = 8

// endpointSeen is what a replica's freshly dialled probe connections
// found behind its endpoint since its connections were last retired, and
// for a primary, which server reported it read-only.
type endpointSeen struct {
	mu      sync.Mutex
	servers map[string]bool // servers known behind the endpoint; nil before the first
	known   int             // identities read in a row that were of known servers, before the run
	run     map[string]bool // unknown servers the last runLen fresh dials reached
	runLen  int             // fresh dials in a row that reached no known server
	adopt   bool            // reset: the next server reached is known, not a move
	reads   int             // identities read since the servers were last taken as new (single)
	seq     uint64          // identities recorded (sameServer), ever: a pool dial's is stale once another came in since it began

	roSeen   bool   // a primary reported read-only, since it last reported writable (primaryMoved)
	readOnly string // the server it first reported so on; "" if unknown
	movedTo  string // the server a primary's endpoint was last found moved to (firstMove)
}

// firstMove reports whether an endpoint found to lead to server
// (IdentityServer form, "" if unknown) is news: not the server it was last
// found moved to. The fence (a write answered read-only), the health
// checker (a primary read-only, then writable on another server) and a
// replica's run of fresh dials (recordServer) can each see the same move;
// it is one move, retired and reported once.
func (e *endpointSeen) firstMove(server string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if server != "" && server == e.movedTo {
		return false
	}
	e.movedTo = server
	return true
}

// serverOf is ident's IdentityServer, "" for "".
func (n *node) serverOf(ident string) string {
	if ident == "" {
		return ""
	}
	return replication.IdentityServer(replication.Flavor(n.c.flav.Load()), ident)
}

// balancing reports whether the endpoint was seen to lead to several
// servers at once (a balancing proxy, a DNS name over several replicas):
// what one of its connections has applied says nothing of another's.
func (e *endpointSeen) balancing() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.servers) > 1
}

// single reports whether the endpoint is known to lead to one server: of
// endpointLearnDials identities read at least since its server was last
// taken as new, all were of one server. A balancing endpoint is learnt
// only when it is seen to lead to a second server; until this many dials
// said otherwise, any endpoint may be one. Not while fresh dials are
// reaching another server (a run, runLen): that may be a move or a
// balancer, and the reads counted include the run's.
func (e *endpointSeen) single() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.servers) == 1 && e.runLen == 0 && e.reads >= endpointLearnDials
}

// endpointLearnDials is how many identities, each read on a freshly
// dialled connection, must all name one server for an endpoint to be
// known to lead to one server (single). The health checker reads them in
// one burst (learnEndpoint) when it first reaches a server behind the
// endpoint, so the endpoint is known either way within the first probe
// instead of after that many fifth checks. An endpoint balancing at random
// over two servers passes for a single one once in 2^15 bursts; one that
// takes turns (round robin) or counts connections shows its second server
// at the second dial.
const endpointLearnDials = 16

// learning reports whether the endpoint is being learnt: a server was
// reached behind it, no other yet, and not by enough fresh dials to know
// that it leads to that one only (single).
func (e *endpointSeen) learning() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.servers) == 1 && e.runLen == 0 && e.reads < endpointLearnDials
}

// suspecting reports whether fresh dials in a row have reached servers not
// known behind the endpoint, not yet enough to be a move (confirmMove).
func (e *endpointSeen) suspecting() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runLen > 0
}

func (e *endpointSeen) isKnown() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.servers != nil
}

// reset makes the next server reached a known one, not a move: after an
// outage, the connections of before are gone. If that server is not
// known, the others are forgotten: the endpoint moved during the outage.
func (e *endpointSeen) reset() {
	e.mu.Lock()
	e.adopt = true
	e.mu.Unlock()
}

// moved reports whether the current run of fresh dials to unknown
// servers is a move (see endpointMoveDials).
func (e *endpointSeen) moved() bool {
	if len(e.run) > 1 {
		return e.runLen >= 4*endpointMoveDials
	}
	return e.runLen >= endpointMoveDials && e.runLen+e.known >= 2*endpointMoveDials
}

// sameServer records the identity of the server a freshly dialled
// connection of n reached, and retires n's connections if the endpoint
// moved. An endpoint may also balance over several servers (a read-only
// service over all replicas), whose fresh dials reach one or another, in
// any order. So a server not known is a move only once enough fresh dials
// in a row (made at the next probes) have reached no known server (see
// endpointMoveDials); a known one reached in between shows a balancing
// endpoint, and the servers of the run become known ones. probe says
// whether the connection is the health checker's (a fresh probe
// connection: the next probe need not dial again after a move) rather
// than one the pool dialled.
func (n *node) sameServer(ident string, probe bool) {
	n.recordServer(ident, probe, 0, false)
}

// dialSeq returns the sequence number a pool dial starting now compares
// at its end (sameServerDialled), and whether the endpoint is known.
func (e *endpointSeen) dialSeq() (uint64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seq, e.servers != nil
}

// sameServerDialled is sameServer for a pool dial that began at seq
// (dialSeq): its identity is dropped if another was recorded since, as
// it may have been reached before a move the other shows (or recorded).
func (n *node) sameServerDialled(ident string, seq uint64) {
	n.recordServer(ident, false, seq, true)
}

// recordServer records ident (sameServer), unless checkSeq and another
// identity was recorded since seq, and acts on what it shows: an unknown
// server is confirmed at the next probe, a move retires n's connections.
func (n *node) recordServer(ident string, probe bool, seq uint64, checkSeq bool) {
	server := replication.IdentityServer(replication.Flavor(n.c.flav.Load()), ident)
	e := &n.endpoint
	e.mu.Lock()
	if checkSeq && e.seq != seq {
		e.mu.Unlock()
		return
	}
	unknown, moved := e.recordLocked(server)
	e.mu.Unlock()
	switch {
	case moved > 0 && !e.firstMove(server):
		// The fence (a write answered read-only, checked on a fresh
		// dial) found this very move first and retired the connections:
		// one move, reported once (TestSimulation: false-move, a replica
		// endpoint moved back onto the server just promoted; the fence and
		// this run of dials reported it 4 ms apart).
	case moved > 0:
		refresh := n.refreshProbe.Load()
		n.retire(fmt.Errorf("%w: %d freshly dialled connections in a row reach other servers than before", errReplicaMoved, moved))
		if probe {
			// The probe connection that found it is a fresh one: no
			// need to dial again.
			n.refreshProbe.Store(refresh)
		}
	case unknown:
		n.refreshProbe.Store(true) // confirm at the next probe
	}
}

// recordLocked counts a fresh dial that reached server, with e.mu held. It
// reports whether the server is not known behind the endpoint, and, when
// that completes a move (moved), the dials of the run that showed it
// (else 0).
func (e *endpointSeen) recordLocked(server string) (unknown bool, moved int) {
	e.seq++
	e.reads++
	adopt := e.adopt
	e.adopt = false
	switch {
	case adopt && !e.servers[server] && len(e.servers) > 1:
		// A balancing endpoint back from an outage that reaches a server
		// it had not met: one more behind the balancer. Forgetting the
		// others would forget a server that a node barred from reads
		// leads to (balancerbar.go) while the balancer still does.
		e.servers[server] = true
		e.known, e.run, e.runLen = 1, nil, 0
	case e.servers == nil || adopt && !e.servers[server]:
		// A first server, or a new one after an outage: what the
		// endpoint leads to is learnt anew (learnEndpoint).
		e.servers, e.known, e.run, e.runLen, e.reads = map[string]bool{server: true}, 1, nil, 0, 1
	case e.servers[server]:
		if e.runLen > 0 {
			for s := range e.run {
				e.servers[s] = true
			}
			e.known, e.run, e.runLen = 0, nil, 0
		}
		e.known++
	default:
		if e.run == nil {
			e.run = map[string]bool{}
		}
		e.run[server] = true
		if e.runLen++; !e.moved() {
			return true, 0
		}
		dials := e.runLen
		// What the endpoint leads to now is learnt from the run's dials
		// on (learnEndpoint).
		e.servers, e.known, e.run, e.runLen, e.reads = e.run, e.runLen, nil, 0, e.runLen
		return true, dials
	}
	return false, 0
}

// wantsIdentity reports whether the status of n just read on conn (st)
// calls for the identity of its server: on a replica's freshly dialled
// connection (dialled), or its first; on a primary while it reports
// itself read-only, and at the probe that finds it writable again
// (primaryMoved).
func (n *node) wantsIdentity(primary bool, st replication.Status, dialled bool) bool {
	if primary {
		return st.ReadOnly || n.health.RoleMismatch()
	}
	return dialled || !n.endpoint.isKnown()
}

// primaryMoved records on which server (ident, "" if unknown) the primary
// n reported itself read-only (ro), and reports whether its answer of
// writable again, after read-only (wasRO), comes from another server: the
// endpoint moved to a new primary. The same server writable again (its
// read-only setting toggled, a restart) is a role change: its connections
// are still the right ones. Without both identities (an identity query
// timed out on a slow server) it is no move: taken for one, a healthy
// pool was retired and EndpointMoved raised for an endpoint nobody moved
// (TestSimulation). A real switchover whose identities went unread is
// still found by the fence: a write answered read-only dials anew and
// compares the servers (fence.go).
func (n *node) primaryMoved(wasRO, ro bool, ident string) bool {
	server := ident
	if ident != "" {
		server = replication.IdentityServer(replication.Flavor(n.c.flav.Load()), ident)
	}
	e := &n.endpoint
	e.mu.Lock()
	defer e.mu.Unlock()
	if ro {
		if !e.roSeen {
			// The first server to answer read-only (on the checker's
			// connection of before, as a rule): where the old
			// connections are.
			e.roSeen, e.readOnly = true, server
		}
		return false
	}
	old := e.readOnly
	e.roSeen, e.readOnly = false, ""
	return wasRO && old != "" && server != "" && old != server
}

// errReplicaMoved is the cause of a replica's EndpointMoved event.
var errReplicaMoved = errors.New("the replica's endpoint leads to another server")
