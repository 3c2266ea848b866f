package rwpool

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rwpool/rwpool/internal/driverinfo"
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
	target  replication.Position // covers every write whose position was read, and every token resumed
	pending int                  // writes whose position is not read yet
	wroteAt time.Time            // the last write, for read_your_writes
	epoch   uint64               // the Connector's promotions when the session last wrote (follow_promotion)
	c       *Connector           // the Connector the session last read or wrote through, for SessionToken

	// Tokens (token.go).
	resumed bool               // a token was resumed: target binds reads before any write here
	cluster uint32             // the cluster tag of the tokens resumed; 0: none known
	foreign bool               // a token of another cluster or kind of server was resumed
	kind    replication.Flavor // the kind of server of the tokens resumed; Unknown: none known

	// Monotonic reads: a session reads from the node that served its
	// last read while that one is available; a read elsewhere must cover
	// what that node could have shown (see planRead).
	last    *node                // the node that served the session's last read
	lastEnd time.Time            // when that read returned
	seen    replication.Position // covers what the session's reads saw, up to seenAt (for its token)
	seenAt  time.Time            // the end of the last read seen covers for sure (sawUpTo); before it, only what its nodes were known to have applied
}

// Time budgets of session reads.
const (
	// sessionSkipLag: a replica measured further behind than this is not
	// even asked whether it has a write made a moment ago.
	sessionSkipLag = time.Second
)

// readPlan is where a read of a session, or of a staleness bound, may go.
type readPlan struct {
	primary bool                 // the primary only, for reason
	reason  string               //
	target  replication.Position // replicas must have applied this
	causal  bool                 // target is a session's or a bound's: a replica serving it is a causal read
	prefer  *node                // the replica that served the session's last read: it goes first
	floored bool                 // target covers what prefer could have shown (monotonic reads)
	rebased bool                 // the session's target was checked against the primary's (rebase)
	s       *session
	since   time.Time // s.lastEnd: what prefer showed was the primary's at this moment, at most
}

// planRead decides how a read with o (its session, its staleness bound)
// must be routed. It costs nothing without either, and one lock of the
// session with one.
func (c *Connector) planRead(ctx context.Context, o ctxOpts) (readPlan, error) {
	var plan readPlan
	if err := c.splitReadRefusal(); err != nil && (o.staleness > 0 || o.session != nil && o.session.proves()) {
		return readPlan{}, err
	}
	if d := o.staleness; d > 0 {
		p, err := c.primarySince(ctx, time.Now().Add(-d))
		if err != nil {
			// The primary's position cannot be known: the primary
			// itself is the one node sure to be fresh enough.
			return readPlan{primary: true, reason: reasonStaleUnknown}, nil
		}
		plan.target, plan.causal = p, true
	}
	s := o.session
	if s == nil {
		return plan, nil
	}
	s.mu.Lock()
	s.c = c
	wroteAt, target, pending, epoch := s.wroteAt, s.target, s.pending, s.epoch
	resumed, cluster, foreign, kind := s.resumed, s.cluster, s.foreign, s.kind
	last, lastEnd := s.last, s.lastEnd
	s.mu.Unlock()
	plan.s = s
	if resumed {
		if err := c.checkToken(ctx, kind, cluster, foreign); err != nil {
			return readPlan{}, err
		}
	}
	switch {
	case wroteAt.IsZero() && !resumed:
	case !wroteAt.IsZero() && epoch != c.follow.epoch.Load():
		// The session's positions came from another primary than
		// today's: only the new primary is sure to have its writes.
		return readPlan{primary: true, reason: reasonSessionPromoted}, nil
	case c.cfg.ReadYourWrites > 0 && !wroteAt.IsZero() && time.Since(wroteAt) < c.cfg.ReadYourWrites:
		return readPlan{primary: true, reason: reasonSessionWindow}, nil
	case c.cfg.ReadYourWrites > 0 && !resumed:
		// The session's own writes are past the window: nothing to
		// prove. A resumed token's position (or pending write) still
		// is, as on any Connector.
	case pending > 0:
		p, err := c.primaryPosition(ctx)
		if err != nil {
			return readPlan{primary: true, reason: reasonSessionUnknown}, nil
		}
		s.resolved(p, pending)
		target = target.Merge(p)
		fallthrough
	default:
		plan.target, plan.causal = plan.target.Merge(target), true
	}
	if last == nil || c.cfg.ReadYourWrites > 0 {
		return plan, nil
	}
	plan.since = lastEnd
	if last != c.primaryNode() && (readNode{last}).Available() && !last.isBehind() && slices.Contains(c.topo().readers, last) {
		plan.prefer = last
		if last.endpoint.single() {
			return plan, nil
		}
		// The last read's node, but not as proof: its endpoint is not
		// known to lead to one server (it was seen to balance over
		// several, or the health checker has not learnt it yet: its
		// first probe does, learnEndpoint), and its next connection may
		// reach one further behind than the one that served the last
		// read. The read must cover what that one could have shown,
		// asked on its own connection (needsCheck), like a read whose
		// last node is gone. A node not learnt yet is probed now, so
		// that this costs the session's reads one probe's time at most.
		if !last.endpoint.balancing() {
			last.nudge()
		}
	}
	// The last read's node cannot vouch for this one: another must cover
	// what it could have shown.
	if !c.floor(ctx, &plan) {
		return readPlan{primary: true, reason: reasonSessionUnknown}, nil
	}
	return plan, nil
}

