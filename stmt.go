package rwpool

import (
	"context"
	"database/sql/driver"
	"strings"

	"github.com/rwpool/rwpool/pool"
	"github.com/rwpool/rwpool/routing"
)

// stmt is a prepared statement. It comes in two kinds:
//
//   - Lazy (the usual one): classified once, at Prepare, and run at each
//     execution on the node routing chooses then, through that real
//     connection's direct execution path (lib/pq, go-sql-driver/mysql and
//     pgx prepare and execute there in one exchange) or, when the driver
//     asks for it with driver.ErrSkip, by preparing, executing and closing
//     it there. Preparing eagerly on one node would tie the statement to it
//     and defeat routing.
//   - Real: prepared while the lease is pinned (in a transaction, after a
//     write), or for a statement only a real prepared statement can run
//     (lib/pq's COPY FROM STDIN), it is the real driver's statement on the
//     pin, executed through its own Exec and Query with the arguments as
//     given. The lease closes it when the pin goes back to its pool; an
//     execution after that runs lazily.
type stmt struct {
	vc    *conn
	query string
	d     routing.Decision
	real  driver.Stmt // nil for a lazy statement
	pc    *pool.Conn  // the pin real was prepared on
}

var _ interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
} = (*stmt)(nil)

// live reports whether s is a real statement still on the lease's pin.
func (s *stmt) live() bool { return s.real != nil && s.pc == s.vc.lease.pc }

// Close closes the real statement, if any.
func (s *stmt) Close() error {
	if s.real == nil {
		return nil
	}
	s.vc.lease.forget(s)
	st := s.real
	s.real, s.pc = nil, nil
	return st.Close()
}

// NumInput returns the real statement's count, or -1 for a lazy one: the
// real driver checks the arguments when it runs the statement.
func (s *stmt) NumInput() int {
	if s.real != nil {
		return s.real.NumInput()
	}
	return -1
}

// ExecContext runs the statement.
func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if !s.live() {
		return s.vc.exec(ctx, s.query, s.d, args)
	}
	if err := s.vc.usable(); err != nil {
		return nil, err
	}
	st := s.real // the closure must not read s.real: Close may clear it after an abandoned call
	return s.vc.execPinned(ctx, s.query, s.d, func(pc *pool.Conn) (driver.Result, error) {
		if !s.vc.c.watches(ctx) {
			return execStmt(ctx, pc.Raw(), st, args)
		}
		return watched(s.vc.c, ctx, pc, func() (driver.Result, error) {
			return execStmt(ctx, pc.Raw(), st, args)
		}, nil)
	})
}

// QueryContext runs the query.
func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if !s.live() {
		return s.vc.query(ctx, s.query, s.d, args)
	}
	if err := s.vc.usable(); err != nil {
		return nil, err
	}
	st := s.real // see ExecContext
	return s.vc.queryPinned(ctx, s.query, s.d, func(pc *pool.Conn) (*rows, error) {
		run := func() (*rows, error) {
			rs, err := queryStmt(ctx, pc.Raw(), st, args)
			if err != nil {
				return nil, err
			}
			return &rows{rs: rs}, nil
		}
		if !s.vc.c.watches(ctx) {
			return run()
		}
		return watched(s.vc.c, ctx, pc, run, func(r *rows) { r.Close() })
	})
}

// Exec is ExecContext for callers of the pre-context interface.
func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), valuesToNamed(args))
}

// Query is QueryContext for callers of the pre-context interface.
func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), valuesToNamed(args))
}

// needsRealStmt reports whether query can only run as a real prepared
// statement: lib/pq's COPY … FROM STDIN (pq.CopyIn), whose statement
// streams each Exec's arguments as a row.
func needsRealStmt(d routing.Dialect, query string) bool {
	if d == routing.DialectMySQL {
		return false
	}
	q := strings.TrimLeft(query, " \t\r\n")
	return len(q) > 4 && strings.EqualFold(q[:4], "COPY") &&
		strings.Contains(strings.ToUpper(q), "FROM STDIN")
}
