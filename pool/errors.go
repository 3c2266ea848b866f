package pool

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Sentinel errors. Errors returned by Acquire wrap one of them, a context
// error or a dial error; test with errors.Is.
var (
	// ErrClosed: the pool has been closed.
	ErrClosed = errors.New("rwpool: closed")
	// ErrAcquireTimeout: Acquire waited AcquireTimeout without getting a
	// connection.
	ErrAcquireTimeout = errors.New("rwpool: acquire timeout")
	// ErrTooManyWaiters: the pool was full and MaxWaiters Acquire calls were
	// already waiting.
	ErrTooManyWaiters = errors.New("rwpool: too many waiters")
)

// Error is the type of every error Acquire returns. It names the node and
// wraps the cause (ErrClosed, ErrAcquireTimeout, ErrTooManyWaiters,
// context.Canceled, context.DeadlineExceeded, or the driver's dial error),
// so errors.Is and errors.As see through it. Its text is one line, e.g.
//
//	rwpool: node replica1: acquire timeout after 10s (in use 50/50, waiting 12)
//	rwpool: node primary: connect: dial tcp 10.0.0.1:5432: connection refused
//
// The pool never puts a DSN in it; a driver's own dial error is quoted as is.
type Error struct {
	// Node is Config.Name of the pool that failed.
	Node string
	// Err is the cause.
	Err error
	msg string // what happened, after "rwpool: node <Node>: "
}

// Error implements error.
func (e *Error) Error() string { return "rwpool: node " + e.Node + ": " + e.msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// state renders the pool's occupancy for error messages; p.mu must be held.
func (p *Pool) stateLocked() string {
	s := "in use " + strconv.Itoa(p.inUseLocked()) + "/" + strconv.Itoa(p.cfg.MaxOpen)
	if p.dialing > 0 {
		s += ", dialing " + strconv.Itoa(p.dialing)
	}
	return s + ", waiting " + strconv.Itoa(p.waiters.len)
}

func (p *Pool) errClosed() error {
	return &Error{Node: p.cfg.Name, Err: ErrClosed, msg: "pool closed"}
}

func (p *Pool) errConnect(err error) error {
	return &Error{Node: p.cfg.Name, Err: err, msg: "connect: " + err.Error()}
}

// errTimeoutLocked, errWaitersLocked and errCtxLocked need p.mu held.
func (p *Pool) errTimeoutLocked() error {
	msg := fmt.Sprintf("acquire timeout after %s (%s)", p.cfg.AcquireTimeout, p.stateLocked())
	return &Error{Node: p.cfg.Name, Err: ErrAcquireTimeout, msg: msg}
}

func (p *Pool) errWaitersLocked() error {
	msg := fmt.Sprintf("too many waiters (limit %d; %s)", p.cfg.MaxWaiters, p.stateLocked())
	return &Error{Node: p.cfg.Name, Err: ErrTooManyWaiters, msg: msg}
}

func (p *Pool) errCtxLocked(err error, waited time.Duration) error {
	msg := "acquire: " + err.Error()
	if waited > 0 {
		msg += " after waiting " + waited.Round(time.Millisecond).String()
	}
	msg += " (" + p.stateLocked() + ")"
	return &Error{Node: p.cfg.Name, Err: err, msg: msg}
}