// floor raises the plan's target to what the node that served the
// session's last read could have shown: the primary's position at that
// read's end or later, an upper bound of any node's then (monotonic
// reads). It is free when such a position is known already (the health
// checker's, another read's), else one round trip to the primary, shared.
// It reports false when that position cannot be known.
func (c *Connector) floor(ctx context.Context, plan *readPlan) bool {
	plan.floored = true
	p, err := c.primarySince(ctx, plan.since)
	if err != nil {
		return false
	}
	plan.target, plan.causal = plan.target.Merge(p), true
	return true
}

// served records that n served a read of the plan's session: the
// session's next reads go there first, and its token says what n is
// known to have applied.
func (p *readPlan) served(n *node) {
	if p.causal {
		n.causalReads.Add(1)
	}
	s := p.s
	if s == nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	s.last, s.lastEnd = n, now
	if !n.isPrimary() {
		s.seen = s.seen.Merge(n.repl.position())
	}
	s.mu.Unlock()
}

// proves reports whether a read of s has something to prove: the
// session wrote, read, or resumed a token.
func (s *session) proves() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumed || !s.wroteAt.IsZero() || s.last != nil
}

// sawUpTo records that p, the primary's position at the end of the
// session's read that ended at end or later, covers what its reads saw
// until then.
func (s *session) sawUpTo(p replication.Position, end time.Time) {
	s.mu.Lock()
	s.seen = s.seen.Merge(p)
	if end.After(s.seenAt) {
		s.seenAt = end
	}
	s.mu.Unlock()
}

// checkToken fails a read of a session that resumed a token of another
// cluster (the tags differ) or of another kind of server (kind, the
// tokens' own: their positions', or a pending token's flags).
func (c *Connector) checkToken(ctx context.Context, kind replication.Flavor, cluster uint32, foreign bool) error {
	if foreign {
		return fmt.Errorf("%w: the session resumed tokens of two clusters or kinds of server", ErrInvalidToken)
	}
	if f := replication.Flavor(c.flav.Load()); f != replication.Unknown && kind != replication.Unknown && kind != f {
		return fmt.Errorf("%w: a %s token on a %s cluster", ErrInvalidToken, kind, f)
	}
	// Before the server's kind is known (MariaDB or MySQL, asked at the
	// first status read), the driver's dialect tells PostgreSQL from the
	// others.
	if kind != replication.Unknown && (kind == replication.Postgres) != (c.dialect == routing.DialectPostgres) {
		return fmt.Errorf("%w: a %s token on a cluster of another kind", ErrInvalidToken, kind)
	}
	if cluster != 0 {
		if tag := c.clusterTag(ctx); tag != 0 && tag != cluster {
			return fmt.Errorf("%w: the token was made on another cluster", ErrInvalidToken)
		}
	}
	return nil
}

