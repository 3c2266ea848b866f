package rwpool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/fakedriver"
)

// badConnFake fails a statement naming BADCONN with driver.ErrBadConn, a
// connection lost before the statement was sent.
var badConnFake = fakedriver.Register("rwpool-test-badconn", fakedriver.Options{
	AnswerOne: true,
	Fail: func(_, q string) error {
		if strings.Contains(q, "BADCONN") {
			return driver.ErrBadConn
		}
		return nil
	},
})

// A *sql.Conn's own statement that loses its connection while a
// transaction is open on that Conn returns an error, not
// driver.ErrBadConn, on which database/sql would close the Conn and wait
// for the transaction forever, in the goroutine that holds it. Found by
// TestSimulation (call-hangs).
func TestConnStatementLostInTxDoesNotDeadlock(t *testing.T) {
	db, err := sql.Open("rwpool", "driver=rwpool-test-badconn;primary="+t.Name()+"-p;replica="+t.Name()+"-r;check_interval=1h")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	badConnFake.Fresh(t.Name() + "-p")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		rows, err := c.QueryContext(ctx, "SELECT 'BADCONN'")
		if err == nil {
			rows.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, driver.ErrBadConn) {
			t.Errorf("the Conn's statement that lost its connection in a transaction: %v, want an error not wrapping driver.ErrBadConn", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the Conn's statement that lost its connection in a transaction never returned (database/sql closing the Conn waits for the transaction)")
	}
	if err := tx.Rollback(); err == nil {
		t.Error("Rollback of a transaction whose connection was lost succeeded")
	}
	c.Close()
}

// failCommit makes the fake below lose the connection at COMMIT.
var failCommit atomic.Bool

// commitLostFake loses the connection at COMMIT (driver.ErrBadConn, as
// lib/pq says of a server gone) while failCommit is set.
var commitLostFake = fakedriver.Register("rwpool-test-commitlost", fakedriver.Options{
	AnswerOne: true,
	Fail: func(_, q string) error {
		if q == "COMMIT" && failCommit.Load() {
			return driver.ErrBadConn
		}
		return nil
	},
})

// A read-only transaction on a replica whose COMMIT loses its connection,
// on a *sql.Conn that also has rows open, returns an error that is not
// driver.ErrBadConn: on that, database/sql closes the Conn, which waits
// for the rows to close, in the goroutine that holds them (inside
// Tx.Commit): a deadlock. Found by TestSimulation (call-hangs, seed
// 2190610582047637743, lease-ro-rows).
func TestCommitLostWithConnRowsOpenDoesNotDeadlock(t *testing.T) {
	db, err := sql.Open("rwpool", "driver=rwpool-test-commitlost;primary="+t.Name()+"-p;replica="+t.Name()+"-r;check_interval=1h")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	commitLostFake.Fresh(t.Name() + "-p")
	r := commitLostFake.Fresh(t.Name() + "-r")
	t.Cleanup(func() { failCommit.Store(false) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var v int
	if err := tx.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if r.Served() == 0 {
		t.Fatal("the read-only transaction did not run on the replica")
	}
	rows, err := c.QueryContext(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	failCommit.Store(true)
	done := make(chan error, 1)
	go func() { done <- tx.Commit() }()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, driver.ErrBadConn) {
			t.Errorf("a COMMIT that lost its connection: %v, want an error not wrapping driver.ErrBadConn", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a COMMIT that lost its connection, with rows open on the Conn, never returned (database/sql closing the Conn waits for the rows)")
	}
	rows.Close()
	c.Close()
}
