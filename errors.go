package rwpool

import (
	"errors"
	"fmt"
)

// ErrUnavailable is wrapped by every error returned because no node that
// could serve a statement is available. Callers may branch on it with
// errors.Is to degrade instead of retrying at once.
var ErrUnavailable = errors.New("rwpool: unavailable")

// ErrClosed is returned for statements issued after the Connector (and so
// the *sql.DB) was closed.
var ErrClosed = errors.New("rwpool: connector closed")

// nodeError names the node an error happened on. It never holds a DSN.
type nodeError struct {
	node string
	op   string
	err  error
}

func (e *nodeError) Error() string {
	return fmt.Sprintf("rwpool: node %s: %s: %v", e.node, e.op, e.err)
}

func (e *nodeError) Unwrap() error { return e.err }

// ErrReadOnly is wrapped by the error of a write refused because the
// primary reports itself read-only (demoted, or read_only set): rwpool does
// not send writes to such a node. It also wraps ErrUnavailable.
var ErrReadOnly = errors.New("rwpool: primary is read-only")

// readOnlyError is returned, at once, for a write while the primary
// reports itself read-only.
type readOnlyError struct{ node string }

func (e *readOnlyError) Error() string {
	return "rwpool: node " + e.node + ": write refused: the primary reports itself read-only (demoted?)"
}

func (e *readOnlyError) Is(target error) bool {
	return target == ErrReadOnly || target == ErrUnavailable
}

// writable returns an error when the primary reports itself read-only.
func (c *Connector) writable() error {
	if c.primary.health.RoleMismatch() {
		return &readOnlyError{node: c.primary.cfg.Name}
	}
	return nil
}
