package rwpool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"testing"
)

// nopDriver answers every statement at once with one row, so the
// benchmarks measure the shim and database/sql, not a network.
type nopDriver struct{}

func init() { sql.Register("rwpool-bench-nop", nopDriver{}) }

func (nopDriver) Open(string) (driver.Conn, error) { return nopConn{}, nil }

type nopConn struct{}

func (nopConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (nopConn) Close() error                        { return nil }
func (nopConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }
func (nopConn) QueryContext(context.Context, string, []driver.NamedValue) (driver.Rows, error) {
	return &nopRows{}, nil
}
func (nopConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(1), nil
}

type nopRows struct{ done bool }

func (*nopRows) Columns() []string { return []string{"n"} }
func (*nopRows) Close() error      { return nil }
func (r *nopRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}

func benchQuery(b *testing.B, db *sql.DB) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var n int
		for pb.Next() {
			if err := db.QueryRow("/* bench */ SELECT 1 FROM t WHERE id = $1", 7).Scan(&n); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkQueryBare(b *testing.B) {
	db, err := sql.Open("rwpool-bench-nop", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	benchQuery(b, db)
}

func BenchmarkQueryRWPool(b *testing.B) {
	db, err := sql.Open("rwpool", "driver=rwpool-bench-nop;primary=p;replica=r")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	benchQuery(b, db)
}
