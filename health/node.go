package health

import (
	"sync/atomic"
	"time"
)

// State is a node's availability.
type State uint32

const (
	// Available nodes receive traffic.
	Available State = iota
	// Unavailable nodes receive no traffic until they recover.
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

// Node is the health state of one database node. Its methods are safe for
// concurrent use; the zero value is not usable, call NewNode.
type Node struct {
	name  string
	state atomic.Uint32
	since atomic.Int64 // UnixNano of the last transition
	trips atomic.Int64 // transitions to Unavailable
}

// NewNode returns an available node called name.
func NewNode(name string) *Node {
	n := &Node{name: name}
	n.since.Store(time.Now().UnixNano())
	return n
}

// Name returns the node's name.
func (n *Node) Name() string { return n.name }

// State returns the node's current state.
func (n *Node) State() State { return State(n.state.Load()) }

// Available reports whether the node may receive traffic.
func (n *Node) Available() bool { return n.state.Load() == uint32(Available) }

// Since returns when the node entered its current state.
func (n *Node) Since() time.Time { return time.Unix(0, n.since.Load()) }

// Trips returns how many times the node became unavailable.
func (n *Node) Trips() int64 { return n.trips.Load() }

// MarkUnavailable moves the node to Unavailable. It reports whether this call
// made the transition; concurrent callers see exactly one true.
func (n *Node) MarkUnavailable() bool {
	if !n.state.CompareAndSwap(uint32(Available), uint32(Unavailable)) {
		return false
	}
	n.since.Store(time.Now().UnixNano())
	n.trips.Add(1)
	return true
}

// MarkAvailable moves the node to Available. It reports whether this call
// made the transition.
func (n *Node) MarkAvailable() bool {
	if !n.state.CompareAndSwap(uint32(Unavailable), uint32(Available)) {
		return false
	}
	n.since.Store(time.Now().UnixNano())
	return true
}
