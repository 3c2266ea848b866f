// Command gorm shows rwpool under gorm (gorm.io/gorm) with both of its SQL
// dialectors, gorm.io/driver/postgres and gorm.io/driver/mysql: it opens
// rwpool, migrates a table, writes, reads and runs a transaction, printing
// which node served each step, then drops the table.
//
//	go run ./gorm -dsn "driver=postgres;primary='host=db1 user=app dbname=shop';replica='host=db2 user=app dbname=shop'"
//	go run ./gorm -dsn "driver=mysql;primary='app:pw@tcp(db1:3306)/shop?parseTime=true';replica='app:pw@tcp(db2:3306)/shop?parseTime=true'"
//
// What works, and why:
//
//   - Conn: hand gorm the *sql.DB of sql.Open("rwpool", dsn) —
//     postgres.New(postgres.Config{DriverName: "rwpool", Conn: db}) or
//     mysql.New(mysql.Config{Conn: db}). This is the form to use: the same
//     code for both dialectors, and you keep the *sql.DB for rwpool.Stats,
//     rwpool.Configure and Close.
//   - For PostgreSQL, set DriverName (to "rwpool") even with Conn: when
//     DriverName is "" or "pgx", gorm.io/driver/postgres assumes the
//     connection is pgx and passes pgx.QueryExecModeSimpleProtocol as an
//     extra first argument to the catalog query of AutoMigrate
//     (Migrator.GetRows, run once the table exists). pgx takes it as an
//     option — and it reaches pgx through rwpool intact — but lib/pq
//     takes it as a parameter and fails: "pq: got 2 parameters but the
//     statement requires 1". That is gorm with lib/pq, rwpool or not.
//   - DriverName "rwpool" with the composite DSN works too, for both:
//     with DriverName set, gorm's postgres dialector calls
//     sql.Open(DriverName, DSN) instead of parsing the DSN with pgx; gorm's
//     mysql dialector also runs the mysql driver's ParseDSN on it, which
//     cannot read a composite DSN (it errs, or misreads it) and whose
//     result gorm only uses for the time zone of the SQL its logger
//     prints; it ignores the error.
//   - postgres.Open(dsn) and mysql.Open(dsn) must not be used: they hand
//     the DSN to pgx (pgx.ParseConfig, then pgx's own stdlib.OpenDB) and to
//     the "mysql" driver, bypassing rwpool. Worse, a one-line composite
//     DSN does not always fail to parse there: pgx reads it as
//     keyword/value pairs and the mysql parser as user:pw@tcp(addr)/db,
//     both picking pieces out of the node DSNs, so they may dial one node
//     (or a local default server) directly, with mangled credentials.
//   - gorm's mysql dialector runs SELECT VERSION() when it opens, to learn
//     the server's features (MariaDB ≥ 10.5: RETURNING). Through rwpool
//     that is a read, answered by a replica running the same version, so
//     nothing special is needed. Set SkipInitializeWithVersion only if
//     gorm must not touch the database at open; it then assumes MySQL 8
//     features, wrong for MariaDB (set the Dont… flags by hand).
//   - MySQL node DSNs need parseTime=true, as with gorm without rwpool, for
//     time.Time fields such as CreatedAt.
//   - AutoMigrate reads the catalog (HasTable, ColumnTypes, indexes) and
//     then runs DDL. Outside a transaction those reads go to replicas,
//     which may not yet have replayed a table or column created a moment
//     ago; run migrations with rwpool.WithPrimary so that they read the
//     catalog they are about to change.
//   - gorm wraps Create, Save, Update and Delete in a transaction of its
//     own (unless SkipDefaultTransaction), so they run on the primary;
//     First, Find, Count and Scan are SELECTs and go to replicas. Pass
//     rwpool.WithPrimary or rwpool.WithRoute with db.WithContext(ctx).
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/lib/pq"
)

func main() {
	dsnFlag := flag.String("dsn", os.Getenv("RWPOOL_DSN"), "composite rwpool DSN (default $RWPOOL_DSN)")
	flag.Parse()
	gdb, sqlDB, err := open(*dsnFlag)
	if err != nil {
		log.Fatal(err)
	}
	defer sqlDB.Close()
	if err := demo(context.Background(), gdb, os.Stdout); err != nil {
		log.Fatal(err)
	}
	s, _ := rwpool.Stats(sqlDB)
	fmt.Print(s)
}

