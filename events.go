package rwpool

import (
	"github.com/rwpool/rwpool/health"
)

// State is where a node stands with routing; NodeStats.State, Event.From
// and Event.To hold one. Compare it with the constants
// (n.State == rwpool.Lagging); String gives "available", "unavailable" or
// "lagging". It is the same type as health.State.
type State = health.State

// The states of a node. Every node starts Available.
const (
	// Available: routing may choose the node for every statement it is fit
	// for (writes and reads on the primary, reads on a replica).
	Available = health.Available
	// Unavailable: the node's circuit breaker is open. A connection-level
	// failure was confirmed by a probe on a fresh connection; the node gets
	// no statements, and a statement that needs it fails at once with an
	// error wrapping ErrUnavailable, until a health probe succeeds
	// (checked every check_interval).
	Unavailable = health.Unavailable
	// Lagging: a replica that answers its probes but was measured further
	// behind the primary than max_lag. It gets no new reads until its lag
	// is under half of max_lag; statements already running on it finish.
	Lagging = health.Lagging
)

// Event is one change of a node, passed to the handler set with
// WithEventHandler and logged through the logger set with WithLogger
// (options of NewConnector and Configure). However many statements see the same failure at
// once, a transition happens, and is reported, once; the events of one
// node arrive in order. It is the same type as health.Event. Its fields:
//
//   - Kind: StateChanged for a transition, RoleChanged for a change of
//     the role the server reports.
//   - Node: the node's name from the DSN ("primary", "replica1", or its
//     name= attribute). Role: its configured role, "primary" or "replica".
//   - From, To: the states before and after a StateChanged event; both
//     the node's current state for RoleChanged.
//   - Cause: why the node became Unavailable (the connection error, with
//     the confirming probe's), why it became Lagging (its measured lag), or
//     for RoleChanged, why its reported role is unexpected (wrapping
//     ErrRoleMismatch). nil when a node becomes Available again or reports
//     its expected role again. Node DSNs never appear in it.
//   - Downtime: when a node leaves Unavailable, how long it was unavailable.
//   - ReadOnly: for RoleChanged, whether the server reports itself
//     read-only.
//   - At: when the change happened.
type Event = health.Event

// EventKind says what an Event reports: StateChanged or RoleChanged. It is
// the same type as health.EventKind.
type EventKind = health.EventKind

// The kinds of Event.
const (
	// StateChanged: the node went From one State To another: it became
	// unavailable (Cause says why), available again (Downtime says after
	// how long), lagging (Cause gives the lag) or caught up.
	StateChanged = health.StateChanged
	// RoleChanged: the server reports a role its configuration does not
	// expect (a writable replica: promoted?; a read-only primary: demoted?,
	// and then writes fail with ErrReadOnly), with Cause wrapping
	// ErrRoleMismatch; or it reports the expected role again, with Cause
	// nil. ReadOnly says what it reports.
	RoleChanged = health.RoleChanged
	// EndpointMoved: the node's address (DNS name, virtual IP, proxy) now
	// leads to another server than its connections reached, as after a
	// switchover behind an endpoint: rwpool retired those connections and
	// goes on with new ones. Cause says what showed it.
	EndpointMoved = health.EndpointMoved
	// NodeAdded: discovery (the DSN's discover items) found a replica and
	// its first probe answered; it takes reads from now on.
	NodeAdded = health.NodeAdded
	// NodeRemoved: a replica left its source and drains: no new
	// statement goes to it, those running finish, then its connections
	// close. Cause says why.
	NodeRemoved = health.NodeRemoved
	// DiscoveryFailed: a source of replicas could not be asked or answered
	// nothing usable; the replicas it found last stay. Node is the
	// source's name; Cause says what failed, nil once it answers again.
	DiscoveryFailed = health.DiscoveryFailed
)

// notify logs a transition and passes it to the handler; a change of the
// primary also wakes the writes waiting for it.
func (c *Connector) notify(e Event) {
	if p := c.primaryNode(); p != nil && (e.Node == p.cfg.Name || e.Kind == health.RoleChanged) {
		defer c.primaryWatch.signal()
	}
	if l := c.logger.Load(); l != nil {
		switch {
		case e.Kind == health.RoleChanged && e.Cause != nil:
			l.Warn("rwpool: node reports an unexpected role", "node", e.Node, "role", e.Role, "cause", errString(e.Cause))
		case e.Kind == health.RoleChanged:
			l.Info("rwpool: node reports its configured role again", "node", e.Node, "role", e.Role, "read_only", e.ReadOnly)
		case e.Kind == health.NodeAdded:
			l.Info("rwpool: replica found by discovery joins the reads", "node", e.Node)
		case e.Kind == health.NodeRemoved:
			l.Info("rwpool: replica left its source, draining", "node", e.Node, "cause", errString(e.Cause))
		case e.Kind == health.DiscoveryFailed && e.Cause != nil:
			l.Warn("rwpool: discovery failed, keeping the replicas it found last", "source", e.Node, "cause", errString(e.Cause))
		case e.Kind == health.DiscoveryFailed:
			l.Info("rwpool: discovery answers again", "source", e.Node)
		case e.Kind == health.EndpointMoved:
			l.Warn("rwpool: node's endpoint leads to another server: old connections retired", "node", e.Node, "role", e.Role, "cause", errString(e.Cause))
		case e.To == health.Unavailable:
			l.Warn("rwpool: node unavailable", "node", e.Node, "role", e.Role, "cause", errString(e.Cause))
		case e.To == health.Lagging:
			l.Warn("rwpool: replica lagging, out of reads", "node", e.Node, "role", e.Role, "cause", errString(e.Cause))
		case e.From == health.Lagging:
			l.Info("rwpool: replica caught up, back in reads", "node", e.Node, "role", e.Role)
		default:
			l.Info("rwpool: node available again", "node", e.Node, "role", e.Role, "downtime", e.Downtime)
		}
	}
	if f := c.handler.Load(); f != nil && *f != nil {
		(*f)(e)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
