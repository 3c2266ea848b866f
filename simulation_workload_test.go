package rwpool_test

// The simulation's workload: what each worker does, recorded as a history
// of operations for the invariants (simulation_check_test.go).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/simcluster"
)

// simOp is one operation of the history.
type simOp struct {
	Worker     int
	Kind       string
	Start, End time.Duration // since the run started
	Deadline   time.Duration // the context's timeout; 0: none
	Write      bool          // it writes IDs (all or nothing)
	IDs        []int64
	Err        error
	Read       bool   // it read ReadID
	Session    bool   // a session read: ReadID is the session's latest write
	WroteBy    string // a session read: the kind of operation that wrote ReadID
	ReadID     int64
	Found      bool
	Primary    bool // a writable designated primary existed when it returned

	// Issue #22's promises. A read with Must must find ReadID (unless a
	// failover lost it), as the invariant Must names says, for the reason
	// Why gives: token-read (the session resumed Token, whose session
	// wrote or found ReadID), staleness (ReadID was acknowledged over
	// Bound, the read's WithMaxStaleness, before it started).
	Must    string
	Why     string
	Token   string        // the token the read's session resumed, or (token-handover/token) the one it took
	Since   time.Duration // token-read: when the write (or read) that made ReadID the token's started
	TokenAt time.Duration // token-read: when the token was taken
	Bound   time.Duration // WithMaxStaleness
	Acked   time.Duration // staleness: when ReadID was acknowledged
	Mono    int64         // the session whose reads never go back to an older state (monotonic); 0: none
	Route   *rwpool.Route // where a read judged by one of them went, and why
}

func (o *simOp) String() string {
	s := fmt.Sprintf("worker %d %s [%.3fs–%.3fs]", o.Worker, o.Kind, o.Start.Seconds(), o.End.Seconds())
	if o.Deadline > 0 {
		s += fmt.Sprintf(" deadline %s", o.Deadline)
	}
	if o.Write {
		s += fmt.Sprintf(" wrote %v", o.IDs)
	}
	if o.Read {
		s += fmt.Sprintf(" read %d found=%v", o.ReadID, o.Found)
	}
	if o.WroteBy != "" {
		s += " (written by " + o.WroteBy + ")"
	}
	if o.Bound > 0 {
		s += fmt.Sprintf(" max staleness %s", o.Bound)
	}
	if o.Mono != 0 {
		s += fmt.Sprintf(" in session %d", o.Mono)
	}
	if o.Token != "" {
		s += fmt.Sprintf(" token %q", o.Token)
	}
	if o.Why != "" {
		s += " (must find it: " + o.Why + ")"
	}
	if o.Route != nil && o.Route.Node != "" {
		s += fmt.Sprintf(" on %s (%s)", o.Route.Node, o.Route.Reason)
	}
	if o.Err != nil {
		s += fmt.Sprintf(" err=%v", o.Err)
	}
	return s
}

// simWorker runs operations until stop closes.
type simWorker struct {
	r      *simRun
	id     int
	rng    *rand.Rand
	sess   context.Context // its session
	mono   int64           // its session's number for monotonic
	last   int64           // its session's latest acknowledged write
	lastBy string          // the kind of operation that wrote it
}

func (w *simWorker) loop(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		w.step()
	}
}

