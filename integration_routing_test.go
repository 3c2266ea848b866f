package rwpool_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/lib/pq"

	"github.com/rwpool/rwpool"

	_ "github.com/go-sql-driver/mysql"
)

// Every test here fails if a statement lands on the wrong node: the port
// query tells which server answered, and a write sent to a replica fails
// because replicas are read-only (MariaDB replicas run --read-only and the
// test user lacks SUPER; PostgreSQL standbys refuse writes).

func TestIntegrationReadsOnReplicasWritesOnPrimary(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "")
		for range 50 {
			if p := cl.ServerPort(t, db); !cl.IsReplicaPort(p) {
				t.Fatalf("read answered by port %s, want a replica %v", p, cl.Replicas)
			}
		}
		mustExec(t, db, "DROP TABLE IF EXISTS rw_basic")
		mustExec(t, db, "CREATE TABLE rw_basic (id INT PRIMARY KEY, v TEXT)")
		for i := range 20 {
			mustExec(t, db, fmt.Sprintf("INSERT INTO rw_basic (id, v) VALUES (%d, 'x')", i))
		}
		mustExec(t, db, "UPDATE rw_basic SET v = 'y' WHERE id < 10")
		mustExec(t, db, "DELETE FROM rw_basic WHERE id >= 15")
		var n int
		if err := db.QueryRowContext(rwpool.WithPrimary(context.Background()), "SELECT count(*) FROM rw_basic WHERE v = 'y'").Scan(&n); err != nil || n != 10 {
			t.Fatalf("count on primary = %d, %v; want 10", n, err)
		}
		if p := cl.ServerPort(t, primaryQ{db}); p != portOf(cl.Primary) {
			t.Fatalf("WithPrimary read answered by %s, want primary %s", p, cl.Primary)
		}
		s, err := rwpool.Stats(db)
		if err != nil {
			t.Fatal(err)
		}
		if s.Nodes[0].Served < 23 || s.Nodes[1].Served+s.Nodes[2].Served < 50 {
			t.Fatalf("served counts do not match the traffic:\n%s", s)
		}
		t.Logf("\n%s", s)
	})
}

// primaryQ runs QueryRow with a WithPrimary context.
type primaryQ struct{ db *sql.DB }

func (p primaryQ) QueryRow(q string, args ...any) *sql.Row {
	return p.db.QueryRowContext(rwpool.WithPrimary(context.Background()), q, args...)
}

func TestIntegrationTransactionsOnPrimary(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "")
		mustExec(t, db, "DROP TABLE IF EXISTS rw_tx")
		mustExec(t, db, "CREATE TABLE rw_tx (id INT PRIMARY KEY)")
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if p := cl.ServerPort(t, tx); p != portOf(cl.Primary) {
			t.Fatalf("read in a transaction answered by %s, want primary", p)
		}
		if _, err := tx.Exec("INSERT INTO rw_tx VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := tx.QueryRow("SELECT count(*) FROM rw_tx").Scan(&n); err != nil || n != 1 {
			t.Fatalf("transaction does not read its own write: %d, %v", n, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// A rolled-back write is gone.
		tx, err = db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO rw_tx VALUES (2)"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if err := (primaryQ{db}).QueryRow("SELECT count(*) FROM rw_tx").Scan(&n); err != nil || n != 1 {
			t.Fatalf("after rollback: %d rows, %v; want 1", n, err)
		}
	})
}

func TestIntegrationWeightedSpread(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		if len(cl.Replicas) < 2 {
			t.Fatal("the test cluster needs two replicas")
		}
		db := cl.open(t, "", 3, 1)
		const reads = 4000
		counts := make([]int, len(cl.Replicas))
		for range reads {
			i, ok := cl.ReplicaIndex(cl.ServerPort(t, db))
			if !ok {
				t.Fatal("read answered by a node that is not a replica")
			}
			counts[i]++
		}
		share := float64(counts[0]) / reads
		t.Logf("weights 3:1 over %d reads: %v (share %.3f)", reads, counts, share)
		if math.Abs(share-0.75) > 0.03 {
			t.Fatalf("replica1 share %.3f, want 0.75±0.03 (counts %v)", share, counts)
		}
	})
}

func TestIntegrationDriverValues(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "")
		ctx := rwpool.WithPrimary(context.Background())
		switch cl.Name {
		case "postgres":
			mustExec(t, db, "DROP TABLE IF EXISTS rw_vals")
			mustExec(t, db, "CREATE TABLE rw_vals (id INT PRIMARY KEY, a BIGINT[], j JSONB)")
			if _, err := db.Exec("INSERT INTO rw_vals VALUES (1, $1, $2)", pq.Array([]int64{1, 2, 3}), json.RawMessage(`{"k": 1}`)); err != nil {
				t.Fatalf("lib/pq array and json.RawMessage: %v", err)
			}
			var a []int64
			var j string
			if err := db.QueryRowContext(ctx, "SELECT a, j FROM rw_vals WHERE id = $1", 1).Scan(pq.Array(&a), &j); err != nil {
				t.Fatal(err)
			}
			if len(a) != 3 || a[2] != 3 || j != `{"k": 1}` {
				t.Fatalf("read back %v %q", a, j)
			}
		case "pgx":
			// pgx's own values: []int64 straight into BIGINT[] and a
			// map into JSONB. database/sql's default converter rejects
			// both (and lib/pq takes neither); they reach pgx only if
			// rwpool hands them to pgx's NamedValueChecker.
			mustExec(t, db, "DROP TABLE IF EXISTS rw_vals")
			mustExec(t, db, "CREATE TABLE rw_vals (id INT PRIMARY KEY, a BIGINT[], j JSONB)")
			if _, err := db.Exec("INSERT INTO rw_vals VALUES (1, $1, $2)", []int64{1, 2, 3}, map[string]any{"k": 1}); err != nil {
				t.Fatalf("pgx []int64 and map[string]any: %v", err)
			}
			var a []int64
			var j string
			if err := db.QueryRowContext(ctx, "SELECT a, j FROM rw_vals WHERE id = $1", 1).Scan(pgtype.NewMap().SQLScanner(&a), &j); err != nil {
				t.Fatal(err)
			}
			if len(a) != 3 || a[2] != 3 || j != `{"k": 1}` {
				t.Fatalf("read back %v %q", a, j)
			}
		case "mariadb":
			mustExec(t, db, "DROP TABLE IF EXISTS rw_vals")
			mustExec(t, db, "CREATE TABLE rw_vals (id INT PRIMARY KEY, u BIGINT UNSIGNED, j JSON)")
			const big = uint64(math.MaxUint64 - 5)
			if _, err := db.Exec("INSERT INTO rw_vals VALUES (?, ?, ?)", 1, big, json.RawMessage(`{"k":1}`)); err != nil {
				t.Fatalf("mysql uint64 with the high bit and json.RawMessage: %v", err)
			}
			var u uint64
			var j string
			if err := db.QueryRowContext(ctx, "SELECT u, j FROM rw_vals WHERE id = ?", 1).Scan(&u, &j); err != nil {
				t.Fatal(err)
			}
			if u != big || j != `{"k":1}` {
				t.Fatalf("read back %d %q", u, j)
			}
		}
	})
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) sql.Result {
	t.Helper()
	res, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return res
}
