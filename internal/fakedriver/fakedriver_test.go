package fakedriver_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/driverinfo"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

var pg = fakedriver.Register("fakedriver-test-postgres", fakedriver.Options{Prepare: true, ReadOnlyTx: true})

func init() { fakedriver.Register("fakedriver-test-mysql", fakedriver.Options{ReadOnlyTx: true}) }

// A write in a read-only transaction fails with the read-only error of
// the driver's dialect, one rwpool reads as such; a read, or a write in a
// read-write transaction, succeeds.
func TestReadOnlyTx(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		driver string
		as     func(error) bool
	}{
		{"fakedriver-test-postgres", func(err error) bool {
			var e *fakedriver.PostgresError
			return errors.As(err, &e) && e.Code == "25006"
		}},
		{"fakedriver-test-mysql", func(err error) bool {
			var e *fakedriver.MySQLError
			return errors.As(err, &e) && e.Number == 1792
		}},
	} {
		db, err := sql.Open(tc.driver, t.Name())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "SELECT 1"); err != nil {
			t.Errorf("%s: a read in a read-only transaction: %v", tc.driver, err)
		}
		_, err = tx.ExecContext(ctx, "insert INTO t VALUES (1)")
		if !tc.as(err) || !driverinfo.ReadOnly(err) {
			t.Errorf("%s: a write in a read-only transaction: %v, want the dialect's read-only error", tc.driver, err)
		}
		tx.Rollback()
		tx, err = db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
			t.Errorf("%s: a write in a read-write transaction: %v", tc.driver, err)
		}
		tx.Commit()
	}
}

// With Prepare, a connection's prepared statement is held by SetHang
// like its other statements, and closing it while its Exec runs is
// counted.
func TestPrepareHangAndClosedMidStatement(t *testing.T) {
	n := pg.Fresh(t.Name())
	db, err := sql.Open("fakedriver-test-postgres", t.Name())
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
	var real any
	if err := c.Raw(func(dc any) error { real = dc; return nil }); err != nil {
		t.Fatal(err)
	}
	st, err := real.(driver.Conn).Prepare("UPDATE t SET a = 1")
	if err != nil {
		t.Fatal(err)
	}
	n.SetHang(true)
	done := make(chan error, 1)
	go func() { _, err := st.Exec(nil); done <- err }()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Exec returned on a hung node: %v", err)
	default:
	}
	st.Close()
	n.SetHang(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := n.ClosedMidStatement(); got != 1 {
		t.Errorf("ClosedMidStatement = %d, want 1", got)
	}
	st.Close()
	if got := n.ClosedMidStatement(); got != 1 {
		t.Errorf("after a Close with nothing running: ClosedMidStatement = %d, want 1", got)
	}
}

// held is a driver whose queries of "HOLD" wait in BeforeAnswer until
// release is closed, having told started.
var (
	heldStarted = make(chan struct{}, 1)
	heldRelease chan struct{} // made by each test run
	held        = fakedriver.Register("fakedriver-test-held", fakedriver.Options{
		BeforeAnswer: func(_ context.Context, _, query string) {
			if query == "HOLD" {
				heldStarted <- struct{}{}
				<-heldRelease
			}
		},
	})
)

// OpenRows counts result sets until they close (once each), and
// ConcurrentUse a call on a connection made while another runs on it;
// BeforeAnswer holds a query's answer.
func TestOpenRowsAndConcurrentUse(t *testing.T) {
	n := held.Fresh(t.Name())
	heldRelease = make(chan struct{})
	db, err := sql.Open("fakedriver-test-held", t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if got := n.OpenRows(); got != 1 {
		t.Errorf("with a result set open: OpenRows = %d, want 1", got)
	}
	rows.Close()
	rows.Close()
	if got := n.OpenRows(); got != 0 {
		t.Errorf("after it closed: OpenRows = %d, want 0", got)
	}

	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var real any
	if err := c.Raw(func(dc any) error { real = dc; return nil }); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		rs, err := real.(driver.QueryerContext).QueryContext(ctx, "HOLD", nil)
		if err == nil {
			err = rs.Close()
		}
		done <- err
	}()
	<-heldStarted
	if got := n.ConcurrentUse(); got != 0 {
		t.Fatalf("ConcurrentUse = %d before any overlap", got)
	}
	real.(driver.Validator).IsValid() // while HOLD runs
	close(heldRelease)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := n.ConcurrentUse(); got != 1 {
		t.Errorf("ConcurrentUse = %d, want 1", got)
	}
	if got := n.OpenRows(); got != 0 {
		t.Errorf("OpenRows = %d, want 0", got)
	}
}
