package simcluster_test

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/replication"
	"github.com/rwpool/rwpool/internal/simcluster"
)

func open(t *testing.T, c *simcluster.Cluster, ep string) *sql.DB {
	t.Helper()
	db, err := sql.Open(simcluster.DriverName(c.Flavor), c.DSN(ep))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func has(t *testing.T, db *sql.DB, id int64) bool {
	t.Helper()
	var got int64
	err := db.QueryRow(fmt.Sprintf("SELECT id FROM t WHERE id = %d", id)).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// A replica replays after its delay, record by record: the position of a
// transaction's statement comes before its commit, and a replica at that
// position does not show the row.
func TestReplicationAndPositions(t *testing.T) {
	c := simcluster.New(t.Name(), simcluster.Postgres, 2, 1)
	defer c.Close()
	c.Delay("s1", time.Hour)
	p, r := open(t, c, "s0"), open(t, c, "s1")
	conn, err := p.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.ExecContext(t.Context(), "BEGIN")
	if _, err := conn.ExecContext(t.Context(), "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var mid, end string
	conn.QueryRowContext(t.Context(), "SELECT pg_current_wal_lsn()::text").Scan(&mid)
	conn.ExecContext(t.Context(), "COMMIT")
	conn.QueryRowContext(t.Context(), "SELECT pg_current_wal_lsn()::text").Scan(&end)
	m, _ := replication.ParseLSN(mid)
	e, _ := replication.ParseLSN(end)
	if !e.Covers(m) || m.Covers(e) {
		t.Fatalf("positions: in the transaction %s, after its commit %s", mid, end)
	}
	if has(t, r, 1) {
		t.Fatal("a replica an hour behind has the row")
	}
	c.Delay("s1", 0)
	if !has(t, r, 1) || !c.Has("s1", 1) {
		t.Fatal("a replica with no delay lacks the row")
	}
}

// A read-only server refuses writes with the flavor's error; a promotion
// of a replica that lacks the primary's last rows loses them, and a
// rewind on re-pointing drops a server's own rows.
func TestPromotionLosesRowsAndRewinds(t *testing.T) {
	for _, f := range []simcluster.Flavor{simcluster.Postgres, simcluster.MariaDB} {
		t.Run(f.String(), func(t *testing.T) {
			c := simcluster.New(t.Name(), f, 2, 1)
			defer c.Close()
			p, r := open(t, c, "s0"), open(t, c, "s1")
			if _, err := r.Exec("INSERT INTO t VALUES (9)"); err == nil {
				t.Fatal("a replica accepted a write")
			}
			c.Delay("s1", time.Hour)
			if _, err := p.Exec("INSERT INTO t VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			c.Kill("s0")
			c.Promote("s1")
			if _, ok := c.Lost(1); !ok {
				t.Error("a row the promoted replica lacks is not lost")
			}
			if _, err := r.Exec("INSERT INTO t VALUES (2)"); err != nil {
				t.Fatalf("the promoted replica refused a write: %v", err)
			}
			c.Start("s0", false) // back writable on its old history
			if !c.Has("s0", 1) {
				t.Error("the old primary lost its own row")
			}
			if v := c.Violations(); len(v) != 0 {
				t.Errorf("violations before any write off the primary: %v", v)
			}
			if _, err := open(t, c, "s0").Exec("INSERT INTO t VALUES (3)"); err != nil {
				t.Fatal(err)
			}
			if v := c.Violations(); len(v) != 1 || v[0].Kind != "write-off-primary" {
				t.Errorf("a write on the old primary: violations %v, want one write-off-primary", v)
			}
			c.Repoint("s0")
			if c.Has("s0", 1) || c.Has("s0", 3) || !c.Has("s0", 2) {
				t.Error("the re-pointed old primary was not rewound onto the new primary's history")
			}
		})
	}
}

// Every server answers the cluster's PostgreSQL system identifier, the
// same whatever the promotions; a row's ground truth says the position
// of its commit, as the server names positions.
func TestSystemIdentifierAndCommitPositions(t *testing.T) {
	c := simcluster.New(t.Name(), simcluster.Postgres, 2, 1)
	defer c.Close()
	p, r := open(t, c, "s0"), open(t, c, "s1")
	id := func(db *sql.DB) string {
		var s string
		if err := db.QueryRow("SELECT system_identifier::text FROM pg_control_system()").Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if a, b := id(p), id(r); a == "" || a != b {
		t.Fatalf("system identifiers %q and %q: want one, the same on every server", a, b)
	}
	before := id(p)
	if _, err := p.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var after string
	p.QueryRow("SELECT pg_current_wal_lsn()::text").Scan(&after)
	if w := c.Truth(1); w == nil || w.At != after {
		t.Fatalf("row 1's commit at %v, want %s", w, after)
	}
	c.Kill("s0")
	c.Promote("s1")
	if got := id(r); got != before {
		t.Errorf("the system identifier changed with a promotion: %q, then %q", before, got)
	}
}
