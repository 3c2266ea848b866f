package rwpool

import (
	"context"
	"database/sql/driver"
	"slices"

	"github.com/rwpool/rwpool/pool"
)

// lease is what one virtual connection holds of the real ones, from
// database/sql handing the connection out to taking it back (IsValid on
// return, ResetSession at the next checkout). Its transitions are its
// methods:
//
//   - borrow: a statement outside any pin borrows a real connection of the
//     node routing chose, for itself alone, and settles it when it ends
//     (node.settle), or parks it (see park).
//   - pin: a write, a session statement or a transaction keeps one real
//     connection (the primary's; a replica's for a read-only transaction)
//     for the rest of the lease, and every later statement runs on it, so
//     that LAST_INSERT_ID, currval, SET and temporary tables behave as on
//     a single database.
//   - settle: a call on the pin ended; a broken pin is dropped, and the
//     lease is lost if the pin held session state or a transaction.
//   - endTx: a commit or rollback; a primary pin stays (its writes may be
//     followed by LAST_INSERT_ID), a replica pin is released, or retired
//     while rows opened on it are still read (see retire).
//   - lose: the lease is over before its time (a call on the pin was
//     abandoned at its deadline, or the session state it held is gone):
//     every later call fails with driver.ErrBadConn, and IsValid tells
//     database/sql to discard the connection.
//   - release: database/sql took the connection back. A clean pin returns
//     to its pool; one whose session state changed is closed, since
//     neither lib/pq nor go-sql-driver/mysql resets server session state,
//     or reset with the user's reset_query (the only SQL of the user's
//     sessions rwpool sends unasked, besides the position reads of
//     WithSession).
//
// database/sql never uses one connection from two goroutines at once, so a
// lease needs no lock.
type lease struct {
	pc    *pool.Conn // the pin; nil when unpinned
	n     *node      // pc's node
	dirty bool       // pc's session state was changed: close (or reset) it at release
	raw   bool       // pc was handed out by Raw: close it at release, whatever reset_query says
	tx    *tx        // the transaction open on pc
	stmts []*stmt    // real statements prepared on pc and not closed yet
	lost  bool

	// A transaction sent as SQL on pc (sqltx.go), and the causal sessions
	// that wrote in the transaction open on pc, whichever began it: their
	// writes are covered only by its commit, so their positions are read
	// when it commits (conn.pinnedStatement, tx.Commit).
	sqlTx        bool       // a BEGIN or START TRANSACTION statement began one
	noAutocommit bool       // SET autocommit=0: every statement is in one
	txSessions   []*session // sessions that wrote in the open transaction

	rows    int           // rows open on pc (queryPinned; rows.Close)
	retired []*retiredPin // replica pins let go with rows still open on them

	// parked is the connection that ran the lease's last statement outside
	// the pin, kept until the lease's next statement so that a statement
	// reading its diagnostics (SHOW WARNINGS) can run there. Only dialects
	// that have such statements park (Connector.parks).
	parked     *pool.Conn
	parkedNode *node

	// The measure of the statement onPin is running on pc (observe.go):
	// when it began (with its waits), and its route's reason.
	stmt    stmtStart
	stmtWhy string
}

// usable returns errLeaseLost once the lease is lost. Not
// driver.ErrBadConn: on a *sql.Conn with rows still open, database/sql
// would wait for those rows to close the connection, in the very
// goroutine that holds them. IsValid tells database/sql to discard the
// connection when it comes back.
func (l *lease) usable() error {
	if l.lost {
		return errLeaseLost
	}
	return nil
}

func (l *lease) pinned() bool { return l.pc != nil }

// pin makes pc, just borrowed from n, the lease's pin.
func (l *lease) pin(pc *pool.Conn, n *node, dirty bool) {
	l.unpark()
	l.pc, l.n, l.dirty, l.rows = pc, n, dirty, 0
}

// inTx reports whether a transaction is open on the pin: a write in it
// commits only with it.
func (l *lease) inTx() bool { return l.tx != nil || l.sqlTx || l.noAutocommit }

