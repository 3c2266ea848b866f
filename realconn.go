package rwpool

import (
	"context"
	"database/sql/driver"
)

// This file runs statements on a real driver.Conn, using its context-aware
// interfaces when it has them and falling back as database/sql does when it
// has not (or answers driver.ErrSkip).

func execReal(ctx context.Context, rc driver.Conn, query string, args []driver.NamedValue) (driver.Result, error) {
	args, err := convertArgs(rc, nil, args)
	if err != nil {
		return nil, err
	}
	if ex, ok := rc.(driver.ExecerContext); ok {
		r, err := ex.ExecContext(ctx, query, args)
		if err != driver.ErrSkip {
			return r, err
		}
	} else if ex, ok := rc.(driver.Execer); ok { //nolint:staticcheck // legacy drivers
		vs, err := namedToValues(args)
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := ex.Exec(query, vs)
		if err != driver.ErrSkip {
			return r, err
		}
	}
	st, err := prepareReal(ctx, rc, query)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return execStmt(ctx, rc, st, args)
}

// queryReal returns the rows and, when it had to prepare a statement for
// them, that statement, to be closed with the rows.
func queryReal(ctx context.Context, rc driver.Conn, query string, args []driver.NamedValue) (driver.Rows, driver.Stmt, error) {
	args, err := convertArgs(rc, nil, args)
	if err != nil {
		return nil, nil, err
	}
	if q, ok := rc.(driver.QueryerContext); ok {
		rs, err := q.QueryContext(ctx, query, args)
		if err != driver.ErrSkip {
			return rs, nil, err
		}
	} else if q, ok := rc.(driver.Queryer); ok { //nolint:staticcheck // legacy drivers
		vs, err := namedToValues(args)
		if err != nil {
			return nil, nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		rs, err := q.Query(query, vs)
		if err != driver.ErrSkip {
			return rs, nil, err
		}
	}
	st, err := prepareReal(ctx, rc, query)
	if err != nil {
		return nil, nil, err
	}
	rs, err := queryStmt(ctx, rc, st, args)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return rs, st, nil
}

func prepareReal(ctx context.Context, rc driver.Conn, query string) (driver.Stmt, error) {
	if p, ok := rc.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return rc.Prepare(query)
}

func execStmt(ctx context.Context, rc driver.Conn, st driver.Stmt, args []driver.NamedValue) (driver.Result, error) {
	args, err := convertArgs(rc, st, args)
	if err != nil {
		return nil, err
	}
	if se, ok := st.(driver.StmtExecContext); ok {
		return se.ExecContext(ctx, args)
	}
	vs, err := namedToValues(args)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return st.Exec(vs) //nolint:staticcheck // legacy drivers
}

func queryStmt(ctx context.Context, rc driver.Conn, st driver.Stmt, args []driver.NamedValue) (driver.Rows, error) {
	args, err := convertArgs(rc, st, args)
	if err != nil {
		return nil, err
	}
	if sq, ok := st.(driver.StmtQueryContext); ok {
		return sq.QueryContext(ctx, args)
	}
	vs, err := namedToValues(args)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return st.Query(vs) //nolint:staticcheck // legacy drivers
}

func beginReal(ctx context.Context, rc driver.Conn, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := rc.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	if opts.Isolation != 0 || opts.ReadOnly {
		return nil, errNonDefaultTx
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return rc.Begin() //nolint:staticcheck // legacy drivers
}

func pingReal(ctx context.Context, rc driver.Conn) error {
	if p, ok := rc.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}
