package rwpool

import (
	"errors"
	"fmt"

	"github.com/rwpool/rwpool/health"
	"github.com/rwpool/rwpool/pool"
)

// ErrUnavailable is wrapped by every error returned because no node that
// could serve a statement is available. Callers may branch on it with
// errors.Is to degrade instead of retrying at once.
var ErrUnavailable = errors.New("rwpool: unavailable")

// ErrClosed is returned, or wrapped, for a statement issued after the
// Connector (and so the *sql.DB) was closed, and for one that was waiting
// for a connection when it closed. It is the same value as pool.ErrClosed:
// errors.Is(err, ErrClosed) holds for both a closed Connector and a closed
// node pool.
var ErrClosed = pool.ErrClosed

// ErrAcquireTimeout is wrapped by the error of a statement that waited
// acquire_timeout for a connection to a node whose pool was full (pool_size
// connections in use) and got none. The statement did not run and is not
// retried on another node. The error names the node and the pool's
// occupancy. A full pool usually means more concurrent statements than
// pool_size allows: bound them with db.SetMaxOpenConns, or raise pool_size.
// With acquire_timeout=0 only the statement's context bounds the wait, and
// its end is reported as the context's error instead.
var ErrAcquireTimeout = pool.ErrAcquireTimeout

// ErrTooManyWaiters is wrapped by the error of a statement refused at once
// because a node's pool was full and max_waiters statements were already
// waiting for it (with max_waiters=0, whenever the pool is full). The
// statement did not run and is not retried on another node; the error
// names the node. It sheds load instead of queueing without bound.
var ErrTooManyWaiters = pool.ErrTooManyWaiters

// ErrRoleMismatch is wrapped by the Cause of a RoleChanged event while the
// server reports a role its configuration does not expect: a writable
// replica (promoted?) or a read-only primary (demoted?).
var ErrRoleMismatch = health.ErrRoleMismatch

// ErrProbeTimeout is wrapped by the Cause of the Event (and shows in
// NodeStats.LastError) of a node tripped because its health probe got no
// answer within probe_timeout: the sign of a hung server rather than a
// refused connection.
var ErrProbeTimeout = health.ErrProbeTimeout

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
