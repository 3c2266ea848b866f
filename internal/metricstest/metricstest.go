// Package metricstest holds what the metrics modules' tests share: the
// fake driver of internal/fakedriver as they use it, whose nodes can be
// taken down, and an rwpool cluster over it. It is internal to the rwpool module tree.
package metricstest

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// Driver is the fake driver of internal/fakedriver, configured for the
// metrics tests. Every query answers one row holding 1; every exec
// succeeds. A node DSN marked down refuses to dial and fails every
// statement with driver.ErrBadConn; the query BoomQuery fails that way on
// every node whose DSN contains "replica", so it is replayed from replica
// to replica and ends on the primary. Dial errors echo the DSN, as real
// drivers may, so the tests can check that it reaches no metric.
//
// A Driver registered under a name containing "postgres" is taken by
// rwpool for PostgreSQL: its health checker then sends every node the
// PostgreSQL status query after the probe, which a node answers as
// SetStatus says (and, without a status set, with the usual one-column
// row, which rwpool rejects as a status error).
type Driver struct {
	*fakedriver.Driver
	name string
}

// Status is a node's answer to rwpool's PostgreSQL status query.
type Status = fakedriver.Status

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
	return &Driver{name: name, Driver: fakedriver.Register(name, fakedriver.Options{
		AnswerOne: true,
		DialError: func(dsn string) error { return fmt.Errorf("fake: dial %s: %w", dsn, syscall.ECONNREFUSED) },
		DownError: driver.ErrBadConn,
		Fail: func(dsn, query string) error {
			if query == BoomQuery && strings.Contains(dsn, "replica") {
				return driver.ErrBadConn
			}
			return nil
		},
	})}
}

// SetDown takes the node with DSN dsn down (true) or brings it back.
func (d *Driver) SetDown(dsn string, down bool) { d.Node(dsn).SetDown(down) }

// SetStatus makes the node with DSN dsn answer rwpool's status query with
// st. Only a Driver whose name contains "postgres" is asked.
func (d *Driver) SetStatus(dsn string, st Status) { d.Node(dsn).SetStatus(st) }

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
		for _, n := range []string{c.Primary, c.Rep1, c.Rep2} {
			d.Fresh(n)
		}
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
