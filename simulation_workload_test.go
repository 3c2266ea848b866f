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
	op := &simOp{Worker: w.id, Kind: kind}
	base := context.Background()
	session := len(kind) > 8 && kind[:8] == "session-"
	if session {
		base = w.sess
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
		op.Found, op.Err = w.read(ctx, db, op.ReadID)
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
		w.r.acked(op.IDs)
		if session {
			if id := op.IDs[len(op.IDs)-1]; id > w.last {
				w.last, w.lastBy = id, kind
			}
		}
	}
	w.r.record(op)
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
