package main

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/rwpool/rwpool/examples/internal/testcluster"
)

// TestReconnects runs the example's steps many times and reports the real
// connections rwpool opened per 1,000 leases, by cause.
func TestReconnects(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		r := testcluster.MeasureReconnects(t, b, 50, func(ctx context.Context, sqlDB *sql.DB) (func(context.Context) error, func()) {
			db := sqlx.NewDb(sqlDB, b.Driver)
			if err := migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			return func(ctx context.Context) error {
				_, err := addItem(ctx, db, "apple", 3)
				if err == nil {
					err = addItems(ctx, db, []Item{{Name: "fig", Qty: 1}, {Name: "kiwi", Qty: 2}})
				}
				if err == nil {
					_, err = restock(ctx, db, "pear", 4)
				}
				if err == nil {
					_, err = listItems(ctx, db)
				}
				return err
			}, func() { dropTables(ctx, db) }
		})
		if r.ClosedSession != 0 {
			t.Errorf("%d connections closed for their session state, want 0", r.ClosedSession)
		}
	})
}
