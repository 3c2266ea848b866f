package rwpool

import (
	"github.com/rwpool/rwpool/health"
)

// State is a node's availability, as in Event.From and Event.To.
type State = health.State

// The states of a node.
const (
	Available   = health.Available
	Unavailable = health.Unavailable
	Lagging     = health.Lagging // a replica behind max_lag: no reads until it catches up
)

// Event is one change of a node: it became unavailable (Cause says why),
// available again (Downtime says after how long), lagging or caught up
// (max_lag), or, with Kind RoleChanged, it reports a role its
// configuration does not expect (Cause says which), or the expected one
// again.
type Event = health.Event

// EventKind says what an Event reports.
type EventKind = health.EventKind

// The kinds of Event.
const (
	StateChanged = health.StateChanged
	RoleChanged  = health.RoleChanged
)

// ErrRoleMismatch is wrapped by the Cause of a RoleChanged event.
var ErrRoleMismatch = health.ErrRoleMismatch

// notify logs a transition and passes it to the handler.
func (c *Connector) notify(e Event) {
	if l := c.logger.Load(); l != nil {
		switch {
		case e.Kind == health.RoleChanged && e.Cause != nil:
			l.Warn("rwpool: node reports an unexpected role", "node", e.Node, "role", e.Role, "cause", errString(e.Cause))
		case e.Kind == health.RoleChanged:
			l.Info("rwpool: node reports its configured role again", "node", e.Node, "role", e.Role, "read_only", e.ReadOnly)
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
