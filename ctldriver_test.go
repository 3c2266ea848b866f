package rwpool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// ctlDriver is a fake driver whose nodes can be taken down, hung and
// brought back, for unit tests of the breaker, health checks and replay.
// A node is named by its DSN. Every query answers one row: the node name.
type ctlDriver struct {
	mu    sync.Mutex
	nodes map[string]*ctlNode
}

type ctlNode struct {
	down    atomic.Bool   // dials and statements fail with a connection error
	hang    chan struct{} // when non-nil, statements block until it is closed
	served  atomic.Int64
	dials   atomic.Int64
	open    atomic.Int64
	writeFn func() error          // error returned by Exec, if set
	rowsErr atomic.Pointer[error] // when set, rows fail with it after their first row
}

var ctl = &ctlDriver{nodes: map[string]*ctlNode{}}

func init() { sql.Register("rwpool-test-ctl", ctl) }

// node returns (creating) the node called name.
func (d *ctlDriver) node(name string) *ctlNode {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, ok := d.nodes[name]
	if !ok {
		n = &ctlNode{}
		d.nodes[name] = n
	}
	return n
}

// fresh replaces the node called name with a new, healthy one, so tests
// run with -count=N start clean.
func (d *ctlDriver) fresh(name string) *ctlNode {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := &ctlNode{}
	d.nodes[name] = n
	return n
}

func (d *ctlDriver) hangCh(n *ctlNode) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return n.hang
}

// setHang makes the node's statements block (true) or releases them.
func (d *ctlDriver) setHang(n *ctlNode, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if on && n.hang == nil {
		n.hang = make(chan struct{})
	}
	if !on && n.hang != nil {
		close(n.hang)
		n.hang = nil
	}
}

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

func (d *ctlDriver) Open(name string) (driver.Conn, error) {
	n := d.node(name)
	n.dials.Add(1)
	if n.down.Load() {
		return nil, errRefused
	}
	n.open.Add(1)
	return &ctlConn{d: d, n: n, name: name}, nil
}

type ctlConn struct {
	d    *ctlDriver
	n    *ctlNode
	name string
	bad  bool
}

func (c *ctlConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (c *ctlConn) Begin() (driver.Tx, error)           { return ctlTx{}, nil }
func (c *ctlConn) Close() error                        { c.n.open.Add(-1); return nil }
func (c *ctlConn) IsValid() bool                       { return !c.bad }

// run blocks while the node hangs (the driver ignores ctx, as lib/pq does
// on a hung server) and fails while it is down.
func (c *ctlConn) run() error {
	if h := c.d.hangCh(c.n); h != nil {
		<-h
	}
	if c.n.down.Load() {
		c.bad = true
		return io.ErrUnexpectedEOF
	}
	c.n.served.Add(1)
	return nil
}

func (c *ctlConn) QueryContext(context.Context, string, []driver.NamedValue) (driver.Rows, error) {
	if err := c.run(); err != nil {
		return nil, err
	}
	if e := c.n.rowsErr.Load(); e != nil {
		return &failingRows{legacyRows: legacyRows{node: c.name}, err: *e}, nil
	}
	return &legacyRows{node: c.name}, nil
}

// failingRows answer one row, then fail: a connection lost mid-result.
type failingRows struct {
	legacyRows
	err error
}

func (r *failingRows) Next(dest []driver.Value) error {
	if err := r.legacyRows.Next(dest); err != nil {
		return r.err
	}
	return nil
}

func (c *ctlConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	if err := c.run(); err != nil {
		return nil, err
	}
	if c.n.writeFn != nil {
		return nil, c.n.writeFn()
	}
	return driver.RowsAffected(1), nil
}

type ctlTx struct{}

func (ctlTx) Commit() error   { return nil }
func (ctlTx) Rollback() error { return nil }