// open opens rwpool with database/sql and hands the *sql.DB to the gorm
// dialector for the real driver behind it.
func open(composite string) (*gorm.DB, *sql.DB, error) {
	cfg, err := dsn.Parse(composite)
	if err != nil {
		return nil, nil, err
	}
	sqlDB, err := sql.Open("rwpool", composite)
	if err != nil {
		return nil, nil, err
	}
	var dialector gorm.Dialector
	switch cfg.Driver {
	case "mysql":
		dialector = mysql.New(mysql.Config{Conn: sqlDB})
	case "postgres", "pgx":
		// DriverName: not "" or "pgx", so that gorm does not assume pgx (see above).
		dialector = postgres.New(postgres.Config{DriverName: "rwpool", Conn: sqlDB})
	default:
		sqlDB.Close()
		return nil, nil, fmt.Errorf("no gorm dialector for driver %q", cfg.Driver)
	}
	gdb, err := gorm.Open(dialector, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		sqlDB.Close()
		return nil, nil, err
	}
	return gdb, sqlDB, nil
}

// openByDriverName is the other form that works: gorm opens rwpool
// itself, by name, with the composite DSN.
func openByDriverName(composite string, mySQL bool) (*gorm.DB, error) {
	if mySQL {
		return gorm.Open(mysql.New(mysql.Config{DriverName: "rwpool", DSN: composite}), &gorm.Config{Logger: logger.Discard})
	}
	return gorm.Open(postgres.New(postgres.Config{DriverName: "rwpool", DSN: composite}), &gorm.Config{Logger: logger.Discard})
}

// Item is one row of ex_gorm_items.
type Item struct {
	ID        uint64 `gorm:"primaryKey"`
	Name      string `gorm:"size:100;not null"`
	Qty       int    `gorm:"not null"`
	CreatedAt time.Time
}

// TableName keeps the example's table apart from anything else's.
func (Item) TableName() string { return "ex_gorm_items" }

// migrate creates or updates the table. WithPrimary makes AutoMigrate read
// the catalog on the primary, where its DDL runs, not on a lagging replica.
func migrate(ctx context.Context, db *gorm.DB) error {
	return db.WithContext(rwpool.WithPrimary(ctx)).AutoMigrate(&Item{})
}

func dropTables(ctx context.Context, db *gorm.DB) error {
	return db.WithContext(rwpool.WithPrimary(ctx)).Migrator().DropTable(&Item{})
}

// addItem creates one item: gorm's default transaction, on the primary.
func addItem(ctx context.Context, db *gorm.DB, name string, qty int) (Item, error) {
	it := Item{Name: name, Qty: qty}
	err := db.WithContext(ctx).Create(&it).Error
	return it, err
}

// listItems reads every item: a SELECT, so a replica answers it.
func listItems(ctx context.Context, db *gorm.DB) ([]Item, error) {
	var items []Item
	err := db.WithContext(ctx).Order("id").Find(&items).Error
	return items, err
}

// getItem reads one item by id (use WithPrimary right after writing it).
func getItem(ctx context.Context, db *gorm.DB, id uint64) (Item, error) {
	var it Item
	err := db.WithContext(ctx).First(&it, id).Error
	return it, err
}

// restock adds an item and counts the items in one transaction: all of it
// runs on the primary, so the count sees the insert.
func restock(ctx context.Context, db *gorm.DB, name string, qty int) (count int64, err error) {
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&Item{Name: name, Qty: qty}).Error; err != nil {
			return err
		}
		return tx.Model(&Item{}).Count(&count).Error
	})
	return count, err
}

// demo runs every step and prints which node served it.
func demo(ctx context.Context, db *gorm.DB, w io.Writer) error {
	var r rwpool.Route
	// One causal session for the whole demo: its reads on replicas see
	// its own writes (the table it just created among them), however far
	// behind a replica is at that moment.
	rctx := rwpool.WithRoute(rwpool.WithSession(ctx), &r)
	step := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		fmt.Fprintf(w, "%-28s %-9s %-8s %s\n", what, r.Node, r.Role, r.Reason)
		return nil
	}
	if err := step("auto-migrate", migrate(rctx, db)); err != nil {
		return err
	}
	defer dropTables(ctx, db)
	it, err := addItem(rctx, db, "apple", 3)
	if err := step("create", err); err != nil {
		return err
	}
	n, err := restock(rctx, db, "fig", 4)
	if err := step(fmt.Sprintf("transaction (sees %d rows)", n), err); err != nil {
		return err
	}
	got, err := getItem(rwpool.WithPrimary(rctx), db, it.ID)
	if err := step(fmt.Sprintf("read own write (%s)", got.Name), err); err != nil {
		return err
	}
	items, err := listItems(rctx, db)
	if err := step(fmt.Sprintf("list (%d rows)", len(items)), err); err != nil {
		return err
	}
	if _, err := getItem(rctx, db, 1<<62); !errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("get a missing item: %v, want gorm.ErrRecordNotFound", err)
	}
	return step("drop table", dropTables(rctx, db))
}
