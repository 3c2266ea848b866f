package rwpool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
)

// gateDriver answers "SELECT hang" only when its context ends (or release
// closes), every other query at once (probes included: nothing trips); a
// connection to a DSN in slowClose takes that long to close.
type gateDriver struct {
	mu        sync.Mutex
	release   chan struct{}
	slowClose map[string]time.Duration
	closing   chan string // told of each slow Close as it begins
}

var gate = &gateDriver{release: make(chan struct{}), closing: make(chan string, 16)}

func init() { sql.Register("rwpool-internal-gate", gate) }

func (d *gateDriver) Open(name string) (driver.Conn, error) { return &gateConn{d: d, dsn: name}, nil }

func (d *gateDriver) setSlowClose(m map[string]time.Duration) {
	d.mu.Lock()
	d.slowClose = m
	d.mu.Unlock()
}

// releaseAll answers every "SELECT hang" waiting.
func (d *gateDriver) releaseAll() {
	d.mu.Lock()
	close(d.release)
	d.release = make(chan struct{})
	d.mu.Unlock()
}

type gateConn struct {
	d   *gateDriver
	dsn string
}

func (c *gateConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (c *gateConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }

func (c *gateConn) Close() error {
	c.d.mu.Lock()
	d := c.d.slowClose[c.dsn]
	c.d.mu.Unlock()
	if d > 0 {
		select {
		case c.d.closing <- c.dsn:
		default:
		}
	}
	time.Sleep(d)
	return nil
}

func (c *gateConn) QueryContext(ctx context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	if q == "SELECT hang" {
		c.d.mu.Lock()
		rel := c.d.release
		c.d.mu.Unlock()
		select {
		case <-rel:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &gateRows{dsn: c.dsn, n: 1}, nil
}

func (c *gateConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(1), nil
}

type gateRows struct {
	dsn string
	n   int
}

func (r *gateRows) Columns() []string { return []string{"node"} }
func (r *gateRows) Close() error      { return nil }
func (r *gateRows) Next(dest []driver.Value) error {
	if r.n == 0 {
		return io.EOF
	}
	r.n--
	dest[0] = r.dsn
	return nil
}

// A read issued on a held *sql.Conn while its Connector closes keeps its
// caller's deadline. Close stops the sweeper first, then closes the node
// pools one by one, the primary's first: here its idle connection takes
// 500 ms to close, so the replicas' pools still serve. The sweeper had
// drained nothing and left with its awake flag up: the read was published
// for nobody and ran until the server answered. (Found by an adversarial
// review of the sweep.)
func TestSweepReadDuringCloseKeepsDeadline(t *testing.T) {
	p, r1, r2 := t.Name()+"-p", t.Name()+"-r1", t.Name()+"-r2"
	cfg, err := dsn.Parse("driver=rwpool-internal-gate;probe_timeout=1s;check_interval=1h;primary=" + p + ";replica=" + r1 + ";replica=" + r2)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConnector(cfg, honoursContext)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	gate.setSlowClose(map[string]time.Duration{p: 500 * time.Millisecond})
	defer gate.setSlowClose(nil)

	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := db.ExecContext(ctx, "UPDATE t SET x = 1"); err != nil { // an idle connection in the primary's pool
		t.Fatal(err)
	}
	// A quick read with a deadline starts the sweeper, awake for its next
	// sweepIdle sweeps.
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	var node string
	if err := conn.QueryRowContext(rctx, "SELECT 1").Scan(&node); err != nil {
		t.Fatal(err)
	}
	cancel()
	if !c.sweep.awake.Load() {
		t.Fatal("the sweeper is asleep already")
	}
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	defer func() { <-closed }()
	select { // Close is in the primary's pool: the sweeper has left
	case <-gate.closing:
	case <-time.After(5 * time.Second):
		t.Fatal("Close never closed the primary's connection")
	}

	rctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- conn.QueryRowContext(rctx, "SELECT hang").Scan(&node) }()
	select {
	case err := <-done:
		if took := time.Since(start); took > time.Second {
			t.Errorf("a read with a 100ms deadline took %v (%v)", took, err)
		}
	case <-time.After(2 * time.Second):
		gate.releaseAll()
		<-done
		t.Fatal("a read with a 100ms deadline started during Close still ran 2s later")
	}
}
