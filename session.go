package rwpool

import (
	"context"
	"sync"
	"time"

	"github.com/rwpool/rwpool/internal/replication"
	"github.com/rwpool/rwpool/pool"
	"github.com/rwpool/rwpool/routing"
)

// WithSession returns a context that carries a causal session: after a
// write made with it (or with a context derived from it), later reads made
// with it see that write, on whichever connection, lease or goroutine they
// run. Reads before any write, and reads without a session, spread over the
// replicas by weight as usual.
//
// How a read finds a node that has the session's writes:
//
//   - PostgreSQL: after the write commits, rwpool reads the primary's WAL
//     position (one extra round trip on the same connection); a replica
//     serves the read only if its replay position has reached it (known
//     from the health checker or asked with one round trip), else the
//     primary does.
//   - MariaDB: the session's last GTID; a replica waits for it at most
//     50 ms with MASTER_GTID_WAIT, else the primary serves the read.
//   - MySQL: the executed GTID set; a replica checks it with GTID_SUBSET
//     (WAIT_FOR_EXECUTED_GTID_SET cannot wait less than a second).
//   - With read_your_writes=D in the DSN, or a driver with no positions,
//     reads go to the primary for D after each write (forever, within the
//     session, with no D), and no position is read.
//
// A write in a transaction counts when the transaction commits, whether
// it was begun with BeginTx (with the session's context, or without it
// and the write run with it) or sent as SQL on a *sql.Conn (BEGIN or
// START TRANSACTION … COMMIT, SET autocommit=0 … COMMIT). A write that
// returns rows (INSERT … RETURNING) counts once its rows are closed.
//
// If ctx already carries a session, WithSession returns ctx: a middleware
// and a handler that both call it share one session.
//
//	ctx = rwpool.WithSession(ctx)
//	db.ExecContext(ctx, "UPDATE users SET name = $1 WHERE id = $2", name, id)
//	db.QueryRowContext(ctx, "SELECT name FROM users WHERE id = $1", id).Scan(&got) // got == name
func WithSession(ctx context.Context) context.Context {
	o := optsOf(ctx)
	if o.session != nil {
		return ctx
	}
	o.session = &session{}
	return context.WithValue(ctx, ctxKey{}, o)
}

// session is the state of one causal session. Goroutines may share it.
type session struct {
	mu      sync.Mutex
	target  replication.Position // covers every write whose position was read
	pending int                  // writes whose position is not read yet
	wroteAt time.Time            // the last write, for read_your_writes
	epoch   uint64               // the Connector's promotions when the session last wrote (follow_promotion)
}

// Time budgets of session reads.
const (
	// sessionWait is how long a replica may wait for a session's write
	// (MASTER_GTID_WAIT) before the primary serves the read instead.
	sessionWait = 50 * time.Millisecond
	// sessionSkipLag: a replica measured further behind than this is not
	// even asked whether it has a write made a moment ago.
	sessionSkipLag = time.Second
)

// readPlan is where a read of a session may go.
type readPlan struct {
	primary bool                 // the primary only, for reason
	reason  string               //
	target  replication.Position // replicas must have applied this
}

// planRead decides how a read of session s must be routed. It is free for
// a session that has not written.
func (c *Connector) planRead(ctx context.Context, s *session) readPlan {
	if s == nil {
		return readPlan{}
	}
	s.mu.Lock()
	wroteAt, target, pending, epoch := s.wroteAt, s.target, s.pending, s.epoch
	s.mu.Unlock()
	switch {
	case wroteAt.IsZero():
		return readPlan{}
	case epoch != c.follow.epoch.Load():
		// The session's positions came from another primary than
		// today's: only the new primary is sure to have its writes.
		return readPlan{primary: true, reason: reasonSessionPromoted}
	case c.cfg.ReadYourWrites > 0:
		if time.Since(wroteAt) < c.cfg.ReadYourWrites {
			return readPlan{primary: true, reason: reasonSessionWindow}
		}
		return readPlan{}
	case pending > 0:
		p, err := c.primaryPosition(ctx)
		if err != nil {
			return readPlan{primary: true, reason: reasonSessionUnknown}
		}
		s.resolved(p, pending)
		target = target.Merge(p)
	}
	return readPlan{target: target}
}

