// Package metricstest holds what the metrics modules' tests share: a tiny
// fake database/sql driver whose nodes can be taken down, and an rwpool
// cluster over it. It is internal to the rwpool module tree.
package metricstest

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

// Driver is a tiny database/sql driver for the tests. Every query
// answers one row holding 1; every exec succeeds. A node DSN marked down
// refuses to dial and fails every statement with driver.ErrBadConn; the
// query boomQuery fails that way on every node whose DSN contains
// "replica", so it is replayed from replica to replica and ends on the
// primary. Dial errors echo the DSN, as real drivers may, so the tests can
// check that it reaches no metric.
//
// A Driver registered under a name containing "postgres" is taken by
// rwpool for PostgreSQL: its health checker then sends every node the
// PostgreSQL status query after the probe, which a node answers as
// SetStatus says (and, without a status set, with the usual one-column
// row, which rwpool rejects as a status error).
type Driver struct {
	name   string
	mu     sync.Mutex
	down   map[string]bool
	status map[string]Status
}

// Status is a node's answer to rwpool's PostgreSQL status query
// (pg_is_in_recovery() OR transaction_read_only, the applied or written
// LSN, the age of the last replayed commit).
type Status struct {
	ReadOnly  bool    // in recovery or read-only: what a replica reports
	LSN       string  // the node's position, such as "0/1000"
	ReplayAge float64 // seconds since the last replayed commit; -1 for none (a primary)
}

const (
	// BoomQuery fails with driver.ErrBadConn on every replica, so it is
	// replayed from replica to replica and ends on the primary.
	BoomQuery = "SELECT 'boom'"
	// Sentinel is the password of every node DSN; it must appear in no
	// exported metric.
	Sentinel = "Sentinel-Pa55word-7f3a"
)

// Register registers a new fake driver under name and returns it.
func Register(name string) *Driver {
	d := &Driver{name: name, down: map[string]bool{}, status: map[string]Status{}}
	sql.Register(name, d)
	return d
}

// SetDown takes the node with DSN dsn down (true) or brings it back.
func (d *Driver) SetDown(dsn string, down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down[dsn] = down
}

// SetStatus makes the node with DSN dsn answer rwpool's status query with
// st. Only a Driver whose name contains "postgres" is asked.
func (d *Driver) SetStatus(dsn string, st Status) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status[dsn] = st
}

func (d *Driver) statusOf(dsn string) (Status, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st, ok := d.status[dsn]
	return st, ok
}

func (d *Driver) isDown(dsn string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.down[dsn]
}

// Open implements driver.Driver.
func (d *Driver) Open(dsn string) (driver.Conn, error) {
	if d.isDown(dsn) {
		return nil, fmt.Errorf("fake: dial %s: %w", dsn, syscall.ECONNREFUSED)
	}
	return &fakeConn{d: d, dsn: dsn}, nil
}

type fakeConn struct {
	d   *Driver
	dsn string
}

func (c *fakeConn) fail(query string) error {
	if c.d.isDown(c.dsn) || (query == BoomQuery && strings.Contains(c.dsn, "replica")) {
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
	if strings.Contains(query, "pg_is_in_recovery()") {
		if st, ok := c.d.statusOf(c.dsn); ok {
			return &fakeRows{cols: []string{"ro", "pos", "age"}, row: []driver.Value{st.ReadOnly, st.LSN, st.ReplayAge}}, nil
		}
	}
	return &fakeRows{cols: []string{"n"}, row: []driver.Value{int64(1)}}, nil
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

type fakeRows struct {
	cols []string
	row  []driver.Value
	done bool
}

func (r *fakeRows) Columns() []string { return r.cols }
func (r *fakeRows) Close() error      { return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	copy(dest, r.row)
	return nil
}

// Cluster is an rwpool *sql.DB over the fake driver: a primary, replica1
// (weight 1) and replica2 (weight 0, a spare, so that every ordinary read
// goes to replica1).
type Cluster struct {
	DB                  *sql.DB
	Primary, Rep1, Rep2 string // node DSNs
}

// NodeDSN is the DSN of node in a cluster named after the test, with
// Sentinel as its password.
func NodeDSN(t *testing.T, node string) string {
	return fmt.Sprintf("postgres://app:%s@%s.%s.test:5432/shop", Sentinel, node, strings.ReplaceAll(t.Name(), "/", "-"))
}

// NewCluster opens a Cluster over d, with extra appended to its DSN, and
// closes it when the test ends.
func NewCluster(t *testing.T, d *Driver, extra string) *Cluster {
	t.Helper()
	c := &Cluster{Primary: NodeDSN(t, "primary"), Rep1: NodeDSN(t, "replica1"), Rep2: NodeDSN(t, "replica2")}
	db, err := sql.Open(rwpool.DriverName, fmt.Sprintf(
		"driver=%s;primary='%s';replica='%s' weight=1;replica='%s' weight=0;%s",
		d.name, c.Primary, c.Rep1, c.Rep2, extra))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		d.mu.Lock()
		for _, n := range []string{c.Primary, c.Rep1, c.Rep2} {
			delete(d.down, n)
			delete(d.status, n)
		}
		d.mu.Unlock()
	})
	c.DB = db
	return c
}

// WaitFor polls the snapshot until ok accepts it, for at most 10s.
func WaitFor(t *testing.T, db *sql.DB, what string, ok func(rwpool.Snapshot) bool) {
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

// MustQuery runs q, which must answer 1.
func MustQuery(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%s: %d, %v", q, n, err)
	}
}

// MustExec runs q, which must succeed.
func MustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