func (w *simWorker) step() {
	p := w.r.p
	kind := p.Ops[w.rng.IntN(len(p.Ops))]
	switch kind {
	case "token-handover":
		w.tokenHandover()
		return
	case "monotonic":
		w.monotonic()
		return
	}
	op := &simOp{Worker: w.id, Kind: kind}
	base := context.Background()
	session := len(kind) > 8 && kind[:8] == "session-"
	if session || kind == "stale-read" && w.rng.IntN(4) == 0 {
		base, op.Mono = w.sess, w.mono
	}
	ctx, cancel := base, context.CancelFunc(func() {})
	if kind != "read-bg" && w.rng.IntN(10) < 7 {
		op.Deadline = time.Duration(300+w.rng.IntN(700)) * time.Millisecond
		ctx, cancel = context.WithTimeout(base, op.Deadline)
	}
	defer cancel()
	db := w.r.db
	ph := w.placeholder()
	op.Start = w.r.since()
	switch kind {
	case "read", "read-bg":
		op.Read, op.ReadID = true, w.r.someID(w.rng)
		op.Found, op.Err = w.read(ctx, db, op.ReadID)
	case "session-read":
		op.Read, op.Session, op.ReadID, op.WroteBy = true, w.last != 0, w.last, w.lastBy
		if w.last == 0 {
			op.ReadID = w.r.someID(w.rng)
		}
		op.Route = new(rwpool.Route)
		op.Found, op.Err = w.read(rwpool.WithRoute(ctx, op.Route), db, op.ReadID)
	case "stale-read":
		// A bounded read of a row acknowledged before the bound's moment:
		// mostly the latest such, the one replicas are likeliest to lack.
		op.Read, op.Bound = true, time.Duration(5+w.rng.IntN(196))*time.Millisecond
		if id, at, ok := w.r.ackedBefore(op.Start-op.Bound, w.rng); ok {
			op.ReadID, op.Must, op.Acked = id, "staleness", at
			op.Why = fmt.Sprintf("acknowledged at %.6fs, %s before the read started", at.Seconds(), op.Start-at)
		} else {
			op.ReadID = w.r.someID(w.rng)
		}
		op.Route = new(rwpool.Route)
		op.Found, op.Err = w.read(rwpool.WithRoute(rwpool.WithMaxStaleness(ctx, op.Bound), op.Route), db, op.ReadID)
	case "write", "session-write":
		op.Write, op.IDs = true, w.r.newIDs(1)
		_, op.Err = db.ExecContext(ctx, "INSERT INTO t VALUES ("+ph+")", op.IDs[0])
	case "write-returning", "session-returning":
		op.Write, op.IDs = true, w.r.newIDs(1)
		var got int64
		op.Err = db.QueryRowContext(ctx, "INSERT INTO t VALUES ("+ph+") RETURNING id", op.IDs[0]).Scan(&got)
	case "tx", "session-tx", "session-tx-late":
		op.Write, op.IDs = true, w.r.newIDs(1+w.rng.IntN(3))
		txCtx := ctx
		if kind == "session-tx-late" {
			// Begun without the session, written with it.
			txCtx, cancel = context.WithTimeout(context.Background(), max(op.Deadline, time.Second))
			defer cancel()
		}
		op.Err = w.tx(txCtx, ctx, db, op.IDs)
	case "tx-readonly":
		op.Read, op.ReadID = true, w.r.someID(w.rng)
		op.Found, op.Err = w.readOnlyTx(ctx, db, op.ReadID)
	case "sql-tx", "session-sql-tx":
		op.Write, op.IDs = true, w.r.newIDs(1+w.rng.IntN(3))
		op.Err = w.sqlTx(ctx, db, op.IDs)
	case "lease":
		op.Write, op.IDs = true, w.r.newIDs(1)
		op.Err = w.lease(ctx, db, op.IDs[0])
	case "lease-ro-rows":
		op.Read, op.ReadID = true, w.r.someID(w.rng)
		op.Found, op.Err = w.leaseRORows(ctx, db, op.ReadID)
	case "prepared":
		op.Write, op.IDs = true, w.r.newIDs(1)
		op.Err = w.prepared(ctx, db, op.IDs[0])
	case "copy":
		op.Write, op.IDs = true, w.r.newIDs(1+w.rng.IntN(3))
		op.Err = w.copy(ctx, db, op.IDs)
	default:
		panic("simulation: unknown op " + kind)
	}
	op.End = w.r.since()
	op.Primary = w.r.cl.WritablePrimary()
	if op.Write && op.Err == nil {
		w.r.acked(op.IDs, op.End)
		if session {
			if id := op.IDs[len(op.IDs)-1]; id > w.last {
				w.last, w.lastBy = id, kind
			}
		}
	}
	w.r.record(op)
}

// sub runs one call of an operation made of several (token-handover,
// monotonic) with a context derived from base, and records it as an
// operation of its own, judged like any other (its deadline, its write).
func (w *simWorker) sub(kind string, base context.Context, f func(context.Context, *simOp)) *simOp {
	op := &simOp{Worker: w.id, Kind: kind}
	ctx, cancel := base, context.CancelFunc(func() {})
	if w.rng.IntN(10) < 7 {
		op.Deadline = time.Duration(300+w.rng.IntN(700)) * time.Millisecond
		ctx, cancel = context.WithTimeout(base, op.Deadline)
	}
	defer cancel()
	op.Start = w.r.since()
	f(ctx, op)
	op.End = w.r.since()
	op.Primary = w.r.cl.WritablePrimary()
	if op.Write && op.Err == nil {
		w.r.acked(op.IDs, op.End)
	}
	w.r.record(op)
	return op
}

