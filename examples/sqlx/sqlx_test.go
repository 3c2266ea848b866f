package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"go.uber.org/goleak"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/examples/internal/testcluster"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSQLX runs the example's steps through sqlx on every real cluster and
// checks where each one ran: through the route sqlx passes down with the
// context, the Served counters of rwpool.Stats and the server's own port.
func TestSQLX(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		db, err := open(b.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() }) // after the drop below: cleanups run last-in first-out
		if db.DriverName() != b.Driver {
			t.Fatalf("sqlx bind name %q, want the real driver's %q", db.DriverName(), b.Driver)
		}
		testcluster.OnPrimary(t, "create table", func(ctx context.Context) error { return migrate(ctx, db) })
		t.Cleanup(func() {
			if err := dropTables(context.Background(), db); err != nil {
				t.Errorf("drop: %v", err)
			}
		})

		var id int64
		testcluster.OnPrimary(t, "insert", func(ctx context.Context) (err error) {
			id, err = addItem(ctx, db, "apple", 3)
			return err
		})
		testcluster.OnPrimary(t, "named insert", func(ctx context.Context) error {
			return addItems(ctx, db, []Item{{Name: "pear", Qty: 1}, {Name: "plum", Qty: 2}})
		})
		r := testcluster.OnPrimary(t, "transaction", func(ctx context.Context) error {
			n, err := restock(ctx, db, "fig", 4)
			if err == nil && n != 4 {
				t.Errorf("the transaction counted %d rows, want 4 (its own insert included)", n)
			}
			return err
		})
		if r.Reason != "transaction" {
			t.Errorf("transaction route reason %q", r.Reason)
		}

		// Read-your-write right away: only with WithPrimary.
		testcluster.OnPrimary(t, "read own write with WithPrimary", func(ctx context.Context) error {
			items, err := getItems(rwpool.WithPrimary(ctx), db, []int64{id})
			if err == nil && (len(items) != 1 || items[0].Name != "apple") {
				t.Errorf("read back %+v, want apple", items)
			}
			return err
		})
		// On a replica the rows show up a moment later.
		testcluster.Eventually(t, 10*time.Second, "replica sees 4 rows", func() (bool, error) {
			var items []Item
			testcluster.OnReplica(t, "list", func(ctx context.Context) (err error) {
				items, err = listItems(ctx, db)
				return err
			})
			return len(items) == 4, nil
		})

		// Reads only: the primary serves nothing.
		p0, r0 := testcluster.Served(t, db.DB)
		for range 20 {
			if _, err := listItems(context.Background(), db); err != nil {
				t.Fatal(err)
			}
		}
		if p1, r1 := testcluster.Served(t, db.DB); p1 != p0 || r1-r0 != 20 {
			t.Errorf("20 reads: primary served %d, replicas %d; want 0 and 20", p1-p0, r1-r0)
		}

		// The servers agree: a read outside a transaction answers from a
		// replica's port, one inside from the primary's.
		var port string
		if err := db.Get(&port, b.PortQuery); err != nil || !b.IsReplicaPort(port) {
			t.Errorf("read answered by port %s (%v), want a replica", port, err)
		}
		tx, err := db.Beginx()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := tx.Get(&port, b.PortQuery); err != nil || port != b.PrimaryPort() {
			t.Errorf("read in a transaction answered by port %s (%v), want the primary", port, err)
		}
	})
}

// TestSQLXBindDriver: without a bind name sqlx leaves ? alone for
// "rwpool" (PostgreSQL rejects it); with sqlx.BindDriver("rwpool",
// sqlx.DOLLAR), sqlx.Open("rwpool", …) works on PostgreSQL.
func TestSQLXBindDriver(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		if !b.IsPostgres() {
			t.Skip("PostgreSQL only")
		}
		ctx := context.Background()
		raw, err := sqlx.Open("rwpool", b.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if sqlx.BindType("rwpool") == sqlx.UNKNOWN {
			var n int
			if err := raw.GetContext(ctx, &n, raw.Rebind("SELECT ?::int"), 1); err == nil {
				t.Error("sqlx with the name rwpool sent ? to PostgreSQL, and it worked; the README says it fails")
			}
		}

		t.Cleanup(func() { sqlx.BindDriver("rwpool", sqlx.UNKNOWN) })
		db, err := openPostgresOnly(b.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		r := testcluster.OnReplica(t, "rebound read", func(ctx context.Context) error {
			return db.GetContext(ctx, &n, db.Rebind("SELECT ?::int + ?::int"), 1, 2)
		})
		if n != 3 {
			t.Errorf("SELECT 1 + 2 = %d (%+v)", n, r)
		}
	})
}

// TestDemo runs what `go run ./sqlx` runs.
func TestDemo(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		db, err := open(b.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := demo(context.Background(), db, io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}
