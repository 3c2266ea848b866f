package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"

	"github.com/rwpool/rwpool/pool"
)

// errAbandoned says a call outlived its context: the caller returns
// ctx.Err() and the connection now belongs to the goroutine still in the
// driver, which destroys it when the driver lets go.
var errAbandoned = errors.New("rwpool: call abandoned at its deadline")

// needsWatch reports whether the real driver may block past a context's
// end on a hung server. lib/pq does: it cancels by sending a cancel
// request on a new connection, which a hung server never answers, and
// keeps reading. go-sql-driver/mysql and pgx close or time out the socket
// themselves. Unknown drivers are watched, to be safe.
func needsWatch(driverName string) bool {
	switch driverName {
	case "mysql", "pgx", "pgx/v5":
		return false
	}
	return true
}

// execWatched runs execReal on pc, bounded by ctx even when the driver
// ignores ctx (see needsWatch).
func execWatched(c *Connector, ctx context.Context, pc *pool.Conn, query string, args []driver.NamedValue) (driver.Result, error) {
	if !c.watch || ctx.Done() == nil {
		return execReal(ctx, pc.Raw(), query, args)
	}
	return watched(c, ctx, pc, func() (driver.Result, error) {
		return execReal(ctx, pc.Raw(), query, args)
	}, nil)
}

// queryWatched runs queryReal on pc and wraps its rows, bounded by ctx like
// execWatched.
func queryWatched(c *Connector, ctx context.Context, pc *pool.Conn, query string, args []driver.NamedValue) (*rows, error) {
	if !c.watch || ctx.Done() == nil {
		return queryRows(ctx, pc, query, args)
	}
	return watched(c, ctx, pc, func() (*rows, error) {
		return queryRows(ctx, pc, query, args)
	}, func(r *rows) { r.Close() })
}

func queryRows(ctx context.Context, pc *pool.Conn, query string, args []driver.NamedValue) (*rows, error) {
	rs, st, err := queryReal(ctx, pc.Raw(), query, args)
	if err != nil {
		return nil, err
	}
	return &rows{rs: rs, st: st}, nil
}

// watched runs f in a goroutine and waits for it or for ctx, whichever
// comes first. When ctx wins it returns errAbandoned; the goroutine, once
// f returns, discards f's result and destroys pc.
func watched[T any](c *Connector, ctx context.Context, pc *pool.Conn, f func() (T, error), discard func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	var state atomic.Int32 // 0 running, 1 finished, 2 abandoned
	done := make(chan result, 1)
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		v, err := f()
		if state.CompareAndSwap(0, 1) {
			done <- result{v, err}
			return
		}
		if err == nil && discard != nil {
			discard(v)
		}
		pc.Destroy()
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		if state.CompareAndSwap(0, 2) {
			var zero T
			return zero, errAbandoned
		}
		r := <-done
		return r.v, r.err
	}
}
