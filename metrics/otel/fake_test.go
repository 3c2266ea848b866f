package rwotel_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
)

// fakeDriver is a tiny database/sql driver for the tests. Every query
// answers one row holding 1; every exec succeeds. A node DSN marked down
// refuses to dial and fails every statement with driver.ErrBadConn; the
// query boomQuery fails that way on every node whose DSN contains
// "replica", so it is replayed from replica to replica and ends on the
// primary. Dial errors echo the DSN, as real drivers may, so the tests can
// check that it reaches no metric.
type fakeDriver struct {
	mu   sync.Mutex
	down map[string]bool
}

const (
	fakeDriverName = "rwotel-test-fake"
	boomQuery      = "SELECT 'boom'"
	// sentinel is the password of every node DSN; it must appear in no
	// exported metric.
	sentinel = "Sentinel-Pa55word-7f3a"
)

var fake = &fakeDriver{down: map[string]bool{}}

func init() { sql.Register(fakeDriverName, fake) }

func (d *fakeDriver) setDown(dsn string, down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down[dsn] = down
}

func (d *fakeDriver) isDown(dsn string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.down[dsn]
}

func (d *fakeDriver) Open(dsn string) (driver.Conn, error) {
	if d.isDown(dsn) {
		return nil, fmt.Errorf("fake: dial %s: %w", dsn, syscall.ECONNREFUSED)
	}
	return &fakeConn{d: d, dsn: dsn}, nil
}

type fakeConn struct {
	d   *fakeDriver
	dsn string
}

func (c *fakeConn) fail(query string) error {
	if c.d.isDown(c.dsn) || (query == boomQuery && strings.Contains(c.dsn, "replica")) {
		return driver.ErrBadConn
	}
	return nil
}

func (c *fakeConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("fake: Prepare not supported")
}
func (c *fakeConn) Close() error              { return nil }
func (c *fakeConn) Begin() (driver.Tx, error) { return fakeTx{}, c.fail("") }

func (c *fakeConn) QueryContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Rows, error) {
	if err := c.fail(query); err != nil {
		return nil, err
	}
	return &fakeRows{}, nil
}

func (c *fakeConn) ExecContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Result, error) {
	if err := c.fail(query); err != nil {
		return nil, err
	}
	return driver.RowsAffected(1), nil
}

type fakeTx struct{}

func (fakeTx) Commit() error   { return nil }
func (fakeTx) Rollback() error { return nil }

type fakeRows struct{ done bool }

func (r *fakeRows) Columns() []string { return []string{"n"} }
func (r *fakeRows) Close() error      { return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}

// cluster is an rwpool *sql.DB over the fake driver: a primary, replica1
// (weight 1) and replica2 (weight 0, a spare, so that every ordinary read
// goes to replica1).
type cluster struct {
	db                  *sql.DB
	primary, rep1, rep2 string // node DSNs
}

func nodeDSN(t *testing.T, node string) string {
	return fmt.Sprintf("postgres://app:%s@%s.%s.test:5432/shop", sentinel, node, strings.ReplaceAll(t.Name(), "/", "-"))
}

func newCluster(t *testing.T, extra string) *cluster {
	t.Helper()
	c := &cluster{primary: nodeDSN(t, "primary"), rep1: nodeDSN(t, "replica1"), rep2: nodeDSN(t, "replica2")}
	db, err := sql.Open(rwpool.DriverName, fmt.Sprintf(
		"driver=%s;primary='%s';replica='%s' weight=1;replica='%s' weight=0;%s",
		fakeDriverName, c.primary, c.rep1, c.rep2, extra))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		for _, d := range []string{c.primary, c.rep1, c.rep2} {
			fake.setDown(d, false)
		}
	})
	c.db = db
	return c
}

// waitFor polls the snapshot until ok accepts it, for at most 10s.
func waitFor(t *testing.T, db *sql.DB, what string, ok func(rwpool.Snapshot) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := rwpool.Stats(db)
		if err != nil {
			t.Fatal(err)
		}
		if ok(s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s:\n%s", what, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustQuery(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%s: %d, %v", q, n, err)
	}
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