// rebase lowers the session's target to the primary's position p when p
// does not cover it: the target names writes no node will ever have (a
// promotion lost them, or they are another history's), and reads must not
// wait for them forever.
func (s *session) rebase(p replication.Position) {
	s.mu.Lock()
	if !p.Holds(s.target) {
		s.target = p
		s.seen, s.seenAt = replication.Position{}, time.Time{}
	}
	s.mu.Unlock()
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
//
// A replica whose server reports itself writable is checked whatever its
// position: that position is a primary's (its endpoint leads to the
// primary for now: moved there, or a switchover made its server the
// primary), and its next connection may lead back to a replica that has
// not replayed it. Found by TestSimulation (session-read: a replica
// endpoint moved onto the new primary of a switchover and back; seed
// 4832197080334734703).
func (p *readPlan) needsCheck(n *node) bool {
	return !p.target.IsZero() && !n.isPrimary() && (!n.repl.position().Holds(p.target) || !n.endpoint.single() || n.reportsWritable())
}

// wrote records a write of the session that just committed on pc, a
// connection to the primary, by reading the position that covers it. A
// position that cannot be read is left pending: the session's next read
// asks the primary for its current position instead. The returned error is
// one after which pc is not reusable (see outcome); pc is then the
// caller's to discard.
func (c *Connector) wrote(ctx context.Context, s *session, pc *pool.Conn) error {
	now := time.Now()
	s.mu.Lock()
	s.c = c
	s.mu.Unlock()
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

// wrotePending records a write through c whose position is read later,
// at the session's next read or by SessionToken, which asks c's primary (a
// write whose rows were open on its connection, or whose transaction's
// end is unknown).
func (s *session) wrotePending(c *Connector, epoch uint64) {
	s.mu.Lock()
	s.c = c
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
	p, err := c.position(ctx, pc, replication.WrittenQuery)
	return c.onPrimaryTimeline(p), err
}

// onPrimaryTimeline returns p, a position just read on the primary, on
// its own timeline when it was read with one (replication's pgCurrent),
// else on the primary's timeline as its last status read it (0: unknown). A
// PostgreSQL primary changes timeline only when promoted, which it was
// before it took the write: its last status cannot be on an older one.
// A replica on another timeline, or a crashed primary back on its old
// one, then never passes for having applied a session's writes because
// its LSN is as high (Position.Covers).
func (c *Connector) onPrimaryTimeline(p replication.Position) replication.Position {
	if p.Timeline() != 0 {
		return p // read with the position, on the server that took the write
	}
	return p.OnTimeline(c.primaryNode().repl.position().Timeline())
}

// position reads a position on pc with the query of the cluster's flavor
// that query returns.
func (c *Connector) position(ctx context.Context, pc *pool.Conn, query func(replication.Flavor) string) (replication.Position, error) {
	f := c.flavor(ctx, pc.Raw())
	if f == replication.Unknown {
		return replication.Position{}, errNoFlavor
	}
	q := query(f)
	timeline := f == replication.Postgres && q != replication.PostgresLSNQuery
	if timeline && c.noTimeline.Load() {
		q, timeline = replication.PostgresLSNQuery, false
	}
	v, err := c.queryValue(ctx, pc, q)
	if err != nil && timeline && driverinfo.Refused(err) {
		// As the status query (readStatus): without the timeline from now
		// on, rather than with no position at all.
		c.noTimeline.Store(true)
		v, err = c.queryValue(ctx, pc, replication.PostgresLSNQuery)
	}
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
	asked := time.Now()
	p, err := c.position(ctx, pc, replication.CurrentQuery)
	p = c.onPrimaryTimeline(p)
	if _, err = n.settle(ctx, pc, err); err == nil {
		n.repl.advance(p)
		c.fresh.note(asked, p)
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
	start := time.Now()
	if wait > 0 {
		n.causalWaits.Add(1)
		defer func() { n.causalWaitNanos.Add(int64(time.Since(start))) }()
	}
	for poll := pollFirst; ; poll = min(2*poll, pollMax) {
		v, err := c.queryValue(ctx, pc, replication.AppliedQuery(target, wait))
		if err != nil {
			return false, err
		}
		ok, at, err := replication.Applied(target, v)
		if err != nil {
			return false, err
		}
		if target.Flavor() == replication.Postgres {
			// The replay position read is an LSN alone: it is on the
			// timeline n's last status read (0: unknown, LSNs decide).
			at = at.OnTimeline(n.repl.position().Timeline())
			ok = at.Covers(target)
		}
		n.repl.advance(at)
		// MariaDB and MySQL waited on the server; PostgreSQL has no such
		// wait, so its replay position is polled until wait is over.
		left := wait - time.Since(start)
		if ok || target.Flavor() != replication.Postgres || left <= 0 {
			return ok, nil
		}
		t := time.NewTimer(min(poll, left))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, nil
		}
	}
}

// The polling of a PostgreSQL replica's replay position within
// causal_wait: often at first (a write made a moment ago is usually
// replayed within a millisecond or two on a healthy replica), then less,
// so that a replica far behind costs a few round trips, not hundreds.
const (
	pollFirst = time.Millisecond
	pollMax   = 10 * time.Millisecond
)

// hasApplied asks replica n, on pc, whether it has applied the plan's
// target (see caughtUp); first says no replica was asked before for this
// read. A replica measured well behind is not asked: it has not.
func (c *Connector) hasApplied(ctx context.Context, pc *pool.Conn, n *node, p *readPlan, first bool) (bool, error) {
	if n.repl.position().Holds(p.target) {
		// Known to have it, on some connection: this one is asked only
		// because the endpoint may lead to several servers (needsCheck),
		// whatever the replica's lag.
		return c.caughtUp(ctx, pc, n, p.target, 0)
	}
	wait, ask := c.causalWaitFor(n, first)
	if !ask {
		return false, nil
	}
	return c.caughtUp(ctx, pc, n, p.target, wait)
}

// causalWaitFor returns how long replica n may wait for a read's position
// (causal_wait), and whether it is worth asking at all: a replica
// measured well behind is not. Only the first replica asked for a read
// waits, and only one not measured behind by more than the wait: the
// read's whole wait stays within causal_wait.
func (c *Connector) causalWaitFor(n *node, first bool) (time.Duration, bool) {
	lag, known := n.health.Lag()
	if known && lag > max(sessionSkipLag, c.cfg.CausalWait) {
		return 0, false
	}
	if w := c.cfg.CausalWait; first && (!known || lag <= w) {
		return w, true
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

// binds reports whether the session (which may be nil) constrains where
// its reads may go: it has written, resumed a token, or read.
func (s *session) binds() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.wroteAt.IsZero() || s.resumed || s.last != nil
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
			s.wrotePending(vc.c, vc.c.follow.epoch.Load())
		}
	}
}
