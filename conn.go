package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/pool"
	"github.com/rwpool/rwpool/routing"
)

// conn is the virtual connection database/sql holds. It owns no real
// connection of its own: each statement borrows one from the pool of the
// node its routing chooses and returns it at once, unless the connection's
// lease is pinned.
//
// A lease runs from database/sql handing the conn out to taking it back
// (IsValid on return, ResetSession at the next checkout). A transaction, a
// write or a session-changing statement pins the lease to one primary
// connection, and every later statement of the lease runs there, so that
// LAST_INSERT_ID, currval, SET and temporary tables behave as on a single
// database. database/sql never uses one conn from two goroutines at once,
// so conn needs no lock.
type conn struct {
	c     *Connector
	owned bool // made by Driver.Open: closing the conn closes c

	pin     *pool.Conn // the lease's pinned real connection, if any
	pinNode *node
	dirty   bool // session state was changed on pin: never reuse it
	tx      *tx
	closed  bool
}

var _ interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
} = (*conn)(nil)

// classify decides a statement's route with the connector's dialect.
func (vc *conn) classify(query string) routing.Decision {
	return routing.Classify(query, vc.c.dialect)
}

// pins reports whether a statement pins its lease to the primary: every
// statement the classifier sends there (writes, locking reads, session
// functions) and anything touching session state. A /*rwpool:primary*/ hint
// pins too, because the hint hides whether the statement under it writes;
// reads sent to the primary by WithPrimary do not pin.
func pins(d routing.Decision) bool {
	return d.Session || d.Target == routing.Primary
}

// borrow returns the real connection a statement decided by d runs on. When
// the lease is pinned, that is the pin.
func (vc *conn) borrow(ctx context.Context, d routing.Decision) (*pool.Conn, *node, error) {
	if vc.closed {
		return nil, nil, driver.ErrBadConn
	}
	if vc.pin != nil {
		vc.dirty = vc.dirty || d.Session
		return vc.pin, vc.pinNode, nil
	}
	if pins(d) {
		n := vc.c.primary
		pc, err := n.acquire(ctx)
		if err != nil {
			return nil, nil, err
		}
		vc.pin, vc.pinNode, vc.dirty = pc, n, d.Session
		return pc, n, nil
	}
	n, err := vc.c.route(ctx, d)
	if err != nil {
		return nil, nil, err
	}
	pc, err := n.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	return pc, n, nil
}

// finish ends a statement that ran on pc: a borrowed connection goes back
// to its pool; the pin stays, unless it broke.
func (vc *conn) finish(pc *pool.Conn, n *node, err error) {
	if pc != vc.pin {
		n.done(pc, err)
		return
	}
	n.noteErr(err)
	if isBadConn(err) {
		vc.unpin(true)
	}
}

// unpin gives the pinned connection back: closed when broken or when its
// session state was changed (resetting it portably is impossible: neither
// lib/pq nor go-sql-driver/mysql resets server session state in
// ResetSession, and issuing DISCARD ALL would be dialect-specific SQL
// rwpool did not receive), returned to the pool otherwise.
func (vc *conn) unpin(broken bool) {
	pc := vc.pin
	if pc == nil {
		return
	}
	vc.pin, vc.pinNode = nil, nil
	if broken || vc.dirty || vc.tx != nil {
		pc.Destroy()
	} else {
		pc.Release()
	}
	vc.dirty = false
}

// route chooses the node for a statement outside any pin.
func (c *Connector) route(ctx context.Context, d routing.Decision) (*node, error) {
	if d.Target == routing.Primary || forcePrimary(ctx) {
		return c.primary, nil
	}
	return c.pickReplica()
}

// pickReplica returns a replica by weight among the available ones. With no
// replica configured, reads simply go to the primary. With none available,
// fallback decides.
func (c *Connector) pickReplica() (*node, error) {
	if len(c.replicas) == 0 {
		return c.primary, nil
	}
	if i := c.picker.Pick(nil); i >= 0 {
		return c.replicas[i], nil
	}
	if c.cfg.Fallback == dsn.FallbackPrimary {
		return c.primary, nil
	}
	return nil, errNoReplica
}

var errNoReplica = &nodeError{node: "replicas", op: "read", err: ErrUnavailable}

// ExecContext runs a statement on the node its routing chooses.
func (vc *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return vc.exec(ctx, query, vc.classify(query), args)
}

func (vc *conn) exec(ctx context.Context, query string, d routing.Decision, args []driver.NamedValue) (driver.Result, error) {
	pc, n, err := vc.borrow(ctx, d)
	if err != nil {
		return nil, err
	}
	res, err := execReal(ctx, pc.Raw(), query, args)
	vc.finish(pc, n, err)
	return res, err
}

