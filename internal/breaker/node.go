package breaker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool/health"
)

// The states and events of package health, as used here.
type (
	// State is health.State.
	State = health.State
	// Event is health.Event.
	Event = health.Event
)

const (
	available   = health.Available
	unavailable = health.Unavailable
	lagging     = health.Lagging
)

// Node is the breaker of one database node: its State and what drives it.
// Its methods are safe for concurrent use. Create it with NewNode.
//
// The hot reads (Available, Tripped, State) are single atomic loads. The
// breaker's state fields (state, since, trips, last) change together under
// stateMu, so Snapshot reads them as of one moment; transitions are
// serialised by mu, which is also held while the Event is delivered, so
// events arrive in order and never interleave.
type Node struct {
	name   string
	role   atomic.Pointer[string] // the role routing gives the node: configured, or since a promotion (SetRole)
	notify func(Event)

	mu      sync.Mutex // serialises transitions with their events
	stateMu sync.Mutex // guards writes of state, since, trips and last together, and last's reads
	state   atomic.Uint32
	since   atomic.Int64 // UnixNano of the last transition
	trips   atomic.Int64 // transitions to Unavailable
	last    error        // the cause of the last trip

	lagging atomic.Bool  // behind max_lag: the state once the breaker lets it serve
	lag     atomic.Int64 // last measured replication lag, ns; -1 unknown
	reports atomic.Int32 // what the server reports: roleUnknown, roleWritable, roleReadOnly
	probe   atomic.Int64 // last successful probe's latency, ns
}

// NewNode returns an Available node named name with the configured role
// ("primary" or "replica"). notify, if not nil, is called once for every
// transition and role change, synchronously and in order; it must not call
// the Node's transition methods.
func NewNode(name, role string, notify func(Event)) *Node {
	n := &Node{name: name, notify: notify}
	n.role.Store(&role)
	n.since.Store(time.Now().UnixNano())
	n.lag.Store(-1)
	return n
}

// State returns the node's current state.
func (n *Node) State() State { return State(n.state.Load()) }

// Available reports whether routing may choose the node: it is neither
// Unavailable nor Lagging. It is one atomic load: routing calls it for
// every pick.
func (n *Node) Available() bool { return n.state.Load() == uint32(available) }

// Tripped reports whether the breaker is open: the node is Unavailable.
// A Lagging node is not tripped: what is already routed to it may run.
func (n *Node) Tripped() bool { return n.state.Load() == uint32(unavailable) }

// Since returns when the node entered its current state.
func (n *Node) Since() time.Time { return time.Unix(0, n.since.Load()) }

// Trips returns how many times the node became Unavailable.
func (n *Node) Trips() int64 { return n.trips.Load() }

// LastError returns the cause of the last trip, or nil.
func (n *Node) LastError() error {
	n.stateMu.Lock()
	defer n.stateMu.Unlock()
	return n.last
}

// Snapshot is the breaker's state as of one moment.
type Snapshot struct {
	State     State
	Since     time.Time // when the node entered State
	Trips     int64     // times it became Unavailable
	LastError error     // the cause of the last trip, or nil
}

// Available reports whether routing may choose the node: State is
// Available.
func (s Snapshot) Available() bool { return s.State == available }

// Snapshot returns the state, when it was entered, the trip count and the
// last trip's cause, all as of one moment: a snapshot taken while the node
// trips never shows the new state with the old count or cause.
func (n *Node) Snapshot() Snapshot {
	n.stateMu.Lock()
	defer n.stateMu.Unlock()
	return Snapshot{
		State:     State(n.state.Load()),
		Since:     time.Unix(0, n.since.Load()),
		Trips:     n.trips.Load(),
		LastError: n.last,
	}
}

// setStateLocked moves the node to state to at now; n.mu must be held. A
// trip (to Unavailable) counts and records its cause. It reports whether
// the node was in state from.
func (n *Node) setStateLocked(from, to State, now time.Time, cause error) bool {
	n.stateMu.Lock()
	defer n.stateMu.Unlock()
	if !n.state.CompareAndSwap(uint32(from), uint32(to)) {
		return false
	}
	n.since.Store(now.UnixNano())
	if to == unavailable {
		n.trips.Add(1)
		n.last = cause
	}
	return true
}

// ProbeLatency returns the latency of the last successful probe.
func (n *Node) ProbeLatency() time.Duration { return time.Duration(n.probe.Load()) }

// SetProbeLatency records a successful probe's latency.
func (n *Node) SetProbeLatency(d time.Duration) { n.probe.Store(int64(d)) }

// Trip makes the node Unavailable because of cause. It reports whether
// this call made the transition: however many callers trip the node at
// once, exactly one does, and exactly one Event is sent.
func (n *Node) Trip(cause error) bool {
	if n.Tripped() {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	from := n.State()
	now := time.Now()
	if from == unavailable || !n.setStateLocked(from, unavailable, now, cause) {
		return false
	}
	if n.notify != nil {
		n.notify(Event{Node: n.name, Role: n.roleName(), From: from, To: unavailable, Cause: cause, At: now})
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
	to := available
	if n.lagging.Load() {
		to = lagging
	}
	downSince := n.Since()
	now := time.Now()
	if !n.setStateLocked(unavailable, to, now, nil) {
		return false
	}
	if n.notify != nil {
		n.notify(Event{Node: n.name, Role: n.roleName(), From: unavailable, To: to, Downtime: now.Sub(downSince), At: now})
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
func (n *Node) SetLagging(isLagging bool, cause error) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lagging.Store(isLagging)
	from, to := available, lagging
	if !isLagging {
		from, to, cause = lagging, available, nil
	}
	now := time.Now()
	if !n.setStateLocked(from, to, now, nil) {
		return false
	}
	if n.notify != nil {
		n.notify(Event{Node: n.name, Role: n.roleName(), From: from, To: to, Cause: cause, At: now})
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
	return known && ro == (n.roleName() == "primary")
}

// SetReadOnly records what the server reports about its role. When that
// starts or stops contradicting the configured role (see RoleMismatch), a
// RoleChanged Event is sent, with a cause wrapping health.ErrRoleMismatch
// while the role is unexpected.
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
		cause = roleError(n.name, n.roleName(), readOnly)
	}
	st := n.State()
	n.notify(Event{Kind: health.RoleChanged, Node: n.name, Role: n.roleName(), From: st, To: st,
		Cause: cause, ReadOnly: readOnly, At: time.Now()})
}

// roleError says what an unexpected reported role means.
func roleError(name, role string, readOnly bool) error {
	if readOnly {
		return fmt.Errorf("%s %s reports read-only (demoted?): %w", role, name, health.ErrRoleMismatch)
	}
	return fmt.Errorf("%s %s reports writable (promoted?): %w", role, name, health.ErrRoleMismatch)
}

// roleName returns the role routing gives the node.
func (n *Node) roleName() string { return *n.role.Load() }

// SetRole records the role routing now gives the node ("primary" or
// "replica"), after a promotion: RoleMismatch and the events compare what
// the server reports with it.
func (n *Node) SetRole(role string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.role.Store(&role)
}
