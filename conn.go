package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"slices"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/health"
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
	broken  bool // a call on the pin was abandoned: the lease is lost
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

// classify decides a statement's route with the connector's dialect,
// from its cache for a statement it has seen.
func (vc *conn) classify(query string) routing.Decision {
	return vc.c.cache.Classify(query)
}

// borrowPin returns the lease's pinned connection, pinning one of the
// primary's first if there is none.
func (vc *conn) borrowPin(ctx context.Context, d routing.Decision) (*pool.Conn, *node, error) {
	if vc.pin != nil {
		vc.dirty = vc.dirty || d.Session
		return vc.pin, vc.pinNode, nil
	}
	// TODO(lease): Previous. A routing.Previous statement (SHOW WARNINGS,
	// ROW_COUNT(), ...) must run on the real connection that ran the lease's
	// previous statement; like any session read it pins, which finds that
	// connection only when the previous statement pinned too, and otherwise
	// asks a fresh primary connection.
	n := vc.c.primary
	if isWrite(d) {
		if err := vc.c.writable(); err != nil {
			return nil, nil, err
		}
	}
	pc, err := n.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	vc.pin, vc.pinNode, vc.dirty = pc, n, d.Session
	return pc, n, nil
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

// onPin runs one call on the lease's pin (pinning the primary first when
// needed). A call on a connection pinned for it alone that fails with
// driver.ErrBadConn, the driver's word that nothing reached the server, is
// retried once on a new connection; nothing else on a pin is ever retried,
// since the session or transaction it belongs to is gone.
func (vc *conn) onPin(ctx context.Context, o ctxOpts, d routing.Decision, call func(*pool.Conn) error) error {
	for attempt := 0; ; attempt++ {
		fresh := vc.pin == nil
		pc, n, err := vc.borrowPin(ctx, d)
		if err != nil {
			return err
		}
		if o.route != nil {
			reason := d.Rule.String()
			if vc.tx != nil {
				reason = reasonTx
			} else if !fresh {
				reason = reasonPinned
			}
			o.record(n, reason, attempt)
		}
		err = call(pc)
		if err == errAbandoned {
			// The call outlived its context and now owns the connection:
			// the session is lost, so the lease must end.
			vc.pin, vc.pinNode, vc.broken = nil, nil, true
			n.noteErr(ctx.Err())
			return ctx.Err()
		}
		n.noteErr(err)
		if err != nil && isBadConn(err) {
			vc.unpin(true)
			if fresh && attempt == 0 && vc.tx == nil && errors.Is(err, driver.ErrBadConn) {
				continue
			}
		}
		return err
	}
}

// read runs a read outside any pin. A read that fails at the connection
// level (or finds its node unavailable) before any row reached the caller
// is replayed on another node, each node at most once: other replicas
// first, then the primary (unless fallback=error). call owns pc: it
// returns it to the pool, or hands it to the rows it returns.
//
// In a session that has written (WithSession), a replica serves the read
// only once it has applied the session's writes; replicas that have not
// are passed over, and the primary serves the read if none has.
func (vc *conn) read(ctx context.Context, o ctxOpts, d routing.Decision, call func(*pool.Conn, *node) error) error {
	var triedBuf [4]*node
	tried := triedBuf[:0]
	var lastErr error
	var failed *node // the node whose failed read the next attempt replays
	replays, behind := 0, 0
	var plan readPlan
	if !o.primary {
		plan = vc.c.planRead(ctx, o.session)
	}
	for {
		n, why, err := vc.c.routeRead(o.primary || plan.primary, tried, behind > 0)
		if err != nil {
			if lastErr != nil {
				return lastErr
			}
			return err
		}
		if failed != nil {
			failed.replays.Add(1) // its read is replayed here
			failed = nil
		}
		if plan.primary && !o.primary {
			why = plan.reason
		}
		if o.route != nil {
			if why == "" {
				why = d.Rule.String()
			}
			o.record(n, why, replays)
		}
		pc, err := n.acquire(ctx)
		if err == nil && plan.needsCheck(n) {
			var ok bool
			wait, ask := sessionWaitFor(n, behind == 0)
			if ask {
				ok, err = vc.c.caughtUp(ctx, pc, n, plan.target, wait)
			}
			switch {
			case err == errAbandoned:
				n.noteErr(ctx.Err())
				return ctx.Err()
			case err != nil && !replayable(ctx, err):
				// It could not answer the question (the read itself was
				// not tried): pass it over like a replica that is behind.
				n.done(pc, err)
				err = nil
				tried = append(tried, n)
				behind++
				continue
			case err != nil:
				n.done(pc, err)
			case !ok:
				pc.Release()
				tried = append(tried, n)
				behind++
				continue
			}
		}
		if err == nil {
			if err = call(pc, n); err == nil {
				return nil
			}
			if err == errAbandoned {
				n.noteErr(ctx.Err())
				return ctx.Err()
			}
		}
		if !replayable(ctx, err) {
			return err
		}
		tried = append(tried, n)
		failed = n
		replays++
		lastErr = err
	}
}

// replayable reports whether a failed read may run again elsewhere.
func replayable(ctx context.Context, err error) bool {
	return ctx.Err() == nil && (errors.Is(err, ErrUnavailable) || health.IsConnError(err))
}

// routeRead chooses the node for a read outside any pin, skipping tried,
// and says why when it is not the classifier's rule. behind says that some
// replicas were passed over for lacking a session's writes: the primary
// then serves the read whatever fallback says, since it has them.
func (c *Connector) routeRead(primary bool, tried []*node, behind bool) (*node, string, error) {
	if primary || len(c.replicas) == 0 {
		if slices.Contains(tried, c.primary) {
			return nil, "", errNoReplica
		}
		if primary {
			return c.primary, reasonWithPrimary, nil
		}
		return c.primary, reasonNoReplica, nil
	}
	var skip func(int) bool
	if len(tried) > 0 {
		skip = func(i int) bool { return slices.Contains(tried, c.replicas[i]) }
	}
	if i := c.picker.Pick(skip); i >= 0 {
		return c.replicas[i], "", nil
	}
	if behind && !slices.Contains(tried, c.primary) {
		return c.primary, reasonSessionBehind, nil
	}
	if c.cfg.Fallback == dsn.FallbackPrimary && !slices.Contains(tried, c.primary) {
		c.primary.fallbacks.Add(1)
		return c.primary, reasonFallback, nil
	}
	return nil, "", errNoReplica
}

// pickReplica returns a replica by weight among the available ones, for a
// read-only transaction. With no replica configured it returns the primary;
// with none available, fallback decides.
func (c *Connector) pickReplica() (*node, error) {
	n, _, err := c.routeRead(false, nil, false)
	return n, err
}

var errNoReplica = &nodeError{node: "replicas", op: "read", err: ErrUnavailable}

// ExecContext runs a statement on the node its routing chooses.
func (vc *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return vc.exec(ctx, query, vc.classify(query), args)
}

func (vc *conn) exec(ctx context.Context, query string, d routing.Decision, args []driver.NamedValue) (driver.Result, error) {
	if vc.closed || vc.broken {
		return nil, driver.ErrBadConn
	}
	var res driver.Result
	o := optsOf(ctx)
	if vc.pin != nil || d.Pins() {
		err := vc.onPin(ctx, o, d, func(pc *pool.Conn) (err error) {
			res, err = execWatched(vc.c, ctx, pc, query, args)
			return err
		})
		if err == nil && o.session != nil && vc.tx == nil && isWrite(d) {
			vc.sessionWrote(ctx, o.session)
		}
		return res, err
	}
	err := vc.read(ctx, o, d, func(pc *pool.Conn, n *node) (err error) {
		res, err = execWatched(vc.c, ctx, pc, query, args)
		if err != errAbandoned {
			n.done(pc, err)
		}
		return err
	})
	return res, err
}

// QueryContext runs a query on the node its routing chooses. The real
// connection stays borrowed until the rows are closed.
func (vc *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return vc.query(ctx, query, vc.classify(query), args)
}

func (vc *conn) query(ctx context.Context, query string, d routing.Decision, args []driver.NamedValue) (driver.Rows, error) {
	if vc.closed || vc.broken {
		return nil, driver.ErrBadConn
	}
	var r *rows
	o := optsOf(ctx)
	if vc.pin != nil || d.Pins() {
		err := vc.onPin(ctx, o, d, func(pc *pool.Conn) (err error) {
			r, err = queryWatched(vc.c, ctx, pc, query, args)
			if r != nil {
				r.n = vc.pinNode
			}
			return err
		})
		if err == nil && o.session != nil && vc.tx == nil && isWrite(d) {
			// The rows hold the connection: the position is read at the
			// session's next read.
			o.session.wrotePending()
		}
		return rowsOrNil(r, err)
	}
	err := vc.read(ctx, o, d, func(pc *pool.Conn, n *node) (err error) {
		r, err = queryWatched(vc.c, ctx, pc, query, args)
		if err == errAbandoned {
			return err
		}
		if err != nil {
			n.done(pc, err)
			return err
		}
		r.pc, r.n = pc, n
		return nil
	})
	return rowsOrNil(r, err)
}

// rowsOrNil keeps a nil *rows from becoming a non-nil driver.Rows.
func rowsOrNil(r *rows, err error) (driver.Rows, error) {
	if err != nil || r == nil {
		return nil, err
	}
	return r, nil
}

// PrepareContext returns a statement classified once and run, at each
// execution, on the node its routing then chooses. No I/O happens here; see
// stmt.
func (vc *conn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	if vc.closed || vc.broken {
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
	if vc.closed || vc.broken {
		return nil, driver.ErrBadConn
	}
	if vc.tx != nil {
		return nil, errors.New("rwpool: transaction already in progress")
	}
	o := optsOf(ctx)
	if vc.pin == nil {
		n := vc.c.primary
		// A session that has written reads its transactions on the primary:
		// a replica would have to prove it has the writes first.
		if opts.ReadOnly && vc.c.cfg.ReadOnlyTx == dsn.ReadOnlyTxReplica && !o.primary && !o.session.hasWritten() {
			var err error
			if n, err = vc.c.pickReplica(); err != nil {
				return nil, err
			}
		}
		if n == vc.c.primary && !opts.ReadOnly {
			if err := vc.c.writable(); err != nil {
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
	if !opts.ReadOnly && vc.pinNode == vc.c.primary {
		vc.tx.session = o.session
	}
	optsOf(ctx).record(vc.pinNode, reasonTx, 0)
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
	if vc.closed || vc.broken {
		return driver.ErrBadConn
	}
	if vc.pin != nil {
		err := pingReal(ctx, vc.pin.Raw())
		vc.pinNode.noteErr(err)
		if isBadConn(err) {
			vc.unpin(true)
		}
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
	return !vc.closed && !vc.broken && !vc.c.closed.Load()
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

// sessionWrote records a write of session s that just ran on the lease's
// pin. The write succeeded and is not failed if reading its position then
// broke the connection; but the lease's session (LAST_INSERT_ID, SET, …)
// is gone with it, so the lease is marked broken: its next statement gets
// driver.ErrBadConn instead of silently running elsewhere.
func (vc *conn) sessionWrote(ctx context.Context, s *session) {
	err := vc.c.wrote(ctx, s, vc.pin)
	switch {
	case err == nil:
	case err == errAbandoned:
		vc.pin, vc.pinNode, vc.broken = nil, nil, true
	default:
		vc.unpin(true)
		vc.broken = true
	}
}
