package main

import (
	"context"
	"database/sql"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/schema"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/examples/internal/testcluster"
)

// TestReconnects runs the example's steps many times and reports the real
// connections rwpool opened per 1,000 leases, by cause.
func TestReconnects(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		r := testcluster.MeasureReconnects(t, b, 50, func(ctx context.Context, sqlDB *sql.DB) (func(context.Context) error, func()) {
			var d schema.Dialect = pgdialect.New()
			if !b.IsPostgres() {
				d = mysqldialect.New()
			}
			db := bun.NewDB(sqlDB, d)
			if err := migrate(rwpool.WithPrimary(ctx), db); err != nil {
				t.Fatal(err)
			}
			return func(ctx context.Context) error {
				it := &Item{Name: "apple", Qty: 3}
				err := addItems(ctx, db, it)
				if err == nil {
					_, err = restock(ctx, db, "fig", 4)
				}
				if err == nil {
					_, err = getItem(rwpool.WithPrimary(ctx), db, it.ID)
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