// wroteInTx records that session s wrote in the transaction open on the
// pin.
func (l *lease) wroteInTx(s *session) {
	if !slices.Contains(l.txSessions, s) {
		l.txSessions = append(l.txSessions, s)
	}
}

// takeTxSessions returns the sessions that wrote in the transaction that
// just ended, and forgets them.
func (l *lease) takeTxSessions() []*session {
	ss := l.txSessions
	l.txSessions = nil
	return ss
}

// forgetTx runs when the pin goes: a transaction still open on it ends
// with it, rolled back by the server or, on MySQL, committed implicitly
// by a statement rwpool did not take for a commit. Whichever it was, the
// writes of its sessions are left pending: their next read asks the
// primary for a position that covers them if they committed.
func (l *lease) forgetTx() {
	for _, s := range l.takeTxSessions() {
		s.wrotePending(l.n.c, l.n.c.follow.epoch.Load())
	}
	l.sqlTx, l.noAutocommit = false, false
}

// settle ends a call on the pin that returned err: it counts err against
// the pin's node and drops a pin the call left unusable. fresh says the
// call pinned the connection itself, so no earlier session state is lost
// with it. It returns the call's outcome and the error the caller sees.
func (l *lease) settle(ctx context.Context, err error, fresh bool) (outcome, error) {
	o := outcomeOf(err)
	n := l.n
	if n == nil { // the pin was already dropped
		return o, err
	}
	switch o {
	case abandoned:
		err = ctx.Err()
		l.abandon()
	case broken, interrupted:
		// A pin that served earlier statements held what they left
		// (LAST_INSERT_ID, SET, a transaction): going on elsewhere
		// would silently lose it, so the lease ends, as on the bare
		// driver. One pinned by this call alone held nothing yet.
		l.drop()
		if !fresh {
			l.lose()
		}
	}
	n.noteErr(err)
	return o, err
}

// abandon gives the pin up to the goroutine still in the driver (see
// await), which closes it when the driver lets go, and ends the lease.
// The statements prepared on it are forgotten, not closed: closing one
// now would race the abandoned call.
func (l *lease) abandon() {
	l.letGo()
	l.lose()
}

// letGo gives the pin up to the goroutine still in the driver, as abandon
// does, but keeps the lease: for a pin taken by the call that was
// abandoned, which held no session state yet.
func (l *lease) letGo() {
	l.forgetTx()
	l.detach()
	l.n.closedBroken.Add(1)
	l.pc, l.n, l.dirty, l.rows = nil, nil, false, 0
}

// drop closes the pin, which is broken or can't be trusted, with the
// statements prepared on it.
func (l *lease) drop() {
	if l.pc != nil {
		l.forgetTx()
		l.detach()
		l.n.closedBroken.Add(1)
		l.pc.Destroy()
		l.pc, l.n, l.dirty, l.raw, l.rows = nil, nil, false, false, 0
	}
}

// detach forgets the real statements prepared on the pin, which is about
// to go; a later execution of one runs lazily.
func (l *lease) detach() []driver.Stmt {
	var real []driver.Stmt
	for _, s := range l.stmts {
		real = append(real, s.real)
		s.real, s.pc = nil, nil
	}
	l.stmts = l.stmts[:0]
	return real
}

// forget removes s, being closed, from the pin's statements.
func (l *lease) forget(s *stmt) {
	if i := slices.Index(l.stmts, s); i >= 0 {
		l.stmts = slices.Delete(l.stmts, i, i+1)
	}
}

// lose ends the lease before its time; see usable.
func (l *lease) lose() {
	l.drop()
	l.unpark()
	l.lost = true
}

// endTx runs when the lease's transaction committed or rolled back with
// err.
func (l *lease) endTx(err error, primary *node) {
	l.tx, l.sqlTx = nil, false
	if l.pc == nil {
		return
	}
	o, _ := l.settle(context.Background(), err, false)
	if o == finished && l.n != primary {
		if l.rows > 0 {
			l.retire()
		} else {
			l.unpin()
		}
	}
}

