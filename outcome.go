package rwpool

import (
	"context"
	"errors"

	"github.com/rwpool/rwpool/health"
	"github.com/rwpool/rwpool/pool"
)

// outcome is what a call on a real connection came to. It is decided once
// per call, from the call's error, and everything that follows reads it:
// whether the connection may be reused, whether the node is suspect, and
// whether a read may be replayed elsewhere.
type outcome uint8

const (
	// finished: the call succeeded, or the server answered it with an SQL
	// error; the connection is fine.
	finished outcome = iota
	// broken: a connection-level failure (see health.IsConnError). The
	// connection is closed and the node suspected; a read may be replayed.
	broken
	// interrupted: the caller's context ended during the call. The
	// connection's protocol state is unknown, so it is closed; nothing is
	// replayed and the node is suspected only for a deadline (a hung node
	// shows itself that way).
	interrupted
	// abandoned: the call outlived its context (see await). Its connection
	// now belongs to the goroutine still in the driver, which closes it
	// when the driver lets go: the caller must not touch it again.
	abandoned
)

func outcomeOf(err error) outcome {
	switch {
	case err == nil:
		return finished
	case err == errAbandoned:
		return abandoned
	case health.IsConnError(err):
		return broken
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return interrupted
	}
	return finished
}

// reusable reports whether the call's connection may serve again.
func (o outcome) reusable() bool { return o == finished }

// settle ends a call on pc, borrowed for it alone from n: it counts err
// against n and gives pc back to the pool, closes it, or leaves it to the
// goroutine that abandoned it. It returns the call's outcome and the error
// the caller sees (the context's for an abandoned call).
func (n *node) settle(ctx context.Context, pc *pool.Conn, err error) (outcome, error) {
	o := outcomeOf(err)
	switch o {
	case abandoned: // the goroutine still in the driver closes pc
		err = ctx.Err()
		n.closedBroken.Add(1)
	case broken, interrupted:
		n.closedBroken.Add(1)
		pc.Destroy()
	default:
		pc.Release()
	}
	n.noteErr(err)
	return o, err
}

// replayable reports whether a read that failed with err, before any row
// reached the caller, may run again on another node.
func replayable(ctx context.Context, err error) bool {
	return ctx.Err() == nil && (errors.Is(err, ErrUnavailable) || health.IsConnError(err))
}
