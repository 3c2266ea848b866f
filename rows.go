package rwpool

import (
	"database/sql/driver"
	"errors"
	"io"
	"reflect"

	"github.com/rwpool/rwpool/pool"
)

// rows wraps a real driver.Rows. It implements every optional rows
// interface and reproduces database/sql's behaviour for the ones the real
// rows lack, so a caller sees exactly what it would without rwpool. Closing
// it returns the borrowed real connection (if the statement was not on the
// lease's pin).
type rows struct {
	rs driver.Rows
	st driver.Stmt // prepared for these rows only, closed with them
	pc *pool.Conn  // borrowed for these rows only, returned on Close
	n  *node
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

func (r *rows) Columns() []string              { return r.rs.Columns() }
func (r *rows) Next(dest []driver.Value) error { return r.rs.Next(dest) }

// Close closes the real rows and returns the connection they held.
func (r *rows) Close() error {
	err := r.rs.Close()
	if r.st != nil {
		err = errors.Join(err, r.st.Close())
		r.st = nil
	}
	if r.pc != nil {
		r.n.done(r.pc, err)
		r.pc = nil
	}
	return err
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