// retiredPin is a pin a transaction's end let go of while rows opened on
// it were still being read.
type retiredPin struct {
	pc         *pool.Conn
	n          *node
	dirty, raw bool
	real       []driver.Stmt // real statements prepared on pc, closed when it goes back
	rows       int           // its rows still open
	broken     bool          // one of them failed at the connection level
}

// retire lets the pin go, as unpin does, but for the rows opened on it and
// still open: a read-only transaction on a replica ended on a *sql.Conn
// that also opened rows on it. The lease's next statements run elsewhere;
// the real connection goes back when its last rows close
// (closeRetiredRows), not before: another lease would read it under them.
func (l *lease) retire() {
	l.forgetTx()
	l.retired = append(l.retired, &retiredPin{pc: l.pc, n: l.n, dirty: l.dirty, raw: l.raw, real: l.detach(), rows: l.rows})
	l.pc, l.n, l.dirty, l.raw, l.rows = nil, nil, false, false, 0
}

// closeRetiredRows settles rows on pin, a retired pin, that closed with
// cause, and gives the pin back after its last rows. It reports whether
// pin was a retired pin of the lease.
func (l *lease) closeRetiredRows(pin *pool.Conn, cause error) bool {
	i := slices.IndexFunc(l.retired, func(rp *retiredPin) bool { return rp.pc == pin })
	if i < 0 {
		return false
	}
	rp := l.retired[i]
	rp.n.noteErr(cause)
	rp.broken = rp.broken || !outcomeOf(cause).reusable()
	if rp.rows--; rp.rows > 0 {
		return true
	}
	l.retired = slices.Delete(l.retired, i, i+1)
	if rp.broken {
		rp.n.closedBroken.Add(1)
		rp.pc.Destroy()
		return true
	}
	giveBack(rp.pc, rp.n, rp.raw, rp.dirty, rp.real)
	return true
}

// closeRetired closes the retired pins whose rows were not closed: the
// virtual connection closes.
func (l *lease) closeRetired() {
	for _, rp := range l.retired {
		rp.n.closedSession.Add(1)
		rp.pc.Destroy()
	}
	l.retired = nil
}

// unpin gives the pin back: closed when a transaction is still open on
// it or its session state changed (reset with reset_query instead, when
// the DSN has one), returned to its pool otherwise.
func (l *lease) unpin() {
	pc := l.pc
	if pc == nil {
		return
	}
	l.forgetTx()
	giveBack(pc, l.n, l.tx != nil || l.raw, l.dirty, l.detach())
	l.pc, l.n, l.dirty, l.raw, l.tx, l.rows = nil, nil, false, false, nil, 0
}

// giveBack gives pc, a pin of n's that real statements were prepared on,
// back: closed when closeIt (a transaction is still open on it, or Raw
// handed it out) or its session state changed (dirty; reset with
// reset_query instead, when the DSN has one), returned to its pool
// otherwise.
func giveBack(pc *pool.Conn, n *node, closeIt, dirty bool, real []driver.Stmt) {
	switch {
	case closeIt || dirty && n.c.cfg.ResetQuery == "":
		n.closedSession.Add(1)
		pc.Destroy()
	case len(real) > 0 && !n.closeStmts(pc, real):
		// the statements could not be closed: neither can pc be reused
	case dirty:
		n.reset(pc)
	default:
		pc.Release()
	}
}

// park keeps pc, borrowed from n for a statement that just ended well,
// until the lease's next statement.
func (l *lease) park(pc *pool.Conn, n *node) {
	l.unpark()
	l.parked, l.parkedNode = pc, n
}

// unpark returns the parked connection, if any, to its pool.
func (l *lease) unpark() {
	if l.parked != nil {
		l.parked.Release()
		l.parked, l.parkedNode = nil, nil
	}
}

// takeParked hands the parked connection to a statement that must run
// where the previous one ran.
func (l *lease) takeParked() (*pool.Conn, *node) {
	pc, n := l.parked, l.parkedNode
	l.parked, l.parkedNode = nil, nil
	return pc, n
}

// release ends the lease: database/sql took the connection back. A pin
// under an open transaction stays: the transaction still owns it.
func (l *lease) release() {
	l.unpark()
	if l.tx == nil {
		l.unpin()
	}
}