// simMust is a row a read must find, why, and since when (the start of
// the write, or read, that made it the session's).
type simMust struct {
	id    int64
	why   string
	since time.Duration
}

// tokenHandover writes in a session through the run's database (and
// sometimes, or only, reads a recent row), takes the session's token,
// resumes it in a fresh context, mostly on the run's second database
// (another Connector, as another process would), and reads there every
// row the session wrote or found: token-read judges the reads. Half the
// time the resumed session writes too, and its token goes back the other
// way. Sometimes it resumes instead a token taken a while ago, maybe
// before a failover.
func (w *simWorker) tokenHandover() {
	r := w.r
	ph := w.placeholder()
	here, there := r.db, r.db2
	if there == nil || w.rng.IntN(4) == 0 {
		there = r.db // resumed by the same Connector
	}
	write := func(how string, db *sql.DB) func(context.Context, *simOp) {
		return func(ctx context.Context, op *simOp) {
			op.Write = true
			switch how {
			case "write":
				op.IDs = r.newIDs(1)
				_, op.Err = db.ExecContext(ctx, "INSERT INTO t VALUES ("+ph+")", op.IDs[0])
			case "write-returning":
				op.IDs = r.newIDs(1)
				var got int64
				op.Err = db.QueryRowContext(ctx, "INSERT INTO t VALUES ("+ph+") RETURNING id", op.IDs[0]).Scan(&got)
			case "tx":
				op.IDs = r.newIDs(1 + w.rng.IntN(2))
				op.Err = w.tx(ctx, ctx, db, op.IDs)
			}
		}
	}
	if old, ok := r.oldToken(w.rng); ok && w.rng.IntN(4) == 0 {
		// A token taken a while ago (a queued job's): it may name writes
		// a failover has lost since, and must not make its reads wait
		// for them.
		if b, ok := w.resume(old.tok); ok {
			w.resumedReads("token-handover/late-read", b, old.tok, old.at, there, old.musts)
		}
		return
	}
	a := rwpool.WithSession(context.Background())
	var musts []simMust
	writes := w.rng.IntN(3) // none: a session that only read hands on what it saw
	for range writes {
		how := []string{"write", "write-returning", "tx"}[w.rng.IntN(3)]
		if op := w.sub("token-handover/"+how, a, write(how, here)); op.Err == nil {
			for _, id := range op.IDs {
				musts = append(musts, simMust{id, "the token's session wrote it (" + how + ")", op.Start})
			}
		}
	}
	if ids := r.recentIDs(3); len(ids) > 0 && (writes == 0 || w.rng.IntN(2) == 0) {
		// What the session found, the resumed session must find too.
		id := ids[w.rng.IntN(len(ids))]
		op := w.sub("token-handover/read", a, func(ctx context.Context, op *simOp) {
			op.Read, op.ReadID = true, id
			op.Found, op.Err = w.read(ctx, here, id)
		})
		if op.Err == nil && op.Found {
			musts = append(musts, simMust{id, fmt.Sprintf("the token's session found it at %.3fs", op.End.Seconds()), op.Start})
		}
	}
	tok, at := w.token(a)
	r.keepToken(simToken{tok, at, musts})
	b, ok := w.resume(tok)
	if !ok {
		return
	}
	w.resumedReads("token-handover/resumed-read", b, tok, at, there, musts)
	if w.rng.IntN(2) != 0 {
		return
	}
	// And back: the resumed session writes, and its token is resumed
	// where the first one was taken.
	if op := w.sub("token-handover/resumed-write", b, write("write", there)); op.Err == nil {
		musts = append(musts, simMust{op.IDs[0], "the resumed session wrote it", op.Start})
	}
	tok, at = w.token(b)
	c, ok := w.resume(tok)
	if !ok {
		return
	}
	w.resumedReads("token-handover/back-read", c, tok, at, here, musts)
}

// simToken is a token taken, when, and the rows a session resumed from it
// must find.
type simToken struct {
	tok   string
	at    time.Duration
	musts []simMust
}

