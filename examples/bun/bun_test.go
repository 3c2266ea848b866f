package main

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/examples/internal/testcluster"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestBun runs the example's steps through bun on every real cluster and
// checks where each one ran: through the route bun passes down with the
// context, the Served counters of rwpool.Stats and the server's port.
func TestBun(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		db, err := open(b.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() }) // after the drop below: cleanups run last-in first-out

		testcluster.OnPrimary(t, "create table", func(ctx context.Context) error { return migrate(ctx, db) })
		t.Cleanup(func() {
			if err := dropTables(context.Background(), db); err != nil {
				t.Errorf("drop: %v", err)
			}
		})
		apple, pear := &Item{Name: "apple", Qty: 3}, &Item{Name: "pear", Qty: 1}
		testcluster.OnPrimary(t, "insert", func(ctx context.Context) error { return addItems(ctx, db, apple, pear) })
		if apple.ID == 0 || pear.ID == 0 {
			t.Errorf("insert did not fill the ids: %+v %+v", apple, pear)
		}
		r := testcluster.OnPrimary(t, "transaction", func(ctx context.Context) error {
			n, err := restock(ctx, db, "fig", 4)
			if err == nil && n != 3 {
				t.Errorf("the transaction counted %d rows, want 3 (its own insert included)", n)
			}
			return err
		})
		if r.Reason != "transaction" {
			t.Errorf("transaction: reason %q", r.Reason)
		}
		testcluster.OnPrimary(t, "read own write with WithPrimary", func(ctx context.Context) error {
			it, err := getItem(rwpool.WithPrimary(ctx), db, apple.ID)
			if err == nil && it.Name != "apple" {
				t.Errorf("read back %+v", it)
			}
			return err
		})
		testcluster.Eventually(t, 10*time.Second, "replica sees 3 rows", func() (bool, error) {
			var items []Item
			testcluster.OnReplica(t, "list", func(ctx context.Context) (err error) {
				items, err = listItems(ctx, db)
				return err
			})
			return len(items) == 3, nil
		})
		testcluster.OnPrimary(t, "update", func(ctx context.Context) error {
			_, err := db.NewUpdate().Model((*Item)(nil)).Set("qty = qty + 1").Where("id = ?", apple.ID).Exec(ctx)
			return err
		})
		testcluster.OnReplica(t, "select a missing id", func(ctx context.Context) error {
			if _, err := getItem(ctx, db, 1<<62); !errors.Is(err, sql.ErrNoRows) {
				t.Errorf("missing item: %v, want sql.ErrNoRows", err)
			}
			return nil
		})

		p0, r0 := testcluster.Served(t, db.DB)
		for range 20 {
			if _, err := listItems(context.Background(), db); err != nil {
				t.Fatal(err)
			}
		}
		if p1, r1 := testcluster.Served(t, db.DB); p1 != p0 || r1-r0 != 20 {
			t.Errorf("20 reads: primary served %d, replicas %d; want 0 and 20", p1-p0, r1-r0)
		}

		var port string
		if err := db.NewRaw(b.PortQuery).Scan(context.Background(), &port); err != nil || !b.IsReplicaPort(port) {
			t.Errorf("raw read answered by port %s (%v), want a replica", port, err)
		}
		err = db.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
			return tx.NewRaw(b.PortQuery).Scan(ctx, &port)
		})
		if err != nil || port != b.PrimaryPort() {
			t.Errorf("read in a transaction answered by port %s (%v), want the primary", port, err)
		}
		// A read-only transaction runs on one replica (readonly_tx=replica).
		err = db.RunInTx(context.Background(), &sql.TxOptions{ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
			return tx.NewRaw(b.PortQuery).Scan(ctx, &port)
		})
		if err != nil || !b.IsReplicaPort(port) {
			t.Errorf("read-only transaction answered by port %s (%v), want a replica", port, err)
		}
	})
}

// TestDemo runs what `go run ./bun` runs.
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