// QueryContext runs a query on the node its routing chooses. The real
// connection stays borrowed until the rows are closed.
func (vc *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return vc.query(ctx, query, vc.classify(query), args)
}

func (vc *conn) query(ctx context.Context, query string, d routing.Decision, args []driver.NamedValue) (driver.Rows, error) {
	pc, n, err := vc.borrow(ctx, d)
	if err != nil {
		return nil, err
	}
	rs, st, err := queryReal(ctx, pc.Raw(), query, args)
	if err != nil {
		vc.finish(pc, n, err)
		return nil, err
	}
	r := &rows{rs: rs, st: st, n: n}
	if pc != vc.pin {
		r.pc = pc
	}
	return r, nil
}

// PrepareContext returns a statement classified once and run, at each
// execution, on the node its routing then chooses. No I/O happens here; see
// stmt.
func (vc *conn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	if vc.closed {
		return nil, driver.ErrBadConn
	}
	return &stmt{vc: vc, query: query, d: vc.classify(query)}, nil
}

// Prepare is PrepareContext without a context.
func (vc *conn) Prepare(query string) (driver.Stmt, error) {
	return vc.PrepareContext(context.Background(), query)
}

// BeginTx pins one real connection for the transaction: the primary's, or,
// for a read-only transaction with readonly_tx=replica, a replica's. A lease
// already pinned runs the transaction on its pin.
func (vc *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if vc.closed {
		return nil, driver.ErrBadConn
	}
	if vc.tx != nil {
		return nil, errors.New("rwpool: transaction already in progress")
	}
	if vc.pin == nil {
		n := vc.c.primary
		if opts.ReadOnly && vc.c.cfg.ReadOnlyTx == dsn.ReadOnlyTxReplica && !forcePrimary(ctx) {
			var err error
			if n, err = vc.c.pickReplica(); err != nil {
				return nil, err
			}
		}
		pc, err := n.acquire(ctx)
		if err != nil {
			return nil, err
		}
		vc.pin, vc.pinNode = pc, n
	}
	rtx, err := beginReal(ctx, vc.pin.Raw(), opts)
	if err != nil {
		vc.pinNode.noteErr(err)
		if isBadConn(err) || vc.pinNode != vc.c.primary {
			vc.unpin(isBadConn(err))
		}
		return nil, err
	}
	vc.tx = &tx{vc: vc, tx: rtx}
	return vc.tx, nil
}

// Begin is BeginTx with default options.
func (vc *conn) Begin() (driver.Tx, error) {
	return vc.BeginTx(context.Background(), driver.TxOptions{})
}

// endTx runs when a transaction commits or rolls back. A transaction on the
// primary leaves the lease pinned there (its writes may be followed by
// LAST_INSERT_ID or currval on the same *sql.Conn); one on a replica
// unpins.
func (vc *conn) endTx(err error) {
	vc.tx = nil
	if vc.pin == nil {
		return
	}
	vc.pinNode.noteErr(err)
	if isBadConn(err) || vc.pinNode != vc.c.primary {
		vc.unpin(isBadConn(err))
	}
}

// Ping pings the primary (or the lease's pinned connection).
func (vc *conn) Ping(ctx context.Context) error {
	if vc.closed {
		return driver.ErrBadConn
	}
	if vc.pin != nil {
		err := pingReal(ctx, vc.pin.Raw())
		vc.finish(vc.pin, vc.pinNode, err)
		return err
	}
	n := vc.c.primary
	pc, err := n.acquire(ctx)
	if err != nil {
		return err
	}
	err = pingReal(ctx, pc.Raw())
	n.done(pc, err)
	return err
}

// IsValid ends the lease: database/sql calls it when it takes the
// connection back.
func (vc *conn) IsValid() bool {
	vc.endLease()
	return !vc.closed && !vc.c.closed.Load()
}

// ResetSession ends any lease IsValid did not (database/sql calls it before
// reusing a connection).
func (vc *conn) ResetSession(context.Context) error {
	vc.endLease()
	if vc.c.closed.Load() {
		return driver.ErrBadConn
	}
	return nil
}

func (vc *conn) endLease() {
	if vc.tx == nil {
		vc.unpin(false)
	}
}

// Close returns any pinned connection. A transaction still open on it is
// abandoned by closing the real connection.
func (vc *conn) Close() error {
	if vc.closed {
		return nil
	}
	vc.closed = true
	vc.unpin(false)
	vc.tx = nil
	if vc.owned {
		return vc.c.Close()
	}
	return nil
}
