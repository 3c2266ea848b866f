package health

import (
	"sync"
	"sync/atomic"
	"time"
)

// State is a node's availability.
type State uint32

const (
	// Available nodes receive traffic.
	Available State = iota
	// Unavailable nodes receive no traffic until a probe succeeds.
	Unavailable
	// Lagging replicas answer probes but are further behind their primary
	// than max_lag allows: they serve no reads until they catch up.
	Lagging
)

// String returns "available" or "unavailable".
func (s State) String() string {
	switch s {
	case Available:
		return "available"
	case Unavailable:
		return "unavailable"
	case Lagging:
		return "lagging"
	}
	return "unknown"
}

// EventKind says what an Event reports.
type EventKind uint8

const (
	// StateChanged: the node went From one State To another.
	StateChanged EventKind = iota
	// RoleChanged: the server now reports a role its configuration does
	// not expect (a replica that is writable: promoted?; a primary that is
	// read-only: demoted?), or the expected one again. ReadOnly says what
	// it reports; From and To are both its current State.
	RoleChanged
)

// Event is one state transition of a node, or a change of the role it
// reports.
type Event struct {
	Kind     EventKind
	Node     string        // node name
	Role     string        // "primary" or "replica": its configured role
	From, To State         // the transition
	Cause    error         // why the node became unavailable or lagging, or its role is unexpected; nil otherwise
	Downtime time.Duration // on recovery, how long the node was unavailable
	ReadOnly bool          // for RoleChanged: whether the server reports itself read-only
	At       time.Time     // when the transition happened
}

// Node is the health state of one database node: its breaker. Its methods
// are safe for concurrent use. Create it with NewNode.
type Node struct {
	name, role string
	notify     func(Event)

	state   atomic.Uint32
	lagging atomic.Bool  // behind max_lag: the state once the breaker lets it serve
	lag     atomic.Int64 // last measured replication lag, ns; -1 unknown
	reports atomic.Int32 // what the server reports: roleUnknown, roleWritable, roleReadOnly
	since   atomic.Int64 // UnixNano of the last transition
	trips   atomic.Int64 // transitions to Unavailable
	probe   atomic.Int64 // last successful probe's latency, ns
	mu      sync.Mutex   // serialises transitions with their events
	lastMu  sync.Mutex
	last    error // the cause of the last trip
}

// NewNode returns an available node. notify, if not nil, is called once for
// every transition, synchronously and in order.
func NewNode(name, role string, notify func(Event)) *Node {
	n := &Node{name: name, role: role, notify: notify}
	n.since.Store(time.Now().UnixNano())
	n.lag.Store(-1)
	return n
}

// Name returns the node's name.
func (n *Node) Name() string { return n.name }

// State returns the node's current state.
func (n *Node) State() State { return State(n.state.Load()) }

// Available reports whether the node may receive any traffic, reads
// included. It is one atomic load: routing calls it for every pick.
func (n *Node) Available() bool { return n.state.Load() == uint32(Available) }

// Tripped reports whether the breaker is open: the node is Unavailable.
// A Lagging node is not tripped: what is already routed to it may run.
func (n *Node) Tripped() bool { return n.state.Load() == uint32(Unavailable) }

// Since returns when the node entered its current state.
func (n *Node) Since() time.Time { return time.Unix(0, n.since.Load()) }

// Trips returns how many times the node became unavailable.
func (n *Node) Trips() int64 { return n.trips.Load() }

// LastError returns the cause of the last trip, or nil.
func (n *Node) LastError() error {
	n.lastMu.Lock()
	defer n.lastMu.Unlock()
	return n.last
}

// ProbeLatency returns the latency of the last successful probe.
func (n *Node) ProbeLatency() time.Duration { return time.Duration(n.probe.Load()) }

// SetProbeLatency records a successful probe's latency.
func (n *Node) SetProbeLatency(d time.Duration) { n.probe.Store(int64(d)) }