// needsCheck reports whether replica n must be asked before it serves a
// read of the plan: it is not known to have applied the target.
//
// The node's known position is the newest any of its connections showed,
// which holds for every connection only while its endpoint leads to one
// server: until the endpoint is known to (endpointSeen.single: the health
// checker's first endpointMoveDials fresh dials reached one server), and
// for good on one seen to balance over several, the replica is asked on
// the very connection that serves the read, every time.
func (p *readPlan) needsCheck(n *node) bool {
	return !p.target.IsZero() && !n.isPrimary() && (!n.repl.position().Covers(p.target) || !n.endpoint.single())
}

// wrote records a write of the session that just committed on pc, a
// connection to the primary, by reading the position that covers it. A
// position that cannot be read is left pending: the session's next read
// asks the primary for its current position instead. The returned error is
// one after which pc is not reusable (see outcome); pc is then the
// caller's to discard.
func (c *Connector) wrote(ctx context.Context, s *session, pc *pool.Conn) error {
	now := time.Now()
	if c.cfg.ReadYourWrites > 0 {
		s.mu.Lock()
		s.wroteAt, s.epoch = now, c.follow.epoch.Load()
		s.mu.Unlock()
		return nil
	}
	p, err := c.writtenPosition(ctx, pc)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wroteAt, s.epoch = now, c.follow.epoch.Load()
	if err != nil {
		s.pending++
		if !outcomeOf(err).reusable() {
			return err
		}
		return nil
	}
	s.target = s.target.Merge(p)
	return nil
}

// wrotePending records a write whose position is read later, at the
// session's next read (a write whose rows are still open on its
// connection).
func (s *session) wrotePending(epoch uint64) {
	s.mu.Lock()
	s.wroteAt, s.epoch = time.Now(), epoch
	s.pending++
	s.mu.Unlock()
}

// resolved records p, read from the primary after the first n pending
// writes committed, as covering them.
func (s *session) resolved(p replication.Position, n int) {
	s.mu.Lock()
	s.target = s.target.Merge(p)
	s.pending = max(s.pending-n, 0)
	s.mu.Unlock()
}

// writtenPosition reads, on pc, a position covering what pc's session has
// committed. It is bounded by probe_timeout when ctx is not.
func (c *Connector) writtenPosition(ctx context.Context, pc *pool.Conn) (replication.Position, error) {
	ctx, cancel := boundCtx(ctx, c.cfg.ProbeTimeout)
	defer cancel()
	return c.position(ctx, pc, replication.WrittenQuery)
}

// position reads a position on pc with the query of the cluster's flavor
// that query returns.
func (c *Connector) position(ctx context.Context, pc *pool.Conn, query func(replication.Flavor) string) (replication.Position, error) {
	f := c.flavor(ctx, pc.Raw())
	if f == replication.Unknown {
		return replication.Position{}, errNoFlavor
	}
	v, err := c.queryValue(ctx, pc, query(f))
	if err != nil {
		return replication.Position{}, err
	}
	return replication.Parse(f, stringOf(v))
}

// primaryPosition reads the primary's current position on a connection of
// its pool, bounded by probe_timeout when ctx is not.
func (c *Connector) primaryPosition(ctx context.Context) (replication.Position, error) {
	n := c.primaryNode()
	pc, err := n.acquire(ctx)
	if err != nil {
		return replication.Position{}, err
	}
	// The read is settled under the context that bounded it: an abandoned
	// read settles to that context's error, and ctx's, with no deadline,
	// is nil. A zero position taken for a success would resolve the
	// session's pending writes for any replica.
	ctx, cancel := boundCtx(ctx, c.cfg.ProbeTimeout)
	defer cancel()
	p, err := c.position(ctx, pc, replication.CurrentQuery)
	if _, err = n.settle(ctx, pc, err); err == nil {
		n.repl.advance(p)
	}
	return p, err
}

// caughtUp asks replica n, on pc, whether it has applied target, letting
// it wait up to wait. What it learns raises n's known position. The
// question is bounded by probe_timeout beyond wait, whatever ctx's
// deadline: a replica that does not answer it is passed over (an
// abandoned call returns errAbandoned while ctx has not ended), and the
// read goes on elsewhere instead of waiting for it.
func (c *Connector) caughtUp(ctx context.Context, pc *pool.Conn, n *node, target replication.Position, wait time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ProbeTimeout+wait)
	defer cancel()
	v, err := c.queryValue(ctx, pc, replication.AppliedQuery(target, wait))
	if err != nil {
		return false, err
	}
	ok, at, err := replication.Applied(target, v)
	if err != nil {
		return false, err
	}
	n.repl.advance(at)
	return ok, nil
}