// simTokensKept bounds the tokens a run keeps for late resumes.
const simTokensKept = 64

// keepToken keeps t for a late resume.
func (r *simRun) keepToken(t simToken) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.tokens) == simTokensKept {
		r.tokens = r.tokens[1:]
	}
	r.tokens = append(r.tokens, t)
}

// oldToken returns one of the tokens kept that was taken at least
// simTokenAge ago.
func (r *simRun) oldToken(rng interface{ IntN(int) int }) (simToken, bool) {
	now := r.since()
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for n < len(r.tokens) && r.tokens[n].at <= now-simTokenAge {
		n++
	}
	if n == 0 {
		return simToken{}, false
	}
	return r.tokens[rng.IntN(n)], true
}

// simTokenAge is the least age of a token resumed late: a failover may
// have come in between.
const simTokenAge = 300 * time.Millisecond

// token takes the token of session s, as an operation of the history
// (SessionToken may ask the primary for its position), and says when.
func (w *simWorker) token(s context.Context) (string, time.Duration) {
	var tok string
	op := w.sub("token-handover/token", s, func(ctx context.Context, op *simOp) {
		tok = rwpool.SessionToken(ctx)
		op.Token = tok
	})
	return tok, op.End
}

// resume resumes tok in a fresh context: one without a session, which
// WithSessionToken gives one, or (always for "", which changes nothing) one
// with a session of its own.
func (w *simWorker) resume(tok string) (context.Context, bool) {
	ctx := context.Background()
	if tok == "" || w.rng.IntN(2) == 0 {
		ctx = rwpool.WithSession(ctx)
	}
	ctx, err := rwpool.WithSessionToken(ctx, tok)
	if err != nil {
		w.r.violate("token-read", "worker %d token-handover: WithSessionToken refused the token SessionToken made (%q): %v", w.id, tok, err)
		return nil, false
	}
	return ctx, true
}

// resumedReads reads each of musts, in a random order, in session s, which
// resumed tok (taken at at), through db.
func (w *simWorker) resumedReads(kind string, s context.Context, tok string, at time.Duration, db *sql.DB, musts []simMust) {
	for _, i := range w.rng.Perm(len(musts)) {
		m := musts[i]
		w.sub(kind, s, func(ctx context.Context, op *simOp) {
			op.Read, op.ReadID, op.Must, op.Why, op.Token = true, m.id, "token-read", m.why, tok
			op.Since, op.TokenAt, op.Route = m.since, at, new(rwpool.Route)
			op.Found, op.Err = w.read(rwpool.WithRoute(ctx, op.Route), db, m.id)
		})
	}
}

// monotonic reads a few recent rows, several times each, in one session
// (a fresh one, or the worker's, which its session-* operations use too),
// sometimes on one *sql.Conn: once a read of the session found a row,
// none of its later reads may miss it, or any row committed before it
// (monotonic judges them).
func (w *simWorker) monotonic() {
	r := w.r
	s, mono := rwpool.WithSession(context.Background()), r.nextMono.Add(1)
	if w.rng.IntN(3) == 0 {
		s, mono = w.sess, w.mono
	}
	ids := r.recentIDs(3)
	if len(ids) == 0 {
		ids = []int64{r.someID(w.rng)}
	}
	type queryer interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}
	var q queryer = r.db
	if w.rng.IntN(3) == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := r.db.Conn(ctx)
		cancel()
		if err != nil {
			return
		}
		defer c.Close()
		q = c
	}
	for range 3 + w.rng.IntN(5) {
		if w.rng.IntN(4) == 0 {
			ids = append(ids, r.recentIDs(1)...) // the newest row now
		}
		id := ids[w.rng.IntN(len(ids))]
		w.sub("monotonic/read", s, func(ctx context.Context, op *simOp) {
			op.Read, op.ReadID, op.Mono, op.Route = true, id, mono, new(rwpool.Route)
			var got int64
			op.Err = q.QueryRowContext(rwpool.WithRoute(ctx, op.Route), w.selectByID(), id).Scan(&got)
			op.Found = op.Err == nil
			if errors.Is(op.Err, sql.ErrNoRows) {
				op.Err = nil
			}
		})
	}
}

func (w *simWorker) placeholder() string {
	if w.r.p.Flavor == simcluster.MariaDB {
		return "?"
	}
	return "$1"
}

