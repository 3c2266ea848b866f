package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"reflect"

	"github.com/rwpool/rwpool/pool"
)

// rows wraps a real driver.Rows. It implements every optional rows
// interface and reproduces database/sql's behaviour for the ones the real
// rows lack, so a caller sees exactly what it would without rwpool. Closing
// it settles the call that made it: the connection it borrowed goes back
// (or is parked), a pinned one is checked, and any failure met while
// reading counts against the node.
type rows struct {
	rs  driver.Rows
	st  driver.Stmt // prepared for these rows only, closed with them
	err error       // the first error Next returned, other than io.EOF

	// Exactly one of these is set for the rows of a statement: pc (with n
	// and vc) when the rows borrowed pc for themselves, lease when they run
	// on the lease's pin. Rows rwpool reads for itself have neither.
	pc    *pool.Conn
	n     *node
	vc    *conn
	lease *lease
	pin   *pool.Conn // the lease's pin the rows run on
	rc    *readCtx   // the read's rescue watch, finished with the rows (a hedge's: see hedgeContext)
	stop  func()     // cancels a hedge's context once its rows close

	// wrote is the causal session whose write (INSERT … RETURNING) the
	// rows are the result of, outside a transaction; epoch is the
	// Connector's promotions then. The write commits only when it
	// completes: it is recorded when the rows close.
	wrote *session
	epoch uint64

	// The statement's measure for its node's histogram (observe.go): when
	// it began (monoNow; 0 for rows not measured) and its kind. The
	// observers were told when the rows were handed over (rowsAnswered):
	// nothing more is kept for them, so that every read's rows stay small.
	startAt int64
	kind    uint8
}

var _ interface {
	driver.Rows
	driver.RowsNextResultSet
	driver.RowsColumnTypeScanType
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
} = (*rows)(nil)

func (r *rows) Columns() []string { return r.rs.Columns() }

func (r *rows) Next(dest []driver.Value) error {
	err := r.rs.Next(dest)
	if err != nil && err != io.EOF {
		if r.rc != nil && r.rc.rescued() {
			// Rows already handed over are not replayed; they fail fast
			// instead of waiting for a node found unavailable.
			err = rescuedError(r.n)
		}
		if r.err == nil {
			r.err = err
		}
	}
	return err
}

// Close closes the real rows and settles the call that made them.
func (r *rows) Close() error {
	if r.rc != nil && r.rc.rescued() && r.pc != nil {
		// Their node is unavailable and their read was cancelled: the
		// connection is destroyed, and then the rows closed unread
		// (lib/pq's Close would read the rest of the result from a server
		// that may not answer).
		r.rc.finish()
		r.rc = nil
		r.n.discard(r.pc, r, nil)
		r.n.errors.Add(1)
		r.ended(outError)
		r.pc = nil
		if r.stop != nil { // a hedge's: its context is released
			r.stop()
			r.stop = nil
		}
		return nil
	}
	err := r.rs.Close()
	if r.st != nil {
		err = errors.Join(err, r.st.Close())
		r.st = nil
	}
	if r.stop != nil { // the driver let go of the context with its rows
		r.stop()
		r.stop = nil
	}
	cause := r.err
	if err != nil {
		cause = err
	}
	if r.rc != nil {
		r.rc.finish()
		r.rc = nil
	}
	if r.wrote != nil {
		// The write completed with its rows: its position is read at
		// the session's next read.
		r.wrote.wrotePending(r.n.c, r.epoch)
		r.wrote = nil
	}

	if cause != nil {
		r.ended(outError)
	} else {
		r.ended(outOK)
	}
	switch {
	case r.pc != nil:
		r.vc.settleRead(context.Background(), r.pc, r.n, cause)
		r.pc = nil
	case r.lease != nil && r.lease.pc == r.pin:
		r.lease.rows--
		r.lease.settle(context.Background(), cause, false)
		r.lease = nil
	case r.lease != nil && r.lease.closeRetiredRows(r.pin, cause):
		r.lease = nil
	case r.lease != nil: // that pin is gone already: nothing left to settle but the count
		r.n.noteErr(cause)
		r.lease = nil
	}
	return err
}

// ended records the rows' statement in its node's histogram, once (the
// observers were told when the rows were handed over: rowsAnswered).
func (r *rows) ended(out uint8) {
	if r.startAt == 0 {
		return
	}
	r.n.c.rowsEnd(r.n, r.kind, out, r.startAt)
	r.startAt = 0
}

func (r *rows) HasNextResultSet() bool {
	if x, ok := r.rs.(driver.RowsNextResultSet); ok {
		return x.HasNextResultSet()
	}
	return false
}

func (r *rows) NextResultSet() error {
	if x, ok := r.rs.(driver.RowsNextResultSet); ok {
		return x.NextResultSet()
	}
	return io.EOF
}

var anyType = reflect.TypeFor[any]()

func (r *rows) ColumnTypeScanType(i int) reflect.Type {
	if x, ok := r.rs.(driver.RowsColumnTypeScanType); ok {
		return x.ColumnTypeScanType(i)
	}
	return anyType
}

func (r *rows) ColumnTypeDatabaseTypeName(i int) string {
	if x, ok := r.rs.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return x.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *rows) ColumnTypeLength(i int) (int64, bool) {
	if x, ok := r.rs.(driver.RowsColumnTypeLength); ok {
		return x.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *rows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if x, ok := r.rs.(driver.RowsColumnTypeNullable); ok {
		return x.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *rows) ColumnTypePrecisionScale(i int) (precision, scale int64, ok bool) {
	if x, ok := r.rs.(driver.RowsColumnTypePrecisionScale); ok {
		return x.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}
