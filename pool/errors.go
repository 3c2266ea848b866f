package pool

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The errors Acquire's errors wrap, besides a context's error and the
// Connector's dial error. Test for them with errors.Is.
var (
	// ErrClosed is wrapped by the error of an Acquire called after Close,
	// or waiting when Close was called.
	ErrClosed = errors.New("rwpool: closed")
	// ErrAcquireTimeout is wrapped by the error of an Acquire that waited
	// Config.AcquireTimeout for a connection of a full pool and got none.
	ErrAcquireTimeout = errors.New("rwpool: acquire timeout")
	// ErrTooManyWaiters is wrapped by the error of an Acquire that found
	// the pool full and Config.MaxWaiters Acquire calls already waiting:
	// it fails at once rather than queue.
	ErrTooManyWaiters = errors.New("rwpool: too many waiters")
)

// nodeError is every error Acquire and Close return. It names the node and
// wraps the cause, so errors.Is sees through it. Its text is one line, e.g.
//
//	rwpool: node replica1: acquire timeout after 10s (in use 50/50, waiting 12)
//	rwpool: node primary: connect: dial tcp 10.0.0.1:5432: connection refused
//
// The pool never puts a DSN in it; a driver's own dial error is quoted as is.
type nodeError struct {
	node string // Config.Name
	err  error  // the cause
	msg  string // what happened, after "rwpool: node <node>: "
}

func (e *nodeError) Error() string { return "rwpool: node " + e.node + ": " + e.msg }
func (e *nodeError) Unwrap() error { return e.err }

// state renders the pool's occupancy for error messages; p.mu must be held.
func (p *Pool) stateLocked() string {
	s := "in use " + strconv.Itoa(p.inUseLocked()) + "/" + strconv.Itoa(p.cfg.MaxOpen)
	if p.dialing > 0 {
		s += ", dialing " + strconv.Itoa(p.dialing)
	}
	return s + ", waiting " + strconv.Itoa(p.waiters.len)
}

func (p *Pool) errClosed() error {
	return &nodeError{node: p.cfg.Name, err: ErrClosed, msg: "pool closed"}
}

func (p *Pool) errConnect(err error) error {
	return &nodeError{node: p.cfg.Name, err: err, msg: "connect: " + err.Error()}
}

// errTimeoutLocked, errWaitersLocked and errCtxLocked need p.mu held.
func (p *Pool) errTimeoutLocked() error {
	msg := fmt.Sprintf("acquire timeout after %s (%s)", p.cfg.AcquireTimeout, p.stateLocked())
	return &nodeError{node: p.cfg.Name, err: ErrAcquireTimeout, msg: msg}
}

func (p *Pool) errWaitersLocked() error {
	msg := fmt.Sprintf("too many waiters (limit %d; %s)", p.cfg.MaxWaiters, p.stateLocked())
	return &nodeError{node: p.cfg.Name, err: ErrTooManyWaiters, msg: msg}
}

func (p *Pool) errCtxLocked(err error, waited time.Duration) error {
	msg := "acquire: " + err.Error()
	if waited > 0 {
		msg += " after waiting " + waited.Round(time.Millisecond).String()
	}
	msg += " (" + p.stateLocked() + ")"
	return &nodeError{node: p.cfg.Name, err: err, msg: msg}
}
