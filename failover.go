package rwpool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rwpool/rwpool/pool"
)

// This file decides whether a write may go to the primary now, and, with
// failover_wait, lets writes wait out a failover: while no writable
// primary is available they wait for the next change of the primary's
// state (it comes back, its endpoint moves, it turns writable), bounded by
// failover_wait, their context and max_waiters, instead of failing at
// once. Only writes that certainly did not reach a server wait and run
// again: refused before sending, or answered "read-only". A write that
// failed after it was sent may have been applied and is never repeated.

// primaryWatch wakes the writes waiting for the primary.
type primaryWatch struct {
	mu sync.Mutex
	ch chan struct{} // closed at the primary's next change
}

// changed returns a channel closed at the primary's next change.
func (w *primaryWatch) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

// signal wakes every write waiting for a change.
func (w *primaryWatch) signal() {
	w.mu.Lock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
	w.mu.Unlock()
}

// refusal returns why a write may not go to the primary now: it reports
// itself read-only, or (when writes may wait for it) it is unavailable.
// Without failover_wait an unavailable primary is found by acquire, as for
// any statement.
func (c *Connector) refusal() error {
	if err := c.splitRefusal(); err != nil {
		return err
	}
	p := c.primaryNode()
	if p.health.RoleMismatch() {
		p.nudge() // a fresh connection may find the endpoint moved already
		return &readOnlyError{node: p.cfg.Name}
	}
	if c.cfg.FailoverWait > 0 && p.health.Tripped() {
		return newUnavailableError(p.cfg.Name, p.health.Since(), p.health.LastError())
	}
	return nil
}

// writable returns nil when a write may go to the primary now. Otherwise
// it fails at once, or, with failover_wait, waits for the primary (see
// awaitPrimary); *until is the statement's waiting deadline, set at its
// first wait.
func (c *Connector) writable(ctx context.Context, until *time.Time) error {
	err := c.refusal()
	if err == nil || c.cfg.FailoverWait <= 0 {
		return err
	}
	return c.awaitPrimary(ctx, until, err, false)
}

// rerunReadOnly reports whether a write that n, the primary when it was
// sent, answered read-only on pc (so applied nothing) runs again: if n's
// endpoint moved, on a connection through it (fence.go); with
// failover_wait, always, once a writable primary is there (the caller's
// next writable() waits for one). The health checker may not have seen
// the read-only spell at all: a primary made read-only for a moment while
// its probes timed out, and writable again by the time the fence asked,
// refused a write that nothing stops from running now. Only "not a
// writable primary yet" is the health checker's to say; the attempts are
// bounded by maxWriteAttempts and failover_wait. It returns errAbandoned
// when the fence gave pc up to a query stuck in the driver.
func (c *Connector) rerunReadOnly(ctx context.Context, n *node, pc *pool.Conn) (bool, error) {
	if n.isPrimary() {
		moved, err := n.fence(ctx, pc)
		if moved || err == errAbandoned {
			return moved, err
		}
	}
	return c.cfg.FailoverWait > 0, nil
}

// awaitPrimary waits until the primary takes writes, or until *until (set
// to failover_wait from now if zero), ctx or max_waiters says to stop, and
// returns cause or ctx's error then. With change set it first waits for
// the primary's next change: the caller just saw a failure its state does
// not show yet (a refused dial, before the breaker's probe confirms it).
func (c *Connector) awaitPrimary(ctx context.Context, until *time.Time, cause error, change bool) error {
	if until.IsZero() {
		*until = time.Now().Add(c.cfg.FailoverWait)
	}
	left := time.Until(*until)
	if left <= 0 {
		return cause
	}
	if c.writeWaiters.Add(1) > int64(c.cfg.MaxWaiters) {
		c.writeWaiters.Add(-1)
		return cause
	}
	defer c.writeWaiters.Add(-1)
	t := time.NewTimer(left)
	defer t.Stop()
	nudge := time.NewTicker(nudgeEvery)
	defer nudge.Stop()
	for {
		ch := c.primaryWatch.changed()
		// Checked even when waiting for a change: Close's wake-up may
		// have come before ch was made.
		if c.closed.Load() {
			return ErrClosed
		}
		if !change {
			if cause = c.refusal(); cause == nil {
				return nil
			}
		}
		change = false
		select {
		case <-c.stop:
			return ErrClosed
		case <-ch:
		case <-nudge.C:
			if p := c.primaryNode(); p.health.Tripped() || p.health.RoleMismatch() {
				p.nudge()
			}
		case <-t.C:
			return cause
		case <-ctx.Done():
			return fmt.Errorf("rwpool: no writable primary before the statement's context ended: %w",
				errors.Join(ctx.Err(), cause))
		}
	}
}
