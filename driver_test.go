package rwpool_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"go.uber.org/goleak"

	"github.com/rwpool/rwpool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// mockCluster is a primary and n replicas, each a go-sqlmock connection,
// behind one rwpool *sql.DB. Expectations are matched exactly and in any
// order; every mock must have met them when the test ends.
type mockCluster struct {
	db       *sql.DB
	primary  sqlmock.Sqlmock
	replicas []sqlmock.Sqlmock
}

func newMockCluster(t *testing.T, n int, extra string) *mockCluster {
	t.Helper()
	mc := &mockCluster{}
	newMock := func(name string) sqlmock.Sqlmock {
		mdb, mock, err := sqlmock.NewWithDSN(name, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
		if err != nil {
			t.Fatal(err)
		}
		mock.MatchExpectationsInOrder(false)
		t.Cleanup(func() {
			if err := mock.ExpectationsWereMet(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			mdb.Close()
		})
		return mock
	}
	prefix := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	var b strings.Builder
	fmt.Fprintf(&b, "driver=sqlmock;primary='%s-primary'", prefix)
	mc.primary = newMock(prefix + "-primary")
	for i := range n {
		name := fmt.Sprintf("%s-replica%d", prefix, i+1)
		fmt.Fprintf(&b, ";replica='%s'", name)
		mc.replicas = append(mc.replicas, newMock(name))
	}
	b.WriteString(";" + extra)
	db, err := sql.Open("rwpool", b.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mc.db = db
	return mc
}

func TestReadsGoToReplicaWritesToPrimary(t *testing.T) {
	mc := newMockCluster(t, 1, "")
	mc.replicas[0].ExpectQuery("SELECT name FROM users WHERE id = $1").WithArgs(7).
		WillReturnRows(sqlmock.NewRows([]string{"name"}).AddRow("ann"))
	mc.replicas[0].ExpectQuery("/* c */ with x as (select 1) select * from x").
		WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(1))
	mc.primary.ExpectExec("INSERT INTO users(name) VALUES ($1)").WithArgs("bob").
		WillReturnResult(sqlmock.NewResult(8, 1))
	mc.primary.ExpectExec("UPDATE users SET name = 'x'").WillReturnResult(sqlmock.NewResult(0, 3))

	var name string
	if err := mc.db.QueryRow("SELECT name FROM users WHERE id = $1", 7).Scan(&name); err != nil || name != "ann" {
		t.Fatalf("read: %q, %v", name, err)
	}
	var n int
	if err := mc.db.QueryRow("/* c */ with x as (select 1) select * from x").Scan(&n); err != nil || n != 1 {
		t.Fatalf("WITH read: %d, %v", n, err)
	}
	res, err := mc.db.Exec("INSERT INTO users(name) VALUES ($1)", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := res.LastInsertId(); id != 8 {
		t.Fatalf("LastInsertId = %d, want 8", id)
	}
	if _, err := mc.db.Exec("UPDATE users SET name = 'x'"); err != nil {
		t.Fatal(err)
	}
}

func TestWithPrimarySendsReadsToPrimary(t *testing.T) {
	mc := newMockCluster(t, 2, "")
	mc.primary.ExpectQuery("SELECT 1").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(1))
	var n int
	if err := mc.db.QueryRowContext(rwpool.WithPrimary(context.Background()), "SELECT 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
}

func TestTransactionRunsOnPrimary(t *testing.T) {
	mc := newMockCluster(t, 1, "")
	mc.primary.ExpectBegin()
	mc.primary.ExpectQuery("SELECT balance FROM accounts WHERE id = 1").
		WillReturnRows(sqlmock.NewRows([]string{"balance"}).AddRow(10))
	mc.primary.ExpectExec("UPDATE accounts SET balance = 9 WHERE id = 1").WillReturnResult(sqlmock.NewResult(0, 1))
	mc.primary.ExpectCommit()
	mc.replicas[0].ExpectQuery("SELECT 2").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(2))

	tx, err := mc.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var bal int
	if err := tx.QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("UPDATE accounts SET balance = 9 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// After the transaction the lease is over: reads spread again.
	var n int
	if err := mc.db.QueryRow("SELECT 2").Scan(&n); err != nil {
		t.Fatal(err)
	}
}

func TestPingPingsPrimary(t *testing.T) {
	mc := newMockCluster(t, 1, "")
	if err := mc.db.Ping(); err != nil {
		t.Fatal(err)
	}
	s, err := rwpool.Stats(mc.db)
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes[0].Served != 1 || s.Nodes[1].Served != 0 {
		t.Fatalf("ping served by the wrong node:\n%s", s)
	}
}

func TestStatsCountsServedPerNode(t *testing.T) {
	mc := newMockCluster(t, 1, "pool_size=4")
	for range 3 {
		mc.replicas[0].ExpectQuery("SELECT 1").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(1))
	}
	mc.primary.ExpectExec("DELETE FROM t").WillReturnResult(sqlmock.NewResult(0, 0))
	for range 3 {
		var n int
		if err := mc.db.QueryRow("SELECT 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mc.db.Exec("DELETE FROM t"); err != nil {
		t.Fatal(err)
	}
	s, err := rwpool.Stats(mc.db)
	if err != nil {
		t.Fatal(err)
	}
	p, r := s.Nodes[0], s.Nodes[1]
	if p.Name != "primary" || p.Role != "primary" || r.Name != "replica1" || r.Role != "replica" {
		t.Fatalf("names/roles: %+v %+v", p, r)
	}
	if p.Served != 1 || r.Served != 3 || !p.Available || !r.Available || p.MaxOpen != 4 {
		t.Fatalf("stats:\n%s", s)
	}
	if r.InUse != 0 || p.InUse != 0 || r.Open != r.Idle {
		t.Fatalf("connections still in use after every statement ended:\n%s", s)
	}
	str := s.String()
	if !strings.Contains(str, "replica1") || strings.Count(str, "\n") != 3 {
		t.Fatalf("Snapshot.String():\n%s", str)
	}
	if _, err := rwpool.Stats(sqlDBNotRWPool(t)); !errors.Is(err, rwpool.ErrNotRWPool) {
		t.Fatalf("Stats on a foreign *sql.DB: %v", err)
	}
}

func sqlDBNotRWPool(t *testing.T) *sql.DB {
	db, _, err := sqlmock.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
