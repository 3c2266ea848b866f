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
