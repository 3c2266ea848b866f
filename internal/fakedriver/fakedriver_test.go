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

var repl = fakedriver.Register("fakedriver-test-replication-postgres", fakedriver.Options{Replication: true})

// With SetCommitRecords, a write's position is covered by its commit:
// at once for an exec, when its rows close for a query, at the end of a
// transaction (begun by Begin, by BEGIN, or by SET autocommit=0) for a
// write in one.
func TestCommitRecords(t *testing.T) {
	n := repl.Fresh(t.Name())
	n.SetCommitRecords(true)
	db, err := sql.Open("fakedriver-test-replication-postgres", t.Name())
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
	pos := func() string {
		t.Helper()
		var lsn string
		if err := c.QueryRowContext(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
			t.Fatal(err)
		}
		return lsn
	}
	exec := func(q string) {
		t.Helper()
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		run  func()
		want string
	}{
		{func() { exec("UPDATE t SET a = 1") }, "0/200"},
		{func() { exec("SET x = 1") }, "0/200"},
		{func() { exec("BEGIN"); exec("INSERT INTO t VALUES (1)") }, "0/300"},
		{func() { exec("COMMIT") }, "0/400"},
		{func() { exec("BEGIN"); exec("INSERT INTO t VALUES (1)"); exec("ROLLBACK TO s") }, "0/500"},
		{func() { exec("ROLLBACK") }, "0/500"},
		{func() { exec("SET autocommit = 0"); exec("DELETE FROM t") }, "0/600"},
		{func() { exec("COMMIT") }, "0/700"},
		{func() { exec("DELETE FROM t") }, "0/800"},
		{func() { exec("SET autocommit=1") }, "0/900"},
		{func() {
			tx, err := c.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			tx.ExecContext(ctx, "INSERT INTO t VALUES (2)")
			tx.Commit()
		}, "0/B00"},
	}
	for i, s := range steps {
		s.run()
		if got := pos(); got != s.want {
			t.Fatalf("step %d: position %s, want %s", i, got, s.want)
		}
	}
	rs, err := c.QueryContext(ctx, "INSERT INTO t VALUES (3) RETURNING id")
	if err != nil {
		t.Fatal(err)
	}
	var lsn string
	if err := db.QueryRowContext(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil || lsn != "0/C00" {
		t.Errorf("with a RETURNING's rows open: position %s (%v), want 0/C00", lsn, err)
	}
	rs.Close()
	if got := pos(); got != "0/D00" {
		t.Errorf("after its rows closed: position %s, want 0/D00", got)
	}
}

// SetHangPositions holds position queries, and only them.
func TestHangPositions(t *testing.T) {
	n := repl.Fresh(t.Name())
	db, err := sql.Open("fakedriver-test-replication-postgres", t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	n.SetHangPositions(true)
	done := make(chan error, 1)
	go func() {
		var lsn string
		done <- db.QueryRowContext(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn)
	}()
	if _, err := db.ExecContext(ctx, "UPDATE t SET a = 1"); err != nil {
		t.Errorf("a write on a node whose position queries hang: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("a position query returned while they hang: %v", err)
	default:
	}
	n.SetHangPositions(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// An endpoint's dials reach the nodes its route names; a node answers the
// identity query with its Identity, and a restart breaks the connections
// opened before it and changes the start time new ones read.
func TestEndpointIdentityRestart(t *testing.T) {
	d := fakedriver.Register("fakedriver-test-endpoint-postgres", fakedriver.Options{})
	d.Node("a").SetIdentity(fakedriver.Identity{Addr: "10.0.0.1:5432", Started: "t0"})
	d.Node("b").SetIdentity(fakedriver.Identity{Addr: "10.0.0.2:5432", Started: "t0"})
	d.SetEndpoint("ep", func(dial int64) string { return map[bool]string{true: "a", false: "b"}[dial%2 == 1] })
	const identQuery = "SELECT pg_postmaster_start_time()"
	ident := func(c driver.Conn) (string, error) {
		rows, err := c.(driver.QueryerContext).QueryContext(context.Background(), identQuery, nil)
		if err != nil {
			return "", err
		}
		dest := make([]driver.Value, 1)
		if err := rows.Next(dest); err != nil {
			return "", err
		}
		return dest[0].(string), nil
	}
	var conns []driver.Conn
	for i, want := range []string{"10.0.0.1:5432/t0", "10.0.0.2:5432/t0", "10.0.0.1:5432/t0"} {
		c, err := d.Open("ep")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if got, err := ident(c); err != nil || got != want {
			t.Fatalf("dial %d: identity %q, %v; want %q", i+1, got, err, want)
		}
	}
	if d.Node("ep").Dials() != 3 || d.Node("a").Dials() != 2 || d.Node("b").Dials() != 1 {
		t.Errorf("dials: ep %d, a %d, b %d", d.Node("ep").Dials(), d.Node("a").Dials(), d.Node("b").Dials())
	}
	d.Node("a").Restart("t1")
	if _, err := ident(conns[0]); err == nil {
		t.Error("a connection from before the restart still works")
	}
	if got, err := ident(conns[1]); err != nil || got != "10.0.0.2:5432/t0" {
		t.Errorf("the other node's connection: %q, %v", got, err)
	}
	if _, err := d.Open("ep"); err != nil { // dial 4: b
		t.Fatal(err)
	}
	c, err := d.Open("ep") // dial 5: a, restarted
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ident(c); err != nil || got != "10.0.0.1:5432/t1" {
		t.Errorf("after the restart: %q, %v", got, err)
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
