package main

import (
	"context"
	"database/sql"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/rwpool/rwpool/examples/ent/entdb"
	"github.com/rwpool/rwpool/examples/internal/testcluster"
)

// TestReconnects runs the example's steps many times and reports the real
// connections rwpool opened per 1,000 leases, by cause.
func TestReconnects(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		r := testcluster.MeasureReconnects(t, b, 50, func(ctx context.Context, sqlDB *sql.DB) (func(context.Context) error, func()) {
			d := dialect.Postgres
			if !b.IsPostgres() {
				d = dialect.MySQL
			}
			c := entdb.NewClient(entdb.Driver(entsql.OpenDB(d, sqlDB)))
			if err := migrate(ctx, c); err != nil {
				t.Fatal(err)
			}
			return func(ctx context.Context) error {
				_, err := addItem(ctx, c, "apple", 3)
				if err == nil {
					_, err = addItems(ctx, c, "fig", "kiwi")
				}
				if err == nil {
					_, err = restock(ctx, c, "pear", 4)
				}
				if err == nil {
					_, err = listItems(ctx, c)
				}
				return err
			}, func() { dropTables(ctx, sqlDB) }
		})
		if r.ClosedSession != 0 {
			t.Errorf("%d connections closed for their session state, want 0", r.ClosedSession)
		}
	})
}
