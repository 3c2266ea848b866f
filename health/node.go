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
)

// String returns "available" or "unavailable".
func (s State) String() string {
	switch s {
	case Available:
		return "available"
	case Unavailable:
		return "unavailable"
	}
	return "unknown"
}

// Event is one state transition of a node.
type Event struct {
	Node     string        // node name
	Role     string        // "primary" or "replica"
	From, To State         // the transition
	Cause    error         // why the node became unavailable; nil on recovery
	Downtime time.Duration // on recovery, how long the node was unavailable
	At       time.Time     // when the transition happened
}

// Node is the health state of one database node: its breaker. Its methods
// are safe for concurrent use. Create it with NewNode.
type Node struct {
	name, role string
	notify     func(Event)

	state  atomic.Uint32
	since  atomic.Int64 // UnixNano of the last transition
	trips  atomic.Int64 // transitions to Unavailable
	probe  atomic.Int64 // last successful probe's latency, ns
	mu     sync.Mutex   // serialises transitions with their events
	lastMu sync.Mutex
	last   error // the cause of the last trip
}

// NewNode returns an available node. notify, if not nil, is called once for
// every transition, synchronously and in order.
func NewNode(name, role string, notify func(Event)) *Node {
	n := &Node{name: name, role: role, notify: notify}
	n.since.Store(time.Now().UnixNano())
	return n
}

// Name returns the node's name.
func (n *Node) Name() string { return n.name }

// State returns the node's current state.
func (n *Node) State() State { return State(n.state.Load()) }

// Available reports whether the node may receive traffic. It is one atomic
// load: routing calls it for every pick.
func (n *Node) Available() bool { return n.state.Load() == uint32(Available) }

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
	if !n.Available() {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.state.CompareAndSwap(uint32(Available), uint32(Unavailable)) {
		return false
	}
	now := time.Now()
	n.since.Store(now.UnixNano())
	n.trips.Add(1)
	n.lastMu.Lock()
	n.last = cause
	n.lastMu.Unlock()
	if n.notify != nil {
		n.notify(Event{Node: n.name, Role: n.role, From: Available, To: Unavailable, Cause: cause, At: now})
	}
	return true
}

// Recover makes the node available again. It reports whether this call made
// the transition; the Event carries how long the node was down.
func (n *Node) Recover() bool {
	if n.Available() {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.state.CompareAndSwap(uint32(Unavailable), uint32(Available)) {
		return false
	}
	now := time.Now()
	down := now.Sub(time.Unix(0, n.since.Load()))
	n.since.Store(now.UnixNano())
	if n.notify != nil {
		n.notify(Event{Node: n.name, Role: n.role, From: Unavailable, To: Available, Downtime: down, At: now})
	}
	return true
}
