package rwpool_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// The lease's regression tests: the failures a review found, each
// reproduced here before it was fixed. They run over the leaseMySQL and
// leasePostgres drivers of fakedriver_test.go, on nodes named after the
// test.

// Finding: a lease that parked its last read's connection (MySQL/generic
// dialects) acquires a new one before unparking: hold-and-wait.
func TestLeaseUnparksBeforeBorrowing(t *testing.T) {
	leaseMySQL.Fresh(t.Name())
	db, err := sql.Open("rwpool", "driver=rwpool-test-lease-mysql;primary='"+t.Name()+"';pool_size=1;acquire_timeout=300ms;breaker=off")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var x int
	if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&x); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Errorf("write after a read on the same *sql.Conn: %v", err)
	}
	var y int
	c.QueryRowContext(ctx, "SELECT 1").Scan(&y) // ends the pin? no: pinned now
}

// The same finding for Ping, and a diagnostics statement after it.
func TestLeaseUnparksBeforePinging(t *testing.T) {
	leaseMySQL.Fresh(t.Name())
	db, err := sql.Open("rwpool", "driver=rwpool-test-lease-mysql;primary='"+t.Name()+"';pool_size=1;acquire_timeout=300ms;breaker=off")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	c, _ := db.Conn(ctx)
	defer c.Close()
	var x int
	if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&x); err != nil {
		t.Fatal(err)
	}
	if err := c.PingContext(ctx); err != nil {
		t.Errorf("ping after a read on the same *sql.Conn: %v", err)
	}
	if _, err := c.ExecContext(ctx, "SHOW WARNINGS"); err != nil {
		t.Errorf("show warnings: %v", err)
	}
}

// Finding: an abandoned call on a pin leaves the lease's real statements
// attached; closing them then touches a connection another goroutine is in.
func TestAbandonedPinForgetsItsStatements(t *testing.T) {
	// rwpool-test-lease-postgres: dialect postgres, not known to honour
	// contexts: watched. Its connections prepare real statements.
	p := leasePostgres.Fresh(t.Name())
	db, err := sql.Open("rwpool", "driver=rwpool-test-lease-postgres;primary='"+t.Name()+"';breaker=off")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := tx.PrepareContext(ctx, "UPDATE t SET a = $1")
	if err != nil {
		t.Fatal(err)
	}
	// The node hangs: the Exec below blocks, ignoring its context, until
	// released.
	p.SetHang(true)
	defer p.SetHang(false)
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = st.ExecContext(tctx, 1)
	cancel()
	t.Logf("exec: %v", err)
	st.Close()
	tx.Rollback()
	time.Sleep(20 * time.Millisecond)
	if p.ClosedMidStatement() > 0 {
		t.Errorf("real statement closed while the abandoned Exec was still in the driver")
	}
}

// Finding: a 25006 the user's own read-only transaction produced on the
// primary retires every primary connection (EndpointMoved).
func TestReadOnlyTransactionMovesNoEndpoint(t *testing.T) {
	// A fresh connection finds the primary writable: a fence would take
	// the refusal for a moved endpoint.
	leasePostgres.Fresh(t.Name()).SetStatus(fakedriver.Status{LSN: "0/16B3748", ReplayAge: -1})
	var moved atomic.Int32
	cfg, err := dsn.Parse("driver=rwpool-test-lease-postgres;primary='" + t.Name() + "';readonly_tx=primary;breaker=off")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rwpool.NewConnector(cfg, rwpool.WithEventHandler(func(e rwpool.Event) {
		if e.Kind == rwpool.EndpointMoved {
			moved.Add(1)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO t VALUES (1)")
	var pe *fakedriver.PostgresError
	t.Logf("insert in read-only tx: %v (PostgresError %v)", err, errors.As(err, &pe))
	tx.Rollback()
	time.Sleep(200 * time.Millisecond)
	if n := moved.Load(); n > 0 {
		t.Errorf("EndpointMoved events: %d for a write refused by the caller's own READ ONLY transaction", n)
	}
}

// Rows on a pin settle only that pin: after it broke (and the lease was
// lost), closing them counts their error and touches nothing else.
func TestRowsSettleOnlyTheirPin(t *testing.T) {
	// The node's result sets fail after their first row; BROKEN fails as
	// a connection lost mid-statement (failBroken).
	leaseMySQL.Fresh(t.Name()).SetRowsErr(io.ErrUnexpectedEOF)
	db, err := sql.Open("rwpool", "driver=rwpool-test-lease-mysql;primary='"+t.Name()+"';breaker=off")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	c, _ := db.Conn(ctx)
	r1, err := c.QueryContext(ctx, "SELECT n FROM t FOR UPDATE")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "BROKEN"); err == nil {
		t.Fatal("want an error")
	}
	if _, err := c.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err == nil {
		t.Error("a statement ran on a lease whose pin broke")
	}
	for r1.Next() {
	}
	r1.Close()
	c.Close()
	s, _ := rwpool.Stats(db)
	if s.Nodes[0].ClosedBroken != 1 {
		t.Errorf("ClosedBroken = %d, want 1", s.Nodes[0].ClosedBroken)
	}
}

// A pin that broke after a write ends the lease: the write's session
// state (LAST_INSERT_ID) is not silently lost to a new connection.
func TestBrokenPinAfterWriteEndsLease(t *testing.T) {
	leaseMySQL.Fresh(t.Name())
	db, _ := sql.Open("rwpool", "driver=rwpool-test-lease-mysql;primary='"+t.Name()+"';breaker=off")
	defer db.Close()
	ctx := context.Background()
	c, _ := db.Conn(ctx)
	defer c.Close()
	if _, err := c.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	_, err := c.ExecContext(ctx, "BROKEN")
	t.Logf("broken: %v", err)
	var rt rwpool.Route
	var id int
	err = c.QueryRowContext(rwpool.WithRoute(ctx, &rt), "SELECT LAST_INSERT_ID()").Scan(&id)
	t.Logf("LAST_INSERT_ID: err=%v route=%+v", err, rt)
	if err == nil {
		t.Errorf("LAST_INSERT_ID ran on a new connection (%s) after the pin holding the INSERT broke", rt.Reason)
	}
}

// Closing the *sql.DB while statements still run on *sql.Conns must not
// start a goroutine Close is already waiting for (it panicked:
// "WaitGroup is reused before previous Wait has returned").
func TestCloseWhileStatementsRun(t *testing.T) {
	// Both nodes answer the health checker's status query as a writable
	// primary would.
	p, r := t.Name()+"-p", t.Name()+"-r"
	for _, n := range []string{p, r} {
		leasePostgres.Fresh(n).SetStatus(fakedriver.Status{LSN: "0/16B3748", ReplayAge: -1})
	}
	for i := 0; i < 100; i++ {
		db, _ := sql.Open("rwpool", "driver=rwpool-test-lease-postgres;primary='"+p+"';replica='"+r+"';check_interval=5ms")
		ctx := context.Background()
		var conns []*sql.Conn
		for j := 0; j < 8; j++ {
			c, _ := db.Conn(ctx)
			conns = append(conns, c)
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for _, c := range conns {
			wg.Add(1)
			go func(c *sql.Conn) {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					var x int
					c.QueryRowContext(ctx, "SELECT 1 FOR UPDATE").Scan(&x)
				}
			}(c)
		}
		time.Sleep(2 * time.Millisecond)
		db.Close()
		time.Sleep(5 * time.Millisecond)
		close(stop)
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	}
}
