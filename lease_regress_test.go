package rwpool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
)

// revDriver is a fake for the lease's regression tests: the failures a
// review found, each reproduced here before it was fixed.
type revDriver struct {
	mu               sync.Mutex
	execBlock        chan struct{} // when set, real stmt Exec blocks on it (ignoring ctx)
	inExec           atomic.Int32
	closedDuringExec atomic.Bool
	readOnlyTxErr    bool
}

type pgErr struct{ code string }

func (e *pgErr) Error() string {
	return "pq: cannot execute INSERT in a read-only transaction (" + e.code + ")"
}
func (e *pgErr) SQLState() string { return e.code }

var revMy = &revDriver{}
var revPG = &revDriver{readOnlyTxErr: true}

func init() {
	sql.Register("review-mysql", revMy)
	sql.Register("review-postgres", revPG)
}

func (d *revDriver) Open(name string) (driver.Conn, error) { return &revConn{d: d}, nil }

type revConn struct {
	d  *revDriver
	ro bool
}

func (c *revConn) Prepare(q string) (driver.Stmt, error) { return &revStmt{c: c, q: q}, nil }
func (c *revConn) Close() error                          { return nil }
func (c *revConn) Begin() (driver.Tx, error)             { return revTx{c}, nil }
func (c *revConn) BeginTx(_ context.Context, o driver.TxOptions) (driver.Tx, error) {
	c.ro = o.ReadOnly
	return revTx{c}, nil
}
func (c *revConn) ExecContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Result, error) {
	if q == "BROKEN" {
		return nil, io.ErrUnexpectedEOF
	}
	if c.d.readOnlyTxErr && c.ro && strings.HasPrefix(q, "INSERT") {
		return nil, &pgErr{"25006"}
	}
	return driver.RowsAffected(1), nil
}
func (c *revConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	switch {
	case strings.HasPrefix(q, "SELECT pg_is_in_recovery()"):
		return &revRows{cols: 3, row: []driver.Value{false, "0/16B3748", float64(-1)}}, nil
	case strings.Contains(q, "BROKENROWS"):
		return &revRows{cols: 1, row: []driver.Value{int64(1)}, err: io.ErrUnexpectedEOF}, nil
	case q == "SELECT @@version":
		return &revRows{cols: 1, row: []driver.Value{"8.0.36"}}, nil
	case strings.HasPrefix(q, "SELECT @@read_only"):
		return &revRows{cols: 2, row: []driver.Value{int64(0), ""}}, nil
	}
	return &revRows{cols: 1, row: []driver.Value{int64(1)}}, nil
}

type revTx struct{ c *revConn }

func (t revTx) Commit() error   { t.c.ro = false; return nil }
func (t revTx) Rollback() error { t.c.ro = false; return nil }

type revStmt struct {
	c *revConn
	q string
}

func (s *revStmt) Close() error {
	if s.c.d.inExec.Load() > 0 {
		s.c.d.closedDuringExec.Store(true)
	}
	return nil
}
func (s *revStmt) NumInput() int { return -1 }
func (s *revStmt) Exec([]driver.Value) (driver.Result, error) {
	s.c.d.inExec.Add(1)
	defer s.c.d.inExec.Add(-1)
	s.c.d.mu.Lock()
	ch := s.c.d.execBlock
	s.c.d.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return driver.RowsAffected(1), nil
}
func (s *revStmt) Query([]driver.Value) (driver.Rows, error) {
	return &revRows{cols: 1, row: []driver.Value{int64(1)}}, nil
}

type revRows struct {
	cols int
	row  []driver.Value
	done bool
	err  error
}

func (r *revRows) Columns() []string { return make([]string, r.cols) }
func (r *revRows) Close() error      { return nil }
func (r *revRows) Next(dest []driver.Value) error {
	if r.done {
		if r.err != nil {
			return r.err
		}
		return io.EOF
	}
	r.done = true
	copy(dest, r.row)
	return nil
}

// Finding: a lease that parked its last read's connection (MySQL/generic
// dialects) acquires a new one before unparking: hold-and-wait.
func TestReviewParkHoldAndWait(t *testing.T) {
	db, err := sql.Open("rwpool", "driver=review-mysql;primary='p';pool_size=1;acquire_timeout=300ms;breaker=off")
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

func TestReviewParkHoldAndWaitPing(t *testing.T) {
	db, err := sql.Open("rwpool", "driver=review-mysql;primary='p';pool_size=1;acquire_timeout=300ms;breaker=off")
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
func TestReviewAbandonedPinStmtClose(t *testing.T) {
	// review-postgres: dialect postgres, not known to honour contexts: watched.
	db, err := sql.Open("rwpool", "driver=review-postgres;primary='p';breaker=off")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	block := make(chan struct{})
	revPG.mu.Lock()
	revPG.execBlock = block
	revPG.mu.Unlock()
	defer func() {
		revPG.mu.Lock()
		revPG.execBlock = nil
		revPG.mu.Unlock()
	}()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := tx.PrepareContext(ctx, "UPDATE t SET a = $1")
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = st.ExecContext(tctx, 1)
	cancel()
	t.Logf("exec: %v", err)
	st.Close()
	tx.Rollback()
	time.Sleep(20 * time.Millisecond)
	if revPG.closedDuringExec.Load() {
		t.Errorf("real statement closed while the abandoned Exec was still in the driver")
	}
	close(block)
}

// Finding: a 25006 the user's own read-only transaction produced on the
// primary retires every primary connection (EndpointMoved).
func TestReviewFenceFalsePositive(t *testing.T) {
	var moved atomic.Int32
	cfg, err := rwdsnParse("driver=review-postgres;primary='p';readonly_tx=primary;breaker=off")
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
	var pe *pgErr
	t.Logf("insert in read-only tx: %v (pgErr %v)", err, errors.As(err, &pe))
	tx.Rollback()
	time.Sleep(200 * time.Millisecond)
	if n := moved.Load(); n > 0 {
		t.Errorf("EndpointMoved events: %d for a write refused by the caller's own READ ONLY transaction", n)
	}
}

type dsnConfig = dsn.Config

var dsnParse = dsn.Parse

func rwdsnParse(s string) (*dsnConfig, error) { return dsnParse(s) }

// Rows on a pin settle only that pin: after it broke (and the lease was
// lost), closing them counts their error and touches nothing else.
func TestReviewPinnedRowsSettleWrongPin(t *testing.T) {
	db, err := sql.Open("rwpool", "driver=review-mysql;primary='p';breaker=off")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	c, _ := db.Conn(ctx)
	r1, err := c.QueryContext(ctx, "SELECT BROKENROWS FOR UPDATE")
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

func TestReviewResidueLostSilently(t *testing.T) {
	db, _ := sql.Open("rwpool", "driver=review-mysql;primary='p';breaker=off")
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
func TestReviewWaitGroupAfterClose(t *testing.T) {
	for i := 0; i < 100; i++ {
		db, _ := sql.Open("rwpool", "driver=review-postgres;primary='p';replica='r';check_interval=5ms")
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
