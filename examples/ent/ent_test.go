package main

import (
	"context"
	"io"
	"testing"
	"time"

	entsql "entgo.io/ent/dialect/sql"
	"go.uber.org/goleak"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/examples/ent/entdb"
	"github.com/rwpool/rwpool/examples/ent/entdb/item"
	"github.com/rwpool/rwpool/examples/internal/testcluster"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestEnt runs the example's steps through the generated ent client on
// every real cluster and checks where each one ran: through the route ent
// passes down with the context, the Served counters of rwpool.Stats and
// the server's port.
func TestEnt(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		client, db, err := open(b.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() }) // after the drop below: cleanups run last-in first-out

		// Schema.Create with WithPrimary: inspection and DDL on the
		// primary. Only Atlas's read of the server's version and settings
		// goes to a replica, once per Schema.Create: Atlas runs it with
		// context.Background(), not ours.
		_, r0 := testcluster.Served(t, db)
		testcluster.OnPrimary(t, "migrate", func(ctx context.Context) error { return migrate(ctx, client) })
		t.Cleanup(func() {
			if err := dropTables(context.Background(), db); err != nil {
				t.Errorf("drop: %v", err)
			}
		})
		testcluster.OnPrimary(t, "migrate again (no change)", func(ctx context.Context) error { return migrate(ctx, client) })
		if _, r1 := testcluster.Served(t, db); r1-r0 > 2 {
			t.Errorf("2 Schema.Create with WithPrimary sent %d statements to replicas, want at most 2 (Atlas's version queries)", r1-r0)
		}

		var apple *entdb.Item
		testcluster.OnPrimary(t, "create", func(ctx context.Context) (err error) {
			apple, err = addItem(ctx, client, "apple", 3)
			return err
		})
		testcluster.OnPrimary(t, "create bulk", func(ctx context.Context) error {
			items, err := addItems(ctx, client, "pear", "plum")
			if err == nil && (len(items) != 2 || items[1].ID == 0) {
				t.Errorf("bulk create returned %v", items)
			}
			return err
		})
		r := testcluster.OnPrimary(t, "transaction", func(ctx context.Context) error {
			n, err := restock(ctx, client, "fig", 4)
			if err == nil && n != 4 {
				t.Errorf("the transaction counted %d rows, want 4 (its own insert included)", n)
			}
			return err
		})
		if r.Reason != "transaction" {
			t.Errorf("transaction: reason %q", r.Reason)
		}
		testcluster.OnPrimary(t, "read own write with WithPrimary", func(ctx context.Context) error {
			got, err := client.Item.Get(rwpool.WithPrimary(ctx), apple.ID)
			if err == nil && got.Name != "apple" {
				t.Errorf("read back %v", got)
			}
			return err
		})
		testcluster.Eventually(t, 10*time.Second, "replica sees 4 rows", func() (bool, error) {
			var items []*entdb.Item
			testcluster.OnReplica(t, "list", func(ctx context.Context) (err error) {
				items, err = listItems(ctx, client)
				return err
			})
			return len(items) == 4, nil
		})
		// An update outside a transaction goes to the primary; ent's
		// NotFound errors come through from a replica.
		testcluster.OnPrimary(t, "update", func(ctx context.Context) error {
			return client.Item.UpdateOneID(apple.ID).AddQty(1).Exec(ctx)
		})
		testcluster.OnReplica(t, "get a missing id", func(ctx context.Context) error {
			if _, err := client.Item.Query().Where(item.Name("no such item")).Only(ctx); !entdb.IsNotFound(err) {
				t.Errorf("missing item: %v, want ent's NotFound", err)
			}
			return nil
		})

		p0, r0 := testcluster.Served(t, db)
		for range 20 {
			if _, err := listItems(context.Background(), client); err != nil {
				t.Fatal(err)
			}
		}
		if p1, r1 := testcluster.Served(t, db); p1 != p0 || r1-r0 != 20 {
			t.Errorf("20 reads: primary served %d, replicas %d; want 0 and 20", p1-p0, r1-r0)
		}

		// A raw read answers from a replica's port; a query in an ent
		// transaction runs on the primary.
		tx, err := client.Tx(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		var port string
		if err := db.QueryRow(b.PortQuery).Scan(&port); err != nil || !b.IsReplicaPort(port) {
			t.Errorf("read answered by port %s (%v), want a replica", port, err)
		}
		n, err := tx.Item.Query().Count(rwpool.WithRoute(context.Background(), &r))
		if err != nil || n != 4 || r.Role != "primary" || r.Reason != "transaction" {
			t.Errorf("count in an ent transaction: %d, %v, route %+v; want 4 on the primary", n, err, r)
		}
	})
}

// TestEntOpenByNameFails: entsql.Open uses its first argument both as the
// database/sql driver and as ent's dialect, and "rwpool" is no dialect.
// No cluster needed: it fails before dialling.
func TestEntOpenByNameFails(t *testing.T) {
	drv, err := entsql.Open("rwpool", "driver=postgres;primary='host=127.0.0.1 port=1 user=u dbname=d sslmode=disable'")
	if err != nil {
		t.Fatal(err)
	}
	client := entdb.NewClient(entdb.Driver(drv))
	defer client.Close()
	err = client.Schema.Create(context.Background())
	if err == nil {
		t.Fatal("Schema.Create with dialect \"rwpool\" worked; the README says it fails")
	}
	t.Logf("entsql.Open(\"rwpool\", …): Schema.Create: %v", err)
}

// TestDemo runs what `go run ./ent` runs.
func TestDemo(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		client, db, err := open(b.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		if err := demo(context.Background(), client, db, io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}