func (w *simWorker) selectByID() string {
	return "SELECT id FROM t WHERE id = " + w.placeholder()
}

// read reads row id: whether it was found.
func (w *simWorker) read(ctx context.Context, db *sql.DB, id int64) (bool, error) {
	var got int64
	err := db.QueryRowContext(ctx, w.selectByID(), id).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// tx inserts ids in one transaction begun with txCtx, its statements run
// with ctx.
func (w *simWorker) tx(txCtx, ctx context.Context, db *sql.DB, ids []int64) error {
	tx, err := db.BeginTx(txCtx, nil)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES ("+w.placeholder()+")", id); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

func (w *simWorker) readOnlyTx(ctx context.Context, db *sql.DB, id int64) (bool, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return false, err
	}
	var got int64
	err = tx.QueryRowContext(ctx, w.selectByID(), id).Scan(&got)
	found := err == nil
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	if err != nil {
		tx.Rollback()
		return false, err
	}
	return found, tx.Commit()
}

// sqlTx inserts ids in a transaction sent as statements on a *sql.Conn
// (MariaDB's SET autocommit=0 … COMMIT, PostgreSQL's BEGIN … COMMIT).
func (w *simWorker) sqlTx(ctx context.Context, db *sql.DB, ids []int64) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	begin, end := "BEGIN", []string{"COMMIT"}
	if w.r.p.Flavor == simcluster.MariaDB {
		begin, end = "SET autocommit=0", []string{"COMMIT", "SET autocommit=1"}
	}
	if _, err := c.ExecContext(ctx, begin); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := c.ExecContext(ctx, "INSERT INTO t VALUES ("+w.placeholder()+")", id); err != nil {
			c.ExecContext(ctx, "ROLLBACK")
			return err
		}
	}
	for _, q := range end {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// lease reads, writes and reads on one *sql.Conn.
func (w *simWorker) lease(ctx context.Context, db *sql.DB, id int64) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	var got int64
	if err := c.QueryRowContext(ctx, w.selectByID(), w.r.someID(w.rng)).Scan(&got); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return errNotWritten{err}
	}
	if _, err := c.ExecContext(ctx, "INSERT INTO t VALUES ("+w.placeholder()+")", id); err != nil {
		return err
	}
	if err := c.QueryRowContext(ctx, w.selectByID(), id).Scan(&got); err != nil {
		return errAfterWrite{err}
	}
	return nil
}

// errNotWritten marks an error of an operation before its write was sent;
// errAfterWrite one after its write was acknowledged.
type errNotWritten struct{ error }
type errAfterWrite struct{ error }

func (e errNotWritten) Unwrap() error { return e.error }
func (e errAfterWrite) Unwrap() error { return e.error }

// leaseRORows opens rows on a *sql.Conn while a read-only transaction is
// open on it, commits, and reads the rows afterwards.
func (w *simWorker) leaseRORows(ctx context.Context, db *sql.DB, id int64) (bool, error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	tx, err := c.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return false, err
	}
	var got int64
	if err := tx.QueryRowContext(ctx, w.selectByID(), id).Scan(&got); err != nil && !errors.Is(err, sql.ErrNoRows) {
		tx.Rollback()
		return false, err
	}
	rows, err := c.QueryContext(ctx, w.selectByID(), id)
	if err != nil {
		tx.Rollback()
		return false, err
	}
	defer rows.Close()
	if err := tx.Commit(); err != nil {
		return false, err
	}
	found := rows.Next()
	if err := rows.Close(); err != nil {
		return false, err
	}
	return found, rows.Err()
}

func (w *simWorker) prepared(ctx context.Context, db *sql.DB, id int64) error {
	st, err := db.PrepareContext(ctx, "INSERT INTO t VALUES ("+w.placeholder()+")")
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = st.ExecContext(ctx, id)
	return err
}

// copy inserts ids through the real driver's own API (rwpool.Raw), as a
// COPY would.
func (w *simWorker) copy(ctx context.Context, db *sql.DB, ids []int64) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return rwpool.Raw(ctx, c, func(dc any) error {
		cp, ok := dc.(interface{ Copy([]int64) error })
		if !ok {
			return fmt.Errorf("simulation: Raw gave %T", dc)
		}
		return cp.Copy(ids)
	})
}
