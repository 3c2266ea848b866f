package rwpool

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/rwpool/rwpool/health"
	"github.com/rwpool/rwpool/pool"
)

// Errors a caller may branch on with errors.Is. Errors from the real driver
// pass through unchanged (a *pq.Error stays a *pq.Error); errors made by
// rwpool name the node and wrap their cause, never showing a password.
var (
	// ErrUnavailable is wrapped by every error returned because no node
	// that could serve a statement is available: the node routing chose is
	// unavailable (its breaker is open), or no replica is and
	// fallback=error. Callers may degrade instead of retrying at once.
	ErrUnavailable = errors.New("rwpool: unavailable")

	// ErrReadOnly is wrapped by the error of a write refused because the
	// primary reports itself read-only (demoted, or read_only set): rwpool
	// does not send writes to such a node. It also wraps ErrUnavailable.
	ErrReadOnly = errors.New("rwpool: primary is read-only")

	// ErrClosed is returned, or wrapped, for a statement issued after the
	// Connector (and so the *sql.DB) was closed, and for one that was
	// waiting for a connection when it closed. It is the same value as
	// pool.ErrClosed.
	ErrClosed = pool.ErrClosed

	// ErrAcquireTimeout is wrapped by the error of a statement that waited
	// acquire_timeout for a connection to a node whose pool was full
	// (pool_size connections in use) and got none. The statement did not
	// run and is not retried on another node. The error names the node and
	// the pool's occupancy. A full pool usually means more concurrent
	// statements than pool_size allows: bound them with db.SetMaxOpenConns,
	// or raise pool_size. With acquire_timeout=0 only the statement's
	// context bounds the wait, and its end is reported as the context's
	// error instead.
	ErrAcquireTimeout = pool.ErrAcquireTimeout

	// ErrTooManyWaiters is wrapped by the error of a statement refused at
	// once because a node's pool was full and max_waiters statements were
	// already waiting for it (with max_waiters=0, whenever the pool is
	// full). The statement did not run and is not retried on another node;
	// the error names the node. It sheds load instead of queueing without
	// bound.
	ErrTooManyWaiters = pool.ErrTooManyWaiters

	// ErrRoleMismatch is wrapped by the Cause of a RoleChanged event while
	// the server reports a role its configuration does not expect: a
	// writable replica (promoted?) or a read-only primary (demoted?).
	ErrRoleMismatch = health.ErrRoleMismatch

	// ErrProbeTimeout is wrapped by the Cause of the Event (and shows in
	// NodeStats.LastError) of a node tripped because its health probe got
	// no answer within probe_timeout: the sign of a hung server rather
	// than a refused connection.
	ErrProbeTimeout = health.ErrProbeTimeout

	// ErrSplitBrain is wrapped, with ErrUnavailable, by the error of a
	// write refused because, with follow_promotion, the primary is
	// unavailable or read-only and two or more other nodes report
	// themselves writable: rwpool sends writes to none of them.
	ErrSplitBrain = errors.New("rwpool: several nodes claim to be the primary")

	// ErrNotRWPool is returned by the functions that take a *sql.DB or a
	// *sql.Conn (Stats, Configure, Raw) for one not opened with rwpool.
	ErrNotRWPool = errors.New("rwpool: not an rwpool database")

	// ErrOutcomeUnknown is wrapped by the error of a write, or a commit,
	// whose connection was lost (or whose context ended) after it was
	// sent: the server may have applied it or not, and no client can
	// tell from the error. rwpool never runs such a write again. Check
	// the data (an idempotency key, a read on the primary) before you
	// retry. The driver's own error stays reachable with errors.As
	// (errors.Is too, but for driver.ErrBadConn, on which database/sql
	// would run the write again). Compare ErrUnavailable: a write refused
	// with it was certainly not applied.
	ErrOutcomeUnknown = errors.New("rwpool: the write may or may not have been applied")

	// ErrInvalidToken is wrapped by the error of WithSessionToken for a
	// token that is not one (garbage, truncated, altered, too long, of a
	// version this rwpool does not read), and by the error of a read
	// whose session resumed a token of another cluster or another kind of
	// server. Such a token never makes a read wait or panic.
	ErrInvalidToken = errors.New("rwpool: invalid session token")

	// ErrTooStale is wrapped by the error of a read that must see a
	// position (a causal session's writes, a resumed token, what the
	// session read before, a WithMaxStaleness bound) when no replica had
	// it within causal_wait and causal_fallback=error. It wraps
	// ErrUnavailable.
	ErrTooStale = fmt.Errorf("rwpool: no replica is fresh enough: %w", ErrUnavailable)
)

// Errors rwpool uses among its own functions; none reaches a caller.
var (
	// errAbandoned says a call outlived its context: the caller returns
	// ctx.Err() and the connection now belongs to the goroutine still in
	// the driver, which destroys it when the driver lets go (see await).
	errAbandoned  = errors.New("rwpool: call abandoned at its deadline")
	errNoFlavor   = errors.New("no replication positions for this driver")
	errNoRow      = errors.New("no row")
	errNoPosition = errors.New("the primary reported no replication position")
)

// errLeaseLost is returned by every call on a connection whose lease was
// lost (lease.lose).
var errLeaseLost = errors.New("rwpool: this connection lost its real connection, and the session state it held (a transaction, LAST_INSERT_ID, SET...), to a failure: close it and use another")

// errNoReplica is returned for a read no node can serve.
var errNoReplica = &nodeError{node: "replicas", op: "read", err: ErrUnavailable}

