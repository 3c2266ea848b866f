package rwpool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// argsDriver: on the replica, "slowread" queries wait for gate (the slow
// original); on the primary they read their []byte argument 50 ms after
// they start (a driver still encoding it when the original answers).
type argsDriver struct {
	gate    atomic.Pointer[chan struct{}]
	started atomic.Int32 // slowread queries started on the primary
	ended   atomic.Int32
}

var argsDrv = &argsDriver{}

func init() { sql.Register("rwpool-test-args", argsDrv) }

func (d *argsDriver) Open(name string) (driver.Conn, error) { return &argsConn{d: d, dsn: name}, nil }

type argsConn struct {
	d   *argsDriver
	dsn string
}

func (c *argsConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (c *argsConn) Close() error                        { return nil }
func (c *argsConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }
func (c *argsConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if strings.Contains(q, "slowread") {
		if strings.HasSuffix(c.dsn, "-r1") {
			<-*c.d.gate.Load()
		} else {
			c.d.started.Add(1)
			time.Sleep(50 * time.Millisecond)
			b := args[0].Value.([]byte)
			_ = append([]byte(nil), b...) // encode the argument
			c.d.ended.Add(1)
		}
	}
	return &argsRows{}, nil
}

type argsRows struct{ done bool }

func (r *argsRows) Columns() []string { return []string{"n"} }
func (r *argsRows) Close() error      { return nil }
func (r *argsRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}

func runArgsRead(t *testing.T, reuse bool) {
	gate := make(chan struct{})
	argsDrv.gate.Store(&gate)
	argsDrv.started.Store(0)
	argsDrv.ended.Store(0)
	db := openHonouring(t, "driver=rwpool-test-args;probe_timeout=5s;check_interval=1h;hedge_after=5ms;hedge_budget=100%;primary="+t.Name()+"-p;replica="+t.Name()+"-r1")
	defer db.Close()
	buf := []byte("abc")
	done := make(chan error, 1)
	go func() {
		var n int
		done <- db.QueryRowContext(context.Background(), "SELECT slowread WHERE x = ?", buf).Scan(&n)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for argsDrv.started.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no hedge started")
		}
		time.Sleep(time.Millisecond)
	}
	close(gate) // the original answers first
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if reuse {
		buf[0] = 'x' // the caller reuses its buffer: the read has returned
	}
	for argsDrv.ended.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
}

// A hedge's arguments are its own: the read's own call converts its slice
// in place (args.go) while the hedge starts (a data race under -race when
// the watcher copied them).
func TestHedgeArgsClone(t *testing.T) { runArgsRead(t, false) }

// A hedge still running after the read returned (the read answered
// first) never reads the caller's []byte buffer, which the caller may
// reuse (a data race under -race when only the slice was copied).
func TestHedgeArgsAfterReturn(t *testing.T) { runArgsRead(t, true) }
