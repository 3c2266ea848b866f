package rwpool

import (
	"context"
	"database/sql/driver"

	"github.com/rwpool/rwpool/routing"
)

// stmt is a prepared statement. It is classified once, at Prepare, and each
// execution runs on the node routing chooses then, through that real
// connection's direct execution path (lib/pq, go-sql-driver/mysql and pgx
// prepare and execute there in one exchange) or, when the driver asks for it
// with driver.ErrSkip, by preparing, executing and closing it on that
// connection. Preparing eagerly on one node would tie the statement to it
// and defeat routing.
type stmt struct {
	vc    *conn
	query string
	d     routing.Decision
}

var _ interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
} = (*stmt)(nil)

// Close does nothing: no real statement outlives an execution.
func (s *stmt) Close() error { return nil }

// NumInput returns -1: the real driver checks the argument count.
func (s *stmt) NumInput() int { return -1 }

// ExecContext runs the statement.
func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.vc.exec(ctx, s.query, s.d, args)
}

// QueryContext runs the query.
func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.vc.query(ctx, s.query, s.d, args)
}

// Exec is ExecContext for callers of the pre-context interface.
func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), valuesToNamed(args))
}

// Query is QueryContext for callers of the pre-context interface.
func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), valuesToNamed(args))
}
