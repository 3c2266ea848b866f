package rwpool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
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