// Trip makes the node unavailable because of cause. It reports whether this
// call made the transition: however many callers trip the node at once,
// exactly one does, and exactly one Event is sent.
func (n *Node) Trip(cause error) bool {
	if n.Tripped() {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	from := n.State()
	if from == Unavailable || !n.state.CompareAndSwap(uint32(from), uint32(Unavailable)) {
		return false
	}
	now := time.Now()
	n.since.Store(now.UnixNano())
	n.trips.Add(1)
	n.lastMu.Lock()
	n.last = cause
	n.lastMu.Unlock()
	if n.notify != nil {
		n.notify(Event{Node: n.name, Role: n.role, From: from, To: Unavailable, Cause: cause, At: now})
	}
	return true
}

// Recover closes the breaker: the node becomes Available again, or
// Lagging if its last lag measurement said so. It reports whether this
// call made the transition; the Event carries how long the node was down.
func (n *Node) Recover() bool {
	if !n.Tripped() {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	to := Available
	if n.lagging.Load() {
		to = Lagging
	}
	if !n.state.CompareAndSwap(uint32(Unavailable), uint32(to)) {
		return false
	}
	now := time.Now()
	down := now.Sub(time.Unix(0, n.since.Load()))
	n.since.Store(now.UnixNano())
	if n.notify != nil {
		n.notify(Event{Node: n.name, Role: n.role, From: Unavailable, To: to, Downtime: down, At: now})
	}
	return true
}

// Lag returns the last measured replication lag; ok is false before the
// first measurement or when the last one failed.
func (n *Node) Lag() (lag time.Duration, ok bool) {
	l := n.lag.Load()
	return time.Duration(l), l >= 0
}

// SetLag records a lag measurement; a negative lag means unknown.
func (n *Node) SetLag(d time.Duration) { n.lag.Store(int64(max(d, -1))) }

// LaggingVerdict reports whether the last lag verdict was "lagging": the
// node is Lagging, or tripped and will recover as Lagging.
func (n *Node) LaggingVerdict() bool { return n.lagging.Load() }

// SetLagging takes the node out of reads (Lagging) or puts it back
// (Available), with cause saying why. While the breaker is open the
// verdict is only remembered: Recover applies it. It reports whether this
// call made a transition, which sends one Event.
func (n *Node) SetLagging(lagging bool, cause error) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lagging.Store(lagging)
	from, to := Available, Lagging
	if !lagging {
		from, to, cause = Lagging, Available, nil
	}
	if !n.state.CompareAndSwap(uint32(from), uint32(to)) {
		return false
	}
	now := time.Now()
	n.since.Store(now.UnixNano())
	if n.notify != nil {
		n.notify(Event{Node: n.name, Role: n.role, From: from, To: to, Cause: cause, At: now})
	}
	return true
}

// What a server reports about its role.
const (
	roleUnknown int32 = iota
	roleWritable
	roleReadOnly
)

// ReadOnly returns what the server last reported: whether it is read-only,
// and whether it has reported at all.
func (n *Node) ReadOnly() (readOnly, known bool) {
	r := n.reports.Load()
	return r == roleReadOnly, r != roleUnknown
}

// RoleMismatch reports whether the server's reported role contradicts its
// configured one: a writable replica or a read-only primary.
func (n *Node) RoleMismatch() bool {
	ro, known := n.ReadOnly()
	return known && ro == (n.role == "primary")
}

// SetReadOnly records what the server reports about its role. When that
// starts or stops contradicting the configured role (see RoleMismatch), a
// RoleChanged Event is sent, with cause saying what it means.
func (n *Node) SetReadOnly(readOnly bool) {
	r := roleWritable
	if readOnly {
		r = roleReadOnly
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	before := n.RoleMismatch()
	prev := n.reports.Swap(r)
	after := n.RoleMismatch()
	if prev == r || before == after || (prev == roleUnknown && !after) || n.notify == nil {
		return
	}
	var cause error
	if after {
		cause = roleError(n.name, n.role, readOnly)
	}
	st := n.State()
	n.notify(Event{Kind: RoleChanged, Node: n.name, Role: n.role, From: st, To: st,
		Cause: cause, ReadOnly: readOnly, At: time.Now()})
}
