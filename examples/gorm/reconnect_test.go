package main

import (
	"context"
	"database/sql"
	"testing"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/examples/internal/testcluster"
)

// TestReconnects runs the example's steps many times and reports the real
// connections rwpool opened per 1,000 leases, by cause: none of them
// changes or reads session state, so none may cost a reconnect.
func TestReconnects(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		r := testcluster.MeasureReconnects(t, b, 50, func(ctx context.Context, sqlDB *sql.DB) (func(context.Context) error, func()) {
			var d gorm.Dialector = postgres.New(postgres.Config{DriverName: "rwpool", Conn: sqlDB})
			if !b.IsPostgres() {
				d = mysql.New(mysql.Config{Conn: sqlDB})
			}
			db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if err := migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			return func(ctx context.Context) error {
				it, err := addItem(ctx, db, "apple", 3)
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
