// Package pool is a bounded pool of real database/sql/driver connections
// dialled through one driver.Connector: rwpool keeps one per node (one
// primary, weighted replicas) instead of relying on database/sql's, so that
// routing, health checks and recovery can reason about each node's
// connections directly. database/sql still sits on top and sees one
// logical connection per borrowed Conn.
//
// The whole surface:
//
//   - New(Config) starts a pool; Close stops it.
//   - Acquire(ctx) borrows a *Conn: an idle connection, a new one while
//     fewer than MaxOpen are open, else the next one released, waiting at
//     most AcquireTimeout and never past ctx.
//   - Conn.Raw is the driver.Conn to use; Conn.Release gives it back,
//     Conn.Destroy closes it instead (after driver.ErrBadConn).
//   - Stat reads the occupancy and the cumulative counters at one moment.
//   - DiscardIdle retires every connection dialled so far, for a node that
//     has just come back from an outage.
//
// A failed Acquire's error names the node and wraps ErrClosed,
// ErrAcquireTimeout, ErrTooManyWaiters, the context's error or the dial
// error.
//
// # Design
//
// All pool state is guarded by one mutex, held only for bookkeeping: dialling
// (driver.Connector.Connect) and closing real connections always happen with
// the mutex released. Every real connection is wrapped in exactly one *Conn,
// allocated when it is dialled and reused for every borrow, so an
// uncontended Acquire + Release allocates nothing.
//
// Idle connections form a LIFO stack. Acquire takes the most recently
// released connection, which keeps the working set small and warm and lets
// the least recently used connections sink to the bottom where the idle
// timeout retires them. Expired connections met on the way (idle timeout,
// max lifetime) are closed and skipped.
//
// When every slot is taken (MaxOpen connections idle, in use or being
// dialled), Acquire joins a FIFO queue of waiters, bounded by MaxWaiters.
// Release hands the connection directly to the oldest waiter instead of
// pushing it onto the idle stack, so waiters are served in arrival order
// and a newly arriving Acquire can never overtake them. When a slot is freed
// instead (Destroy, a failed dial, a connection closed on release) the
// oldest waiter is granted the slot and dials a connection itself. A waiter
// that gives up (AcquireTimeout or its context) while a connection or slot
// is being handed to it passes that hand-off on, so nothing leaks.
// MaxConcurrentDials bounds dials in flight; an Acquire that would exceed it
// waits like any other waiter for a released connection or a dial slot.
//
// A connection keeps its slot until its real Close has returned, so MaxOpen
// bounds what the server sees, connections being closed included.
//
// Reading the clock costs 20-45ns, as much as the rest of Acquire and
// Release together, so neither reads it. Expiry (IdleTimeout, MaxLifetime)
// is judged against a coarse pool clock, refreshed by every maintainer tick,
// every dial and every 64th Release: Release stamps the connection's
// idle-since time with it, Acquire checks the connection it is about to hand
// out against it. Decisions are therefore up
// to about one maintainer tick late or early, which is immaterial for
// timeouts of seconds or minutes.
//
// One background maintainer goroutine per pool periodically closes idle
// connections that outlived IdleTimeout (never going below MinIdle idle
// connections) or MaxLifetime, then dials, one at a time, until MinIdle
// connections are idle, backing off after dial errors. Close stops it and
// waits for it to exit.
//
// DiscardIdle starts a new connection generation: idle connections are
// closed at once and connections in use are closed when released, which is
// what a node that has just recovered from an outage needs.
//
// A *Conn is reused across borrows, so Release and Destroy can only guard
// against being called twice while the connection is still out of the pool
// (the second call is a no-op); once the connection has been lent out again,
// the old holder must not touch it.
package pool