// errNonDefaultTx is returned by BeginTx with options a pre-Go 1.8 driver
// cannot honour.
var errNonDefaultTx = errors.New("rwpool: the driver does not support non-default isolation levels or read-only transactions")

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

// unavailableError is returned, at once, for a borrow from a tripped node.
// Its text is fixed when it is made, so that it reads the same however
// late it is logged.
type unavailableError struct {
	msg   string
	cause error
}

func newUnavailableError(node string, since time.Time, cause error) *unavailableError {
	e := &unavailableError{
		msg: fmt.Sprintf("rwpool: node %s: unavailable for %s: %v",
			node, time.Since(since).Round(time.Millisecond), cause),
		cause: cause,
	}
	if errors.Is(cause, driver.ErrBadConn) {
		// A trip caused by a lost connection (lib/pq's "driver: bad
		// connection") must not make the refusal driver.ErrBadConn:
		// database/sql would run the statement again, up to three
		// times, each waiting a fresh failover_wait. The text keeps the
		// cause; only the sentinel is not reachable.
		e.cause = nil
	}
	return e
}

func (e *unavailableError) Error() string        { return e.msg }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }
func (e *unavailableError) Unwrap() error        { return e.cause }

// waitedError is the error of a write that waited for a primary
// (failover_wait) and got none, whose cause wraps driver.ErrBadConn (a dial
// refused as a lost connection): the same text and sentinels, but not
// driver.ErrBadConn, on which database/sql would run the statement again
// and wait once more. failover_wait bounds the caller's whole wait.
type waitedError struct {
	msg         string
	unavailable bool
}

func (e *waitedError) Error() string        { return e.msg }
func (e *waitedError) Is(target error) bool { return target == ErrUnavailable && e.unavailable }

// afterWait returns err, or, if it wraps driver.ErrBadConn, a waitedError
// of it.
func afterWait(err error) error {
	if err == nil || !errors.Is(err, driver.ErrBadConn) {
		return err
	}
	return &waitedError{msg: err.Error(), unavailable: errors.Is(err, ErrUnavailable)}
}

// outcomeUnknownError is the error of a write or a commit that may or may
// not have been applied (ErrOutcomeUnknown). It wraps its cause, except
// driver.ErrBadConn: lib/pq returns that when the server closed the
// connection after it got the statement (io.EOF), and database/sql would
// send the write again, on another connection, after a failover onto the
// new primary. errors.As still reaches the driver's error through As.
type outcomeUnknownError struct{ badConnHidden }

func (e *outcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

// writeLost is the error of a write (what) on node n whose connection was
// lost, or whose context ended, after it was sent: err is the driver's or
// the context's.
func writeLost(n *node, what string, err error) error {
	return &outcomeUnknownError{badConnHidden{
		msg:   fmt.Sprintf("rwpool: node %s: connection lost: %s may have been applied, or not: %v", n.cfg.Name, what, err),
		cause: err,
	}}
}

// txConnLost is returned for a statement that lost its connection while a
// transaction is open on the lease. It does not wrap driver.ErrBadConn:
// database/sql answers driver.ErrBadConn from a *sql.Conn's own statement
// by closing the Conn, which waits for the transaction open on it, in the
// goroutine that would end that transaction: a deadlock. The transaction
// is lost either way (the lease is: every later call says so), and
// database/sql never retries inside one.
func txConnLost(n *node, err error) error {
	return fmt.Errorf("rwpool: node %s: connection lost in a transaction: %v", n.cfg.Name, err)
}

// txEndLost is the error of a COMMIT or ROLLBACK (what) that lost its
// connection where the transaction's fate does not matter (a read-only
// transaction on a replica, a rollback) or is known: the driver's error,
// less driver.ErrBadConn, which errors.As still reaches. database/sql
// answers driver.ErrBadConn from a *sql.Conn's transaction by closing the
// Conn, which waits for the rows still open on that Conn, in the
// goroutine that holds them (inside Tx.Commit): a deadlock. It never
// retries a COMMIT or ROLLBACK, so the error's word is worth nothing
// there; the lease is lost (settle), and IsValid has database/sql discard
// the connection.
func txEndLost(n *node, what string, err error) error {
	if !errors.Is(err, driver.ErrBadConn) {
		return err
	}
	name := "?"
	if n != nil {
		name = n.cfg.Name
	}
	return &badConnHidden{msg: fmt.Sprintf("rwpool: node %s: connection lost at %s: %v", name, what, err), cause: err}
}

// badConnHidden is an error with a cause that database/sql must not see
// as driver.ErrBadConn (txEndLost, outcomeUnknownError): errors.As
// reaches the cause whatever it is, errors.Is only a cause that is not
// driver.ErrBadConn.
type badConnHidden struct {
	msg   string
	cause error
}

func (e *badConnHidden) Error() string      { return e.msg }
func (e *badConnHidden) As(target any) bool { return errors.As(e.cause, target) }
func (e *badConnHidden) Unwrap() error {
	if errors.Is(e.cause, driver.ErrBadConn) {
		return nil
	}
	return e.cause
}

// readOnlyError is returned, at once, for a write while the primary
// reports itself read-only.
type readOnlyError struct{ node string }

func (e *readOnlyError) Error() string {
	return "rwpool: node " + e.node + ": write refused: the primary reports itself read-only (demoted?)"
}

func (e *readOnlyError) Is(target error) bool {
	return target == ErrReadOnly || target == ErrUnavailable
}

// redactedError is an error whose text had a node DSN's secret removed
// (see redactErr); errors.Is and errors.As still reach the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