// hasApplied asks replica n, on pc, whether it has applied the plan's
// target (see caughtUp); first says no replica was asked before for this
// read. A replica measured well behind is not asked: it has not.
func (c *Connector) hasApplied(ctx context.Context, pc *pool.Conn, n *node, p *readPlan, first bool) (bool, error) {
	wait, ask := sessionWaitFor(n, first)
	if !ask {
		return false, nil
	}
	return c.caughtUp(ctx, pc, n, p.target, wait)
}

// sessionWaitFor returns how long replica n may wait for a session's
// write, and whether it is worth asking at all: a replica measured well
// behind is not.
func sessionWaitFor(n *node, first bool) (time.Duration, bool) {
	lag, known := n.health.Lag()
	if known && lag > sessionSkipLag {
		return 0, false
	}
	if first && known && lag <= sessionWait {
		return sessionWait, true
	}
	return 0, true
}

// queryValue runs query on pc, bounded by ctx like any statement, and
// returns the first column of its first row.
func (c *Connector) queryValue(ctx context.Context, pc *pool.Conn, query string) (any, error) {
	r, err := queryWatched(c, ctx, pc, query, nil)
	if err != nil {
		return nil, err
	}
	row, err := takeRow(r)
	if err != nil || len(row) == 0 {
		return nil, err
	}
	return row[0], nil
}

// boundCtx bounds ctx by d unless it has a deadline already.
func boundCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// hasWritten reports whether the session (which may be nil) has written.
func (s *session) hasWritten() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.wroteAt.IsZero()
}

// pinnedStatement follows, for causal sessions, query (classified d),
// which just ran on the lease's pin with err; s is its session, if any.
// It reports whether s's write must be recorded now (conn.sessionWrote),
// or when its rows close: it wrote, outside any transaction. A write in a
// transaction is recorded when the transaction commits (lease.txSessions),
// whether it was begun with BeginTx or sent as SQL, with s or without:
// before that, the position that covers it does not exist.
func (vc *conn) pinnedStatement(ctx context.Context, s *session, query string, d routing.Decision, err error) bool {
	l := &vc.lease
	if k := txControlOf(query); k != txNone {
		vc.txStatement(ctx, k, err)
		return false
	}
	if err != nil || s == nil || !isWrite(d) {
		return false
	}
	if l.inTx() {
		l.wroteInTx(s)
		return false
	}
	return true
}

// txStatement follows a statement that does k to the transaction open on
// the pin (sqltx.go), and that ended with err.
func (vc *conn) txStatement(ctx context.Context, k txControl, err error) {
	l := &vc.lease
	if !l.pinned() { // the statement broke its pin: lease.forgetTx ran
		return
	}
	switch k {
	case txBegin:
		if l.inTx() && vc.c.dialect == routing.DialectMySQL {
			vc.committed(ctx, err) // MySQL commits the open transaction first
		}
		l.sqlTx = l.sqlTx || err == nil
	case txAutocommitOff:
		l.noAutocommit = l.noAutocommit || err == nil
	case txCommit, txCommitChain:
		vc.committed(ctx, err)
		l.sqlTx = k == txCommitChain && l.sqlTx
	case txRollback, txRollbackChain:
		l.txSessions = nil
		l.sqlTx = k == txRollbackChain && l.sqlTx
	case txAutocommitOn:
		// Only a change from 0 to 1 commits.
		if l.noAutocommit {
			vc.committed(ctx, err)
			l.noAutocommit = err != nil
		}
	}
}

// committed records the writes of the sessions that wrote in the
// transaction that just ended on the pin with a commit that returned err.
// A commit that failed may have committed (the connection broke) or not:
// their positions are left pending, for their next read to ask the
// primary.
func (vc *conn) committed(ctx context.Context, err error) {
	l := &vc.lease
	for _, s := range l.takeTxSessions() {
		if err == nil && l.pinned() {
			vc.sessionWrote(ctx, s)
		} else {
			s.wrotePending(vc.c.follow.epoch.Load())
		}
	}
}
