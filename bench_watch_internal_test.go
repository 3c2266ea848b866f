package rwpool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"testing"
)

// watchDriver is a no-op driver that watches a statement's context as
// go-sql-driver/mysql does (watchCancel, startWatcher, finish): each
// connection has a goroutine, handed every context that can end (a
// buffered send) and told when the statement's rows close (an unbuffered
// send the statement waits on). A context that can never end costs it
// nothing. pgx pays the like with its context watcher.
type watchDriver struct{}

func init() { sql.Register("rwpool-bench-watch", watchDriver{}) }

func (watchDriver) Open(string) (driver.Conn, error) {
	c := &watchConn{watcher: make(chan context.Context, 1), finished: make(chan struct{}), closech: make(chan struct{})}
	go c.watch()
	return c, nil
}

type watchConn struct {
	watcher  chan context.Context
	finished chan struct{}
	closech  chan struct{}
	watching bool
}

func (c *watchConn) watch() {
	for {
		var ctx context.Context
		select {
		case ctx = <-c.watcher:
		case <-c.closech:
			return
		}
		select {
		case <-ctx.Done():
		case <-c.finished:
		case <-c.closech:
			return
		}
	}
}

func (c *watchConn) watchCancel(ctx context.Context) {
	if ctx.Done() == nil {
		return
	}
	c.watching = true
	c.watcher <- ctx
}

func (c *watchConn) finish() {
	if !c.watching {
		return
	}
	select {
	case c.finished <- struct{}{}:
		c.watching = false
	case <-c.closech:
	}
}

func (c *watchConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (c *watchConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }
func (c *watchConn) Close() error {
	close(c.closech)
	return nil
}
func (c *watchConn) QueryContext(ctx context.Context, _ string, _ []driver.NamedValue) (driver.Rows, error) {
	c.watchCancel(ctx)
	return &watchRows{c: c}, nil
}

type watchRows struct {
	c    *watchConn
	done bool
}

func (*watchRows) Columns() []string { return []string{"n"} }
func (r *watchRows) Close() error {
	r.c.finish()
	return nil
}
func (r *watchRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}

// BenchmarkReadWatchingDriver measures a plain read over watchDriver from
// 64 goroutines on GOMAXPROCS, with a context that can end and with one
// that cannot, through the bare driver and through rwpool. What rwpool
// hands the driver decides what the driver's watcher costs.
func BenchmarkReadWatchingDriver(b *testing.B) {
	benchBareAndRWPool(b, "rwpool-bench-watch", benchReadParallel)
}

func benchReadParallel(b *testing.B, db *sql.DB, ctx context.Context) {
	db.SetMaxIdleConns(64)
	b.ReportAllocs()
	b.SetParallelism(32) // 64 goroutines on 2 cores, as rwpool bench runs
	b.RunParallel(func(pb *testing.PB) {
		var n int
		for pb.Next() {
			if err := db.QueryRowContext(ctx, "SELECT 1 FROM t WHERE id = $1", 7).Scan(&n); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
