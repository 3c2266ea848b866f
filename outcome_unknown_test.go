package rwpool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// unknownErr is the driver's own error type of the outcome tests: errors.As
// must reach it through rwpool's error.
type unknownErr struct{ msg string }

func (e *unknownErr) Error() string { return e.msg }
func (e *unknownErr) Unwrap() error { return io.ErrUnexpectedEOF }

// outcomeFake loses the connection of a statement naming LOSE (io.EOF in a
// driver error type, as a server that dies after getting it) and of one
// naming BADCONN (driver.ErrBadConn, as lib/pq says it).
var outcomeFake = fakedriver.Register("rwpool-test-outcome", fakedriver.Options{AnswerOne: true, Fail: failOutcome})

func failOutcome(dsn, q string) error {
	switch {
	case strings.Contains(q, "BADCONN"):
		return driver.ErrBadConn
	case strings.Contains(q, "LOSE"):
		return &unknownErr{msg: "server closed the connection: " + io.ErrUnexpectedEOF.Error()}
	}
	return nil
}

// TestOutcomeUnknown (issue #23): a write or a COMMIT whose connection is
// lost after it was sent fails with an error wrapping ErrOutcomeUnknown,
// naming the node, with the driver's error reachable by errors.As and
// never driver.ErrBadConn. What was certainly not applied is not marked:
// a statement of a transaction (the transaction is lost with its
// connection), a read, a refusal.
func TestOutcomeUnknown(t *testing.T) {
	db, err := sql.Open("rwpool", "driver=rwpool-test-outcome;primary="+t.Name()+"-p;replica="+t.Name()+"-r;check_interval=1h")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	unknown := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, rwpool.ErrOutcomeUnknown) || errors.Is(err, driver.ErrBadConn) || !strings.Contains(err.Error(), "primary") {
			t.Errorf("%s: err %v; want ErrOutcomeUnknown naming the node, not driver.ErrBadConn", what, err)
		}
	}
	_, err = db.ExecContext(ctx, "INSERT INTO t VALUES ('LOSE')")
	unknown("a lost write", err)
	var de *unknownErr
	if !errors.As(err, &de) {
		t.Errorf("a lost write: the driver's error is not reachable with errors.As: %v", err)
	}
	_, err = db.ExecContext(ctx, "UPDATE t SET v = 'BADCONN'")
	unknown("a write lost with driver.ErrBadConn", err)
	err = db.QueryRowContext(ctx, "INSERT INTO t VALUES ('LOSE') RETURNING id").Scan(new(int))
	unknown("a lost INSERT … RETURNING", err)

	// Inside a transaction a lost statement loses the transaction: not
	// applied. Its COMMIT, lost, may have committed.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO t VALUES ('LOSE')")
	if errors.Is(err, rwpool.ErrOutcomeUnknown) || err == nil {
		t.Errorf("a statement lost in a transaction: err %v, want an error, not ErrOutcomeUnknown", err)
	}
	tx.Rollback()

	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range []string{"BEGIN", "INSERT INTO t VALUES (1)"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.ExecContext(ctx, "COMMIT /* LOSE */")
	unknown("a lost COMMIT sent as SQL", err)

	// A read that loses its connection is replayed, not marked.
	if err := db.QueryRowContext(ctx, "SELECT 'LOSE'").Scan(new(int)); errors.Is(err, rwpool.ErrOutcomeUnknown) {
		t.Errorf("a lost read: %v", err)
	}
}

// commitFake fails every Commit of a driver.Tx as a lost connection.
var commitFake = fakedriver.Register("rwpool-test-outcome-commit", fakedriver.Options{AnswerOne: true, Fail: func(_, q string) error {
	if q == "COMMIT" {
		return io.ErrUnexpectedEOF
	}
	return nil
}})

// TestCommitOutcomeUnknown: tx.Commit whose connection is lost returns an
// error wrapping ErrOutcomeUnknown (and io.ErrUnexpectedEOF, the driver's).
func TestCommitOutcomeUnknown(t *testing.T) {
	db, err := sql.Open("rwpool", "driver=rwpool-test-outcome-commit;primary="+t.Name()+"-p;check_interval=1h")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	err = tx.Commit()
	if !errors.Is(err, rwpool.ErrOutcomeUnknown) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a lost commit: %v; want ErrOutcomeUnknown wrapping the driver's io.ErrUnexpectedEOF", err)
	}
}
