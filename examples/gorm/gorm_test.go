package main

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/examples/internal/testcluster"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestGorm runs the example's steps through gorm on every real cluster and
// checks where each one ran: through the route gorm passes down with
// WithContext, the Served counters of rwpool.Stats and the server's port.
func TestGorm(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		db, sqlDB, err := open(b.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sqlDB.Close() }) // after the drop below: cleanups run last-in first-out

		// AutoMigrate with WithPrimary: catalog reads and DDL all on the
		// primary, none on a replica.
		_, r0 := testcluster.Served(t, sqlDB)
		testcluster.OnPrimary(t, "auto-migrate", func(ctx context.Context) error { return migrate(ctx, db) })
		t.Cleanup(func() {
			if err := dropTables(context.Background(), db); err != nil {
				t.Errorf("drop: %v", err)
			}
		})
		testcluster.OnPrimary(t, "auto-migrate again (no change)", func(ctx context.Context) error { return migrate(ctx, db) })
		if _, r1 := testcluster.Served(t, sqlDB); r1 != r0 {
			t.Errorf("AutoMigrate with WithPrimary sent %d statements to replicas, want 0", r1-r0)
		}

		var apple Item
		r := testcluster.OnPrimary(t, "create", func(ctx context.Context) (err error) {
			apple, err = addItem(ctx, db, "apple", 3)
			return err
		})
		if r.Reason != "transaction" { // gorm's default transaction around Create
			t.Errorf("create: reason %q, want gorm's default transaction", r.Reason)
		}
		if apple.ID == 0 || apple.CreatedAt.IsZero() {
			t.Errorf("create did not fill ID and CreatedAt: %+v", apple)
		}
		testcluster.OnPrimary(t, "transaction", func(ctx context.Context) error {
			n, err := restock(ctx, db, "fig", 4)
			if err == nil && n != 2 {
				t.Errorf("the transaction counted %d rows, want 2 (its own insert included)", n)
			}
			return err
		})
		testcluster.OnPrimary(t, "read own write with WithPrimary", func(ctx context.Context) error {
			it, err := getItem(rwpool.WithPrimary(ctx), db, apple.ID)
			// PostgreSQL keeps microseconds, MariaDB here milliseconds.
			if err == nil && (it.Name != "apple" || it.CreatedAt.Sub(apple.CreatedAt).Abs() >= time.Millisecond) {
				t.Errorf("read back %+v, want %+v", it, apple)
			}
			return err
		})
		testcluster.Eventually(t, 10*time.Second, "replica sees 2 rows", func() (bool, error) {
			var items []Item
			testcluster.OnReplica(t, "list", func(ctx context.Context) (err error) {
				items, err = listItems(ctx, db)
				return err
			})
			return len(items) == 2, nil
		})
		// A miss on a replica is gorm's ErrRecordNotFound, as without rwpool.
		testcluster.OnReplica(t, "first of a missing id", func(ctx context.Context) error {
			if _, err := getItem(ctx, db, 1<<62); !errors.Is(err, gorm.ErrRecordNotFound) {
				t.Errorf("missing item: %v, want gorm.ErrRecordNotFound", err)
			}
			return nil
		})

		p0, r0 := testcluster.Served(t, sqlDB)
		for range 20 {
			if _, err := listItems(context.Background(), db); err != nil {
				t.Fatal(err)
			}
		}
		if p1, r1 := testcluster.Served(t, sqlDB); p1 != p0 || r1-r0 != 20 {
			t.Errorf("20 reads: primary served %d, replicas %d; want 0 and 20", p1-p0, r1-r0)
		}

		var port string
		if err := db.Raw(b.PortQuery).Scan(&port).Error; err != nil || !b.IsReplicaPort(port) {
			t.Errorf("raw read answered by port %s (%v), want a replica", port, err)
		}
		err = db.Transaction(func(tx *gorm.DB) error { return tx.Raw(b.PortQuery).Scan(&port).Error })
		if err != nil || port != b.PrimaryPort() {
			t.Errorf("read in a transaction answered by port %s (%v), want the primary", port, err)
		}
	})
}

