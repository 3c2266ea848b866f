package rwpool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"sync"
	"testing"
	"time"
)

// blockCloseDriver models lib/pq on a server that hangs mid-result: a
// query ignores its context until released, and its rows' Close reads the
// rest of the result, which blocks until the connection is closed.
type blockCloseDriver struct {
	mu      sync.Mutex
	release chan struct{} // "SELECT slow" answers once closed
	force   chan struct{} // test cleanup: lets every rows.Close return
	closed  int           // connections closed
}

type blockCloseConn struct {
	d      *blockCloseDriver
	closed chan struct{}
	once   sync.Once
}

type blockCloseRows struct {
	c    *blockCloseConn
	slow bool
	done bool
}

var blockCloseFake = &blockCloseDriver{release: make(chan struct{}), force: make(chan struct{})}

func init() { sql.Register("rwpool-internal-blockclose", blockCloseFake) }

func (d *blockCloseDriver) Open(string) (driver.Conn, error) {
	return &blockCloseConn{d: d, closed: make(chan struct{})}, nil
}

func (c *blockCloseConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (c *blockCloseConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }
func (c *blockCloseConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.d.mu.Lock()
		c.d.closed++
		c.d.mu.Unlock()
	})
	return nil
}
func (c *blockCloseConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	if q == "SELECT slow" {
		<-c.d.release // ignores its context, as lib/pq on a hung server
		return &blockCloseRows{c: c, slow: true}, nil
	}
	return &blockCloseRows{c: c}, nil
}
func (c *blockCloseConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(1), nil
}
func (r *blockCloseRows) Columns() []string { return []string{"x"} }
func (r *blockCloseRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}
func (r *blockCloseRows) Close() error {
	if r.slow {
		// The rest of the result never comes: Close returns only once
		// the connection is closed under it.
		select {
		case <-r.c.closed:
		case <-r.c.d.force:
		}
	}
	return nil
}

// TestWatchedCallAbandonedDestroysBeforeClosingRows: an abandoned watched query
// whose driver returns rows late must not leave its worker stuck in the
// rows' Close: the connection is to be destroyed first (as node.discard
// does, "so that their Close cannot wait on a server that may not
// answer"), and then the rows closed.
func TestWatchedCallAbandonedDestroysBeforeClosingRows(t *testing.T) {
	d := blockCloseFake
	d.mu.Lock()
	d.release, d.force = make(chan struct{}), make(chan struct{}) // fresh for each run (-count)
	d.mu.Unlock()
	c := connectorFor(t, "driver=rwpool-internal-blockclose;primary=bc-p;check_interval=1h;breaker=off")
	defer func() {
		close(d.force) // unblock whatever is still stuck, for goleak
		c.Close()
	}()
	if !c.watch {
		t.Fatal("driver not watched")
	}
	pc, err := c.topo().nodes[0].pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := c.callWatched(ctx, pc, "SELECT slow", nil, false); err != errAbandoned {
		t.Fatalf("callWatched = %v, want errAbandoned", err)
	}
	d.mu.Lock()
	before := d.closed
	d.mu.Unlock()
	close(d.release) // the driver lets go, and hands back rows
	idle := func() int {
		c.workers.mu.Lock()
		defer c.workers.mu.Unlock()
		return len(c.workers.idle)
	}
	ok := within(2*time.Second, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.closed > before && idle() == 1
	})
	if !ok {
		d.mu.Lock()
		n := d.closed - before
		d.mu.Unlock()
		t.Fatalf("2s after the driver let go of the abandoned query: %d connections closed, %d workers idle; want the connection destroyed and the worker back (it is stuck in rows.Close, waiting on the connection it destroys only afterwards)", n, idle())
	}
}
