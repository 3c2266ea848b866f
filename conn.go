package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool/internal/driverinfo"
	"github.com/rwpool/rwpool/pool"
	"github.com/rwpool/rwpool/routing"
)

// conn is the virtual connection database/sql holds. It owns no real
// connection of its own: each statement borrows one from the pool of the
// node its routing (route.go) chooses, unless the connection's lease
// (lease.go) is pinned.
type conn struct {
	c      *Connector
	owned  bool // made by Driver.Open: closing the conn closes c
	closed bool
	lease  lease
	w      *watcher                // rescues its plain reads (rescue.go); nil until the first
	cur    atomic.Pointer[readCtx] // its watched read in flight, for the sweep (sweep.go)
	trips  []connTrip              // its reads' contexts when theirs cannot end (rescue.go)
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

// usable returns driver.ErrBadConn for a closed connection or a lost
// lease.
func (vc *conn) usable() error {
	if vc.closed {
		return driver.ErrBadConn
	}
	return vc.lease.usable()
}

// onPin runs one call on the lease's pin, pinning a primary connection
// first when there is none. A call on a connection pinned for it alone
// that certainly did not change anything is tried again on a new
// connection: one that failed with driver.ErrBadConn (the driver's word
// that nothing reached the server), once; a write answered read-only by a
// primary whose endpoint moved or, with failover_wait, by any primary
// (one a followed promotion has since demoted too), a few times
// (failover.go). Nothing else on a pin is ever retried, since
// the session or transaction it belongs to is gone.
func (vc *conn) onPin(ctx context.Context, o ctxOpts, d routing.Decision, write bool, kind pinCall, call func(*pool.Conn) error) error {
	l := &vc.lease
	var until time.Time // failover_wait's deadline, from the first wait
	for attempt := 0; ; attempt++ {
		fresh := !l.pinned()
		if fresh {
			l.unpark() // before borrowing another: a pool of one must not wait for itself
			if write {
				if err := vc.c.writable(ctx, &until); err != nil {
					return err
				}
			}
			n := vc.c.primaryNode()
			var waitEnd time.Time // failover_wait's ends here: the borrow is ConnWait
			if !until.IsZero() {
				waitEnd = time.Now()
			}
			pc, err := n.acquire(ctx)
			if err != nil {
				// Nothing was sent: with failover_wait, a write waits for
				// the primary's next change and tries again.
				if write && vc.c.cfg.FailoverWait > 0 && attempt < maxWriteAttempts && replayable(ctx, err) {
					werr := vc.c.awaitPrimary(ctx, &until, err, true)
					if werr == nil {
						continue
					}
					if errors.Is(werr, ErrClosed) {
						return werr // the wait ended with Close: that is the answer, not the dial's error
					}
				}
				if write && vc.c.cfg.FailoverWait > 0 {
					return afterWait(err)
				}
				return err
			}
			l.pin(pc, n, d.Session)
			l.stmt = stmtStart{waited: pc.Waited(), ctx: ctx}
			if !until.IsZero() {
				// failover_wait's deadline is set at its first wait.
				l.stmt.failed = waitEnd.Sub(until.Add(-vc.c.cfg.FailoverWait))
			}
		} else {
			if write && l.n != nil && l.n.isPrimary() {
				// A split brain refuses every write, those on a pin taken
				// before it (a *sql.Conn's BEGIN, a read that pinned the
				// primary) too: the pinned server may be the claimant on
				// an abandoned history (TestSimulation: write-off-primary,
				// a SQL transaction begun on a primary back writable on
				// its own history). One atomic load.
				if err := vc.c.splitRefusal(); err != nil {
					return err
				}
			}
			l.dirty = l.dirty || d.Session
			l.stmt = stmtStart{ctx: ctx}
		}
		l.stmtWhy = l.pinReason(d, fresh)
		o.record(l.n, l.stmtWhy, attempt)
		l.stmt.at = monoNow()
		n := l.n
		inTx := l.inTx() // before the call: a broken pin forgets its transaction
		out, err := l.settle(ctx, vc.c.measured(n, func() error { return call(l.pc) }), fresh)
		if fresh && l.tx == nil && attempt < maxWriteAttempts {
			switch {
			case out == broken && attempt == 0 && errors.Is(err, driver.ErrBadConn) && (!write || vc.c.safeBadConn):
				continue
			case out == broken && driverinfo.PoolerNeverSent(err):
				// A pooler in front of n (PgBouncer) refused the
				// statement before any server got it: nothing was
				// applied. Run it again, as after a refused borrow: with
				// failover_wait, a write first waits for the primary's
				// next change (its trip, confirmed by the probe this
				// error asked for, then the promotion or its return;
				// or, for a refusal that was only a moment's, the next
				// nudge tick). Run again at once, a pooler refusing
				// every new connection while its server is dead
				// ("server login has been failing") used up the
				// attempts in milliseconds, before the trip, and the
				// write failed although failover_wait had seconds left
				// (CI: 13 of them in TestIntegrationFollowPromotion
				// through PgBouncer with pgx).
				if write && vc.c.cfg.FailoverWait > 0 {
					if werr := vc.c.awaitPrimary(ctx, &until, err, true); werr != nil {
						return afterWait(werr)
					}
				}
				continue
			case write && out == finished && err != nil && driverinfo.ReadOnly(err):
				// Nothing was applied: n, the primary when the write was
				// sent, refused it (see rerunReadOnly).
				rerun, ferr := vc.c.rerunReadOnly(ctx, n, l.pc)
				if ferr == errAbandoned {
					// The fence's query on the pin hung: the pin is its
					// goroutine's now, which closes it when the driver
					// lets go. It held nothing yet (fresh), so the lease
					// goes on. With failover_wait the write waits for a
					// writable primary and runs again, as after any
					// refusal; without, the refusal stands.
					l.letGo()
					if vc.c.cfg.FailoverWait > 0 {
						continue
					}
					return err
				}
				if rerun {
					l.drop()
					continue
				}
			}
		}
		sentUnknown := err != nil && out != finished && !(vc.c.safeBadConn && errors.Is(err, driver.ErrBadConn)) &&
			!driverinfo.PoolerNeverSent(err)
		switch {
		case sentUnknown && (write && kind == pinRun && !inTx || kind == pinCommit && inTx):
			// The connection was lost (or the context ended) after the
			// write, or the COMMIT, was sent: it may have been applied.
			what := "the write"
			if kind == pinCommit {
				what = "the COMMIT"
			}
			return writeLost(n, what, err)
		case errors.Is(err, driver.ErrBadConn) && inTx:
			// A statement of a transaction that is lost with its
			// connection: not driver.ErrBadConn (see txConnLost).
			return txConnLost(n, err)
		}
		return err
	}
}

// pinCall is what a call on the pin does, for the error of one whose
// connection is lost (onPin).
type pinCall uint8

const (
	pinRun     pinCall = iota // runs a statement: a write out of any transaction may have been applied
	pinCommit                 // runs a statement that commits the transaction open on the pin
	pinPrepare                // prepares a statement: nothing runs
)

// pinCallOf returns what running query on the pin does.
func pinCallOf(query string) pinCall {
	switch txControlOf(query) {
	case txCommit, txCommitChain, txAutocommitOn:
		return pinCommit
	}
	return pinRun
}

// maxWriteAttempts bounds the attempts of a write that never reached a
// server (refused, or answered read-only): a failover that outlasts them
// is reported, not retried forever.
const maxWriteAttempts = 4

// read runs a read outside any pin. A read that fails at the connection
// level (or finds its node unavailable) before any row reached the caller
// is replayed on another node, each node at most once: other replicas
// first, then the primary (unless fallback=error). call runs the read on
// pc with ctx and returns its rows, if it has any: they hold pc until they
// close. Otherwise read settles pc.
//
// A read whose node becomes unavailable while it runs is cancelled and
// replayed at once (rescue.go). A query (query is not empty: exec passes
// none) with no answer after hedge_after is hedged on another node
// (hedge.go); read returns whichever rows came first.
//
// In a session that has written (WithSession), a replica serves the read
// only once it has applied the session's writes; replicas that have not
// are passed over, and the primary serves the read if none has.
func (vc *conn) read(ctx context.Context, o ctxOpts, d routing.Decision, query string, args []driver.NamedValue,
	call func(context.Context, *pool.Conn) (*rows, error)) (*rows, error) {
	var triedBuf [4]*node
	tried := triedBuf[:0]
	var lastErr error
	var failed *node // the node whose failed read the next attempt replays
	replays, behind := 0, 0
	vc.lease.unpark()              // before borrowing another: a pool of one must not wait for itself
	plan := readPlan{s: o.session} // with WithPrimary, the session still learns where it read
	if !o.primary {
		var err error
		if plan, err = vc.c.planRead(ctx, o); err != nil {
			return nil, err
		}
	}
	if o.primary || o.session != nil || plan.causal {
		query = "" // nowhere equivalent to hedge to
	}
	for {
		if plan.prefer != nil && !plan.floored && slices.Contains(tried, plan.prefer) && !vc.c.floor(ctx, &plan) {
			// The session's replica failed this read, and what it
			// could have shown is unknown: the primary has it.
			plan.primary, plan.reason = true, reasonSessionUnknown
		}
		n, why, err := vc.c.routeCausal(o.primary || plan.primary, tried, behind > 0, &plan)
		if behind > 0 && !plan.rebased && plan.causal && (err != nil || n == vc.c.primaryNode()) {
			// No replica has the read's position: before the fallback,
			// make sure the primary has it, or the position names
			// writes no node will have (lost in a promotion).
			if vc.c.rebase(ctx, &plan) {
				tried, behind = tried[:0], 0
				continue
			}
		}
		if err != nil {
			if lastErr != nil && !errors.Is(err, ErrTooStale) {
				return nil, lastErr
			}
			return nil, err
		}
		if failed != nil {
			failed.replays.Add(1) // its read is replayed here
			failed = nil
		}
		if plan.primary && !o.primary {
			why = plan.reason
		}
		if n == vc.c.primaryNode() && (plan.primary && !o.primary || why == reasonSessionBehind || why == reasonStaleBehind) {
			n.causalFallbacks.Add(1)
		}
		if why == "" {
			why = d.Rule.String()
		}
		o.record(n, why, replays)
		// The read's own context covers the borrow too: a dial hung on a
		// node that trips is rescued like a statement, and hedged.
		rctx, rc := vc.readContext(ctx, n, query, args)
		pc, err := n.acquire(rctx)
		var start stmtStart // the attempt's, once it has its connection (observe.go)
		if err == nil {
			start = stmtStart{waited: pc.Waited(), ctx: ctx}
		}
		if err != nil {
			switch rc.answer() {
			case readHedged:
				return vc.adoptHedge(o, rc, replays), nil
			case readRescued:
				err = rescuedError(n)
			}
		}
		if err == nil && plan.needsCheck(n) {
			switch ok, cerr := vc.c.hasApplied(ctx, pc, n, &plan, behind == 0); {
			case cerr == errAbandoned && ctx.Err() != nil:
				rc.finish()
				n.noteErr(ctx.Err())
				return nil, ctx.Err()
			case cerr == errAbandoned:
				// No answer within probe_timeout (caughtUp): pc is the
				// abandoned call's, and the replica is passed over like
				// one that is behind, and suspected.
				rc.finish()
				n.closedBroken.Add(1)
				n.noteErr(context.DeadlineExceeded)
				tried = append(tried, n)
				behind++
				continue
			case cerr != nil && !replayable(ctx, cerr):
				// It could not answer the question (the read itself was
				// not tried): pass it over like a replica that is behind.
				rc.finish()
				n.settle(ctx, pc, cerr)
				tried = append(tried, n)
				behind++
				continue
			case cerr != nil:
				n.settle(ctx, pc, cerr)
				err = cerr
			case !ok:
				rc.finish()
				pc.Release()
				tried = append(tried, n)
				behind++
				continue
			}
		}
		if err != nil {
			rc.finish()
		} else {
			start.at = monoNow() // after the causal check: its wait is CausalWaitDuration
			t := vc.c.readStarts(n)
			rs, cerr := call(rctx, pc)
			vc.c.readEnds(n, t, cerr)
			err = cerr
			// A read that lost (to a hedge, or to its node's trip) was
			// cancelled mid-protocol: its connection is destroyed, and any
			// rows on it closed unread.
			switch rc.answer() {
			case readHedged:
				n.discard(pc, rs, err)
				vc.c.statementEnds(n, kindRead, outHedged, start, why, nil)
				return vc.adoptHedge(o, rc, replays), nil
			case readRescued:
				n.discard(pc, rs, err)
				n.errors.Add(1)
				rc.finish()
				if err == nil && rs == nil {
					vc.c.statementEnds(n, kindRead, outOK, start, why, nil)
					return nil, nil // an exec that completed stands
				}
				err = rescuedError(n)
				goto replay
			}
			if rs != nil {
				rs.pc, rs.n, rs.vc, rs.rc = pc, n, vc, rc
				rs.startAt, rs.kind = start.at, kindRead
				plan.served(n)
				vc.c.rowsAnswered(n, kindRead, start, why)
				return rs, nil
			}
			rc.finish()
			var out outcome
			if out, err = vc.settleRead(ctx, pc, n, err); err == nil || out == abandoned {
				if err == nil {
					plan.served(n)
					vc.c.statementEnds(n, kindRead, outOK, start, why, nil)
				} else {
					vc.c.statementEnds(n, kindRead, outError, start, why, err)
				}
				return nil, err
			}
		}
	replay:
		if !replayable(ctx, err) {
			vc.c.statementEnds(n, kindRead, outError, start, why, err)
			return nil, err
		}
		vc.c.statementEnds(n, kindRead, outReplayed, start, why, err)
		tried = append(tried, n)
		failed = n
		replays++
		lastErr = err
	}
}

// adoptHedge returns the rows of read rc's hedge, which answered first.
func (vc *conn) adoptHedge(o ctxOpts, rc *readCtx, replays int) *rows {
	won := rc.won
	rc.finish()
	o.record(won.n, reasonHedged, replays)
	return won
}

// settleRead ends a read on pc, borrowed from n for it alone: see
// node.settle. On a Connector that parks, a connection that ended well is
// parked in the lease instead of going back to the pool.
func (vc *conn) settleRead(ctx context.Context, pc *pool.Conn, n *node, err error) (outcome, error) {
	if vc.c.parks && outcomeOf(err) == finished {
		n.noteErr(err)
		vc.lease.park(pc, n)
		return finished, err
	}
	return n.settle(ctx, pc, err)
}

// ExecContext runs a statement on the node its routing chooses.
func (vc *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return vc.exec(ctx, query, vc.c.cache.Classify(query), args)
}

func (vc *conn) exec(ctx context.Context, query string, d routing.Decision, args []driver.NamedValue) (driver.Result, error) {
	if err := vc.usable(); err != nil {
		return nil, err
	}
	if vc.lease.pins(d) {
		return vc.execPinned(ctx, query, d, func(pc *pool.Conn) (driver.Result, error) {
			return execWatched(vc.c, ctx, pc, query, args)
		})
	}
	var res driver.Result
	if d.Target == routing.Previous {
		if pc, n := vc.lease.takeParked(); pc != nil {
			optsOf(ctx).record(n, reasonPrevious, 0)
			start := stmtStart{at: monoNow(), ctx: ctx}
			res, err := execWatched(vc.c, ctx, pc, query, args)
			_, err = vc.settleRead(ctx, pc, n, err)
			out := outOK
			if err != nil {
				out = outError
			}
			vc.c.statementEnds(n, kindRead, out, start, reasonPrevious, err)
			return res, err
		}
	}
	_, err := vc.read(ctx, optsOf(ctx), d, "", args, func(ctx context.Context, pc *pool.Conn) (_ *rows, err error) {
		res, err = execWatched(vc.c, ctx, pc, query, args)
		return nil, err
	})
	return res, err
}

// execPinned runs query, classified d, on the lease's pin with run, and
// records a session's write.
func (vc *conn) execPinned(ctx context.Context, query string, d routing.Decision, run func(*pool.Conn) (driver.Result, error)) (driver.Result, error) {
	var res driver.Result
	o := optsOf(ctx)
	write := isWrite(d)
	var m pinMeasure
	err := vc.onPin(ctx, o, d, write, pinCallOf(query), func(pc *pool.Conn) (err error) {
		m.begin(vc, write)
		res, err = run(pc)
		m.done(err)
		return err
	})
	m.end(vc.c, err)
	if vc.pinnedStatement(ctx, o.session, query, d, err) {
		vc.sessionWrote(ctx, o.session)
	}
	return res, err
}

// QueryContext runs a query on the node its routing chooses. The real
// connection stays borrowed until the rows are closed.
func (vc *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return vc.query(ctx, query, vc.c.cache.Classify(query), args)
}

func (vc *conn) query(ctx context.Context, query string, d routing.Decision, args []driver.NamedValue) (driver.Rows, error) {
	if err := vc.usable(); err != nil {
		return nil, err
	}
	if vc.lease.pins(d) {
		return vc.queryPinned(ctx, query, d, func(pc *pool.Conn) (*rows, error) {
			return queryWatched(vc.c, ctx, pc, query, args)
		})
	}
	if d.Target == routing.Previous {
		if pc, n := vc.lease.takeParked(); pc != nil {
			optsOf(ctx).record(n, reasonPrevious, 0)
			start := stmtStart{at: monoNow(), ctx: ctx}
			r, err := queryWatched(vc.c, ctx, pc, query, args)
			if err != nil {
				_, err = vc.settleRead(ctx, pc, n, err)
				vc.c.statementEnds(n, kindRead, outError, start, reasonPrevious, err)
				return nil, err
			}
			r.pc, r.n, r.vc = pc, n, vc
			r.startAt, r.kind = start.at, kindRead
			vc.c.rowsAnswered(n, kindRead, start, reasonPrevious)
			return r, nil
		}
	}
	r, err := vc.read(ctx, optsOf(ctx), d, query, args, func(ctx context.Context, pc *pool.Conn) (*rows, error) {
		return queryWatched(vc.c, ctx, pc, query, args)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// queryPinned runs query, classified d, on the lease's pin with run. The
// rows settle the call when they close.
func (vc *conn) queryPinned(ctx context.Context, query string, d routing.Decision, run func(*pool.Conn) (*rows, error)) (driver.Rows, error) {
	var r *rows
	o := optsOf(ctx)
	write := isWrite(d)
	var m pinMeasure
	err := vc.onPin(ctx, o, d, write, pinCallOf(query), func(pc *pool.Conn) (err error) {
		m.begin(vc, write)
		r, err = run(pc)
		m.done(err)
		return err
	})
	record := vc.pinnedStatement(ctx, o.session, query, d, err)
	if err != nil {
		m.end(vc.c, err)
		return nil, err
	}
	r.lease, r.pin, r.n = &vc.lease, vc.lease.pc, vc.lease.n
	r.startAt, r.kind = m.start.at, m.kind // measured to the rows' close
	m.failoverWaited()
	vc.c.rowsAnswered(r.n, m.kind, m.start, m.why)
	vc.lease.rows++
	if record {
		// The rows hold the connection, and the write commits only
		// when it completes, after its last row: once they close, its
		// position is left for the session's next read (rows.Close).
		r.wrote, r.epoch = o.session, vc.c.follow.epoch.Load()
	}
	return r, nil
}

// PrepareContext returns a statement (see stmt). Outside a pin it is lazy
// and costs no I/O. On a pinned lease, and for a statement only a real
// prepared statement can run, it is prepared on the pin (pinning a primary
// connection first if needed).
func (vc *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := vc.usable(); err != nil {
		return nil, err
	}
	s := &stmt{vc: vc, query: query, d: vc.c.cache.Classify(query)}
	l := &vc.lease
	if !l.pinned() && !needsRealStmt(vc.c.dialect, query) {
		return s, nil
	}
	err := vc.onPin(ctx, optsOf(ctx), s.d, isWrite(s.d), pinPrepare, func(pc *pool.Conn) (err error) {
		if !vc.c.watches(ctx) {
			s.real, err = prepareReal(ctx, pc.Raw(), query)
			return err
		}
		s.real, err = watched(vc.c, ctx, pc, func() (driver.Stmt, error) {
			return prepareReal(ctx, pc.Raw(), query)
		}, func(st driver.Stmt) { st.Close() })
		return err
	})
	if err != nil {
		return nil, err
	}
	s.pc = l.pc
	l.stmts = append(l.stmts, s)
	return s, nil
}

// Prepare is PrepareContext without a context.
func (vc *conn) Prepare(query string) (driver.Stmt, error) {
	return vc.PrepareContext(context.Background(), query)
}

// BeginTx pins one real connection for the transaction (routeTx chooses
// it). A lease already pinned runs the transaction on its pin.
func (vc *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := vc.usable(); err != nil {
		return nil, err
	}
	l := &vc.lease
	if l.tx != nil {
		return nil, errors.New("rwpool: transaction already in progress")
	}
	o := optsOf(ctx)
	fresh := !l.pinned()
	if fresh {
		l.unpark()
		var until time.Time // failover_wait's deadline, from the first wait
		for attempt := 0; ; attempt++ {
			n, err := vc.c.routeTx(ctx, o, opts, &until)
			if err != nil {
				return nil, err
			}
			pc, err := n.acquire(ctx)
			if err != nil {
				// Nothing was sent: with failover_wait, a read-write
				// transaction waits for the primary's next change and
				// tries again, as a write does (onPin).
				if !opts.ReadOnly && vc.c.cfg.FailoverWait > 0 && attempt < maxWriteAttempts && replayable(ctx, err) {
					werr := vc.c.awaitPrimary(ctx, &until, err, true)
					if werr == nil {
						continue
					}
					if errors.Is(werr, ErrClosed) {
						return nil, werr
					}
				}
				// A read-only transaction routed to a replica that
				// tripped, or left discovery, as it was routed: routing
				// again takes another (the picker passes over both).
				if opts.ReadOnly && attempt < maxWriteAttempts && n != vc.c.primaryNode() && replayable(ctx, err) {
					continue
				}
				if !opts.ReadOnly && vc.c.cfg.FailoverWait > 0 {
					return nil, afterWait(err)
				}
				return nil, err
			}
			l.pin(pc, n, false)
			break
		}
	}
	var rtx driver.Tx
	var err error
	if pc := l.pc; vc.c.watches(ctx) {
		rtx, err = watched(vc.c, ctx, pc, func() (driver.Tx, error) {
			return beginReal(ctx, pc.Raw(), opts)
		}, func(t driver.Tx) { t.Rollback() })
	} else {
		rtx, err = beginReal(ctx, pc.Raw(), opts)
	}
	if err != nil {
		out, err := l.settle(ctx, err, fresh)
		if out.reusable() && l.n != vc.c.primaryNode() {
			l.unpin()
		}
		return nil, err
	}
	l.tx = &tx{vc: vc, tx: rtx, ctx: ctx}
	if o.session != nil && !opts.ReadOnly && l.n == vc.c.primaryNode() {
		l.wroteInTx(o.session) // recorded at Commit, like its writes
	}
	o.record(l.n, reasonTx, 0)
	return l.tx, nil
}

// Begin is BeginTx with default options.
func (vc *conn) Begin() (driver.Tx, error) {
	return vc.BeginTx(context.Background(), driver.TxOptions{})
}

// Ping pings the lease's pin, or a primary connection.
func (vc *conn) Ping(ctx context.Context) error {
	if err := vc.usable(); err != nil {
		return err
	}
	if l := &vc.lease; l.pinned() {
		_, err := l.settle(ctx, vc.ping(ctx, l.pc), false)
		return err
	}
	vc.lease.unpark()
	n := vc.c.primaryNode()
	pc, err := n.acquire(ctx)
	if err != nil {
		return err
	}
	_, err = n.settle(ctx, pc, vc.ping(ctx, pc))
	return err
}

// ping pings pc, bounded by ctx like a statement.
func (vc *conn) ping(ctx context.Context, pc *pool.Conn) error {
	if !vc.c.watches(ctx) {
		return pingReal(ctx, pc.Raw())
	}
	_, err := watched(vc.c, ctx, pc, func() (struct{}, error) {
		return struct{}{}, pingReal(ctx, pc.Raw())
	}, nil)
	return err
}

// IsValid ends the lease: database/sql calls it when it takes the
// connection back.
func (vc *conn) IsValid() bool {
	vc.lease.release()
	return !vc.closed && !vc.lease.lost && !vc.c.closed.Load()
}

// ResetSession ends any lease IsValid did not (database/sql calls it before
// reusing a connection).
func (vc *conn) ResetSession(context.Context) error {
	vc.lease.release()
	if vc.c.closed.Load() {
		return driver.ErrBadConn
	}
	return nil
}

// Close returns any pinned connection. A transaction still open on it is
// abandoned by closing the real connection.
func (vc *conn) Close() error {
	if vc.closed {
		return nil
	}
	vc.closed = true
	vc.w.close()
	vc.closeTrips()
	vc.lease.unpark()
	vc.lease.unpin()
	vc.lease.closeRetired()
	if vc.owned {
		return vc.c.Close()
	}
	return nil
}

// sessionWrote records a write of session s that just ran on the lease's
// pin. The write succeeded and is not failed if reading its position then
// broke the connection; but the lease's session (LAST_INSERT_ID, SET, …)
// is gone with it, so the lease is lost: its next statement gets
// driver.ErrBadConn instead of silently running elsewhere.
func (vc *conn) sessionWrote(ctx context.Context, s *session) {
	l := &vc.lease
	switch err := vc.c.wrote(ctx, s, l.pc); {
	case err == errAbandoned:
		l.abandon()
	case err != nil:
		l.lose()
	}
}