// TestGormDriverName: the other form that works, DriverName "rwpool" with
// the composite DSN, for both dialectors. For MySQL the dialector's
// SELECT VERSION() at open runs on a replica and still tells it MariaDB.
func TestGormDriverName(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		var r rwpool.Route
		db, err := openByDriverName(b.DSN(""), !b.IsPostgres())
		if err != nil {
			t.Fatal(err)
		}
		sqlDB, err := db.DB()
		if err != nil {
			t.Fatal(err)
		}
		defer sqlDB.Close()
		if _, err := rwpool.Stats(sqlDB); err != nil {
			t.Fatalf("gorm did not open rwpool: %v", err)
		}
		if d, ok := db.Dialector.(*mysql.Dialector); ok && !strings.Contains(d.ServerVersion, "MariaDB") {
			t.Errorf("gorm's mysql dialector saw server version %q", d.ServerVersion)
		}
		var port string
		if err := db.WithContext(rwpool.WithRoute(context.Background(), &r)).Raw(b.PortQuery).Scan(&port).Error; err != nil {
			t.Fatal(err)
		}
		if !b.IsReplicaPort(port) || r.Role != "replica" {
			t.Errorf("read answered by port %s, route %+v; want a replica", port, r)
		}
		if err := db.Transaction(func(tx *gorm.DB) error { return tx.Raw(b.PortQuery).Scan(&port).Error }); err != nil || port != b.PrimaryPort() {
			t.Errorf("read in a transaction answered by port %s (%v), want the primary", port, err)
		}
	})
}

// TestGormPostgresConnWithoutDriverName shows why open sets DriverName
// with Conn: without it gorm.io/driver/postgres assumes pgx and adds
// pgx.QueryExecModeSimpleProtocol as a first argument to AutoMigrate's
// query of an existing table. rwpool hands it to pgx intact (pgx takes it
// as an option); lib/pq takes it for a parameter and fails.
func TestGormPostgresConnWithoutDriverName(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		if !b.IsPostgres() {
			t.Skip("gorm.io/driver/postgres only")
		}
		sqlDB, err := sql.Open("rwpool", b.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sqlDB.Close() })
		db, err := gorm.Open(postgres.New(postgres.Config{Conn: sqlDB}), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dropTables(ctx, db) })
		err = migrate(ctx, db) // the table exists now: gorm reads its columns
		switch b.Driver {
		case "pgx":
			if err != nil {
				t.Errorf("AutoMigrate of an existing table over pgx: %v", err)
			}
		case "postgres":
			if err == nil || !strings.Contains(err.Error(), "got 2 parameters but the statement requires 1") {
				t.Errorf("AutoMigrate of an existing table over lib/pq without DriverName: %v; the README says it fails", err)
			}
		}
	})
}

// TestGormOpenWithDSNBypassesRWPool: postgres.Open and mysql.Open hand
// the DSN to a real driver, never to rwpool, and that driver's parser
// misreads a one-line composite DSN instead of rejecting it: pgx and
// go-sql-driver/mysql pick host, port, user and database out of the node
// DSNs and dial them. No cluster needed: the nodes here are 127.0.0.1:1.
func TestGormOpenWithDSNBypassesRWPool(t *testing.T) {
	cfg := &gorm.Config{Logger: logger.Discard}
	for _, c := range []struct {
		name string
		d    gorm.Dialector
	}{
		{"postgres.Open", postgres.Open("driver=postgres;primary='host=127.0.0.1 port=1 user=u dbname=d sslmode=disable'")},
		{"mysql.Open", mysql.Open("driver=mysql;primary='u:p@tcp(127.0.0.1:1)/d'")},
	} {
		db, err := gorm.Open(c.d, cfg)
		if err == nil {
			sqlDB, _ := db.DB()
			if _, err := rwpool.Stats(sqlDB); err == nil {
				t.Errorf("%s(composite DSN) opened rwpool; the README says it bypasses it", c.name)
			}
			sqlDB.Close()
			continue
		}
		if strings.Contains(err.Error(), "dial") || strings.Contains(err.Error(), "connect") {
			t.Logf("%s(composite DSN) misread the DSN and dialled, without rwpool: %v", c.name, err)
		} else {
			t.Logf("%s(composite DSN): %v", c.name, err)
		}
	}
}

// TestDemo runs what `go run ./gorm` runs.
func TestDemo(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		db, sqlDB, err := open(b.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		defer sqlDB.Close()
		if err := demo(context.Background(), db, io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}
