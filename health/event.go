package health

import "time"

// EventKind says what an Event reports.
type EventKind uint8

const (
	// StateChanged: the node went From one State To another (available,
	// unavailable or lagging).
	StateChanged EventKind = iota
	// RoleChanged: the server now reports a role its configuration does
	// not expect (a replica that is writable: promoted?; a primary that is
	// read-only: demoted?), or the expected one again. ReadOnly says what
	// it reports, Cause (wrapping ErrRoleMismatch) is set while the role is
	// unexpected; From and To are both the node's current State.
	RoleChanged
	// EndpointMoved: the node's address (a DNS name, a virtual IP, a
	// proxy) now leads to another server than the one its connections
	// reached: a switchover moved it. Those connections were retired (the
	// idle ones closed, the others closed when they come back) and new
	// ones reach the new server. Cause says what showed it.
	EndpointMoved
	// NodeAdded: a source of replicas (dsn.Discovery) found a new one,
	// and its first probe answered: it takes reads from now on.
	NodeAdded
	// NodeRemoved: a replica left its source: it gets no new statement,
	// those running on it finish, then its connections are closed. Cause
	// says why.
	NodeRemoved
	// DiscoveryFailed: a source of replicas could not be asked, or
	// answered nothing usable. The replicas it found last stay. Node
	// names the source; Cause says what failed, and is nil when the
	// source answers again.
	DiscoveryFailed
)

// String returns "state", "role", "endpoint", "added", "removed" or
// "discovery", and "unknown" for any other value.
func (k EventKind) String() string {
	switch k {
	case StateChanged:
		return "state"
	case RoleChanged:
		return "role"
	case EndpointMoved:
		return "endpoint"
	case NodeAdded:
		return "added"
	case NodeRemoved:
		return "removed"
	case DiscoveryFailed:
		return "discovery"
	}
	return "unknown"
}

// Event is one change of a node: a transition between states (Kind
// StateChanged), a change of the role its server reports (Kind
// RoleChanged), or its endpoint found leading to another server (Kind
// EndpointMoved). However many statements observe the same failure, a
// transition is made, and reported, once.
type Event struct {
	// Kind says what changed.
	Kind EventKind
	// Node is the node's name from the DSN ("primary", "replica1", ...).
	Node string
	// Role is the node's configured role: "primary" or "replica".
	Role string
	// From and To are the states before and after a StateChanged event;
	// both are the current state for RoleChanged.
	From, To State
	// Cause says why the node became Unavailable (the connection error,
	// confirmed by a probe) or Lagging (its measured lag), or, for
	// RoleChanged, why its role is unexpected (wrapping ErrRoleMismatch).
	// It is nil for a return to Available and to the expected role.
	Cause error
	// Downtime is, when the node leaves Unavailable, how long it was
	// unavailable; 0 otherwise.
	Downtime time.Duration
	// ReadOnly is, for RoleChanged, whether the server reports itself
	// read-only.
	ReadOnly bool
	// At is when the change happened.
	At time.Time
}
