package rwpool_test

// Review (scratch): false EndpointMoved events.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
)

// lbDriver is a PostgreSQL-like driver whose replica DSN "ro" leads, per
// dial, to the server identity ident(dial) and whose connections break
// when the server's generation changes (a restart).
type lbDriver struct {
	ident func(dial int64, gen int64) string
	dials atomic.Int64 // dials of "ro"
	gen   atomic.Int64
}

type lbConn struct {
	d     *lbDriver
	dsn   string
	ident string
	gen   int64
}

func (d *lbDriver) Open(name string) (driver.Conn, error) {
	c := &lbConn{d: d, dsn: name, ident: name, gen: d.gen.Load()}
	if name == "ro" {
		c.ident = d.ident(d.dials.Add(1), c.gen)
	}
	return c, nil
}

func (c *lbConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("no prepare") }
func (c *lbConn) Close() error                        { return nil }
func (c *lbConn) Begin() (driver.Tx, error)           { return nil, errors.New("no tx") }

func (c *lbConn) broken() bool { return c.dsn == "ro" && c.gen != c.d.gen.Load() }

func (c *lbConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	if c.broken() {
		return nil, io.ErrUnexpectedEOF
	}
	return driver.RowsAffected(1), nil
}

func (c *lbConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	if c.broken() {
		return nil, io.ErrUnexpectedEOF
	}
	switch {
	case strings.Contains(q, "pg_postmaster_start_time"):
		return &lbRows{cols: []string{"id"}, row: []driver.Value{c.ident}}, nil
	case strings.Contains(q, "pg_is_in_recovery"):
		return &lbRows{cols: []string{"ro", "pos", "age"}, row: []driver.Value{c.dsn == "ro", "0/1000", float64(0)}}, nil
	}
	return &lbRows{cols: []string{"node"}, row: []driver.Value{c.ident}}, nil
}

type lbRows struct {
	cols []string
	row  []driver.Value
	done bool
}

func (r *lbRows) Columns() []string { return r.cols }
func (r *lbRows) Close() error      { return nil }
func (r *lbRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	copy(dest, r.row)
	return nil
}

func openLB(t *testing.T, name string, d *lbDriver, moved, tripped *atomic.Int32) *sql.DB {
	t.Helper()
	sql.Register(name, d)
	cfg, err := dsn.Parse("driver=" + name + ";primary='p';replica='ro';check_interval=10ms;probe_timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rwpool.NewConnector(cfg, rwpool.WithEventHandler(func(e rwpool.Event) {
		switch {
		case e.Kind == rwpool.EndpointMoved && e.Node != cfg.Primary.Name:
			moved.Add(1)
			t.Logf("event: %v %s: %v", e.Kind, e.Node, e.Cause)
		case e.Kind == rwpool.StateChanged && e.To == rwpool.Unavailable:
			tripped.Add(1)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	return sql.OpenDB(c)
}

func waitDials(t *testing.T, d *lbDriver, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for d.dials.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d dials of the replica", d.dials.Load())
		}
		time.Sleep(5 * time.Millisecond) // polling, not synchronisation
	}
}

// A replica DSN naming a read-only service that balances over two healthy
// replicas (CloudNativePG's -ro service, an HAProxy or cloud reader
// endpoint): every fresh dial may reach the other one. Nothing moved.
func TestBalancedReplicaEndpointIsNotAMove(t *testing.T) {
	d := &lbDriver{ident: func(dial, _ int64) string {
		return fmt.Sprintf("10.0.0.%d:5432/2026-12-01 10:00:0%d+00", 1+dial%2, dial%2)
	}}
	var moved, tripped atomic.Int32
	db := openLB(t, "rwpool-rwtest-lb-postgres", d, &moved, &tripped)
	defer db.Close()
	waitDials(t, d, 20)
	if n := moved.Load(); n > 0 {
		t.Errorf("%d EndpointMoved events (and as many pool retirements) in %d dials of a replica endpoint balancing over two healthy replicas", n, d.dials.Load())
	}
}

// A PostgreSQL replica restarted quickly (between two probes): the
// checker's connection breaks, the confirming fresh probe succeeds, the
// node never trips, and the identity differs only by
// pg_postmaster_start_time. The endpoint did not move.
func TestRestartedReplicaIsNotAMove(t *testing.T) {
	d := &lbDriver{ident: func(_, gen int64) string {
		return fmt.Sprintf("10.0.0.1:5432/2026-12-01 10:%02d:00+00", gen)
	}}
	var moved, tripped atomic.Int32
	db := openLB(t, "rwpool-rwtest-restart-postgres", d, &moved, &tripped)
	defer db.Close()
	waitDials(t, d, 2) // the baseline is read
	time.Sleep(30 * time.Millisecond)
	d.gen.Add(1) // restart: the old connections break, new ones reach the new postmaster
	waitDials(t, d, 12)
	if n := moved.Load(); n > 0 {
		t.Errorf("%d EndpointMoved events after a restart of the replica (trips: %d)", n, tripped.Load())
	}
}
