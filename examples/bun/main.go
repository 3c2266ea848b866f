// Command bun shows rwpool under bun (github.com/uptrace/bun) with its
// PostgreSQL and MySQL dialects: it opens rwpool, creates a table, writes,
// reads and runs a transaction, printing which node served each step, then
// drops the table.
//
//	go run ./bun -dsn "driver=postgres;primary='host=db1 user=app dbname=shop';replica='host=db2 user=app dbname=shop'"
//	go run ./bun -dsn "driver=mysql;primary='app:pw@tcp(db1:3306)/shop';replica='app:pw@tcp(db2:3306)/shop'"
//
// bun wraps any *sql.DB: bun.NewDB(db, pgdialect.New()) for lib/pq and pgx,
// bun.NewDB(db, mysqldialect.New()) for go-sql-driver/mysql. Nothing else
// is needed. mysqldialect runs SELECT version() once in bun.NewDB to learn
// the server's features (MariaDB ≥ 10.5: INSERT … RETURNING); through
// rwpool a replica answers it. bun's query builders all take a context
// (Exec(ctx), Scan(ctx)), so rwpool.WithPrimary and rwpool.WithRoute pass
// straight through; db.RunInTx runs on the primary. Run bun's
// migrate.Migrator with rwpool.WithPrimary: it reads its table of applied
// migrations with a plain SELECT, which a lagging replica could answer.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/schema"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/lib/pq"
)

func main() {
	dsnFlag := flag.String("dsn", os.Getenv("RWPOOL_DSN"), "composite rwpool DSN (default $RWPOOL_DSN)")
	flag.Parse()
	db, err := open(*dsnFlag)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := demo(context.Background(), db, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// open opens rwpool with database/sql and wraps it in bun with the dialect
// of the real driver behind it.
func open(composite string) (*bun.DB, error) {
	cfg, err := dsn.Parse(composite)
	if err != nil {
		return nil, err
	}
	var d schema.Dialect
	switch cfg.Driver {
	case "mysql":
		d = mysqldialect.New()
	case "postgres", "pgx":
		d = pgdialect.New()
	default:
		return nil, fmt.Errorf("no bun dialect for driver %q", cfg.Driver)
	}
	db, err := sql.Open("rwpool", composite)
	if err != nil {
		return nil, err
	}
	return bun.NewDB(db, d), nil
}

// Item is one row of ex_bun_items.
type Item struct {
	bun.BaseModel `bun:"table:ex_bun_items"`

	ID   int64  `bun:"id,pk,autoincrement"`
	Name string `bun:"name,notnull"`
	Qty  int    `bun:"qty,notnull"`
}

func migrate(ctx context.Context, db bun.IDB) error {
	_, err := db.NewCreateTable().Model((*Item)(nil)).IfNotExists().Exec(ctx)
	return err
}

func dropTables(ctx context.Context, db bun.IDB) error {
	_, err := db.NewDropTable().Model((*Item)(nil)).IfExists().Exec(ctx)
	return err
}

// addItems inserts items and fills in their ids (RETURNING on PostgreSQL
// and MariaDB ≥ 10.5, LastInsertId otherwise).
func addItems(ctx context.Context, db bun.IDB, items ...*Item) error {
	_, err := db.NewInsert().Model(&items).Exec(ctx)
	return err
}

// listItems reads every item: a SELECT, so a replica answers it.
func listItems(ctx context.Context, db bun.IDB) ([]Item, error) {
	var items []Item
	err := db.NewSelect().Model(&items).Order("id").Scan(ctx)
	return items, err
}

func getItem(ctx context.Context, db bun.IDB, id int64) (Item, error) {
	var it Item
	err := db.NewSelect().Model(&it).Where("id = ?", id).Scan(ctx)
	return it, err
}

// restock adds an item and counts the items in one transaction: all of it
// runs on the primary, so the count sees the insert.
func restock(ctx context.Context, db *bun.DB, name string, qty int) (count int64, err error) {
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := addItems(ctx, tx, &Item{Name: name, Qty: qty}); err != nil {
			return err
		}
		count, err = tx.NewSelect().Model((*Item)(nil)).Count(ctx)
		return err
	})
	return count, err
}

// demo runs every step and prints which node served it.
func demo(ctx context.Context, db *bun.DB, w io.Writer) error {
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
	if err := step("create table", migrate(rctx, db)); err != nil {
		return err
	}
	defer dropTables(ctx, db)
	apple := &Item{Name: "apple", Qty: 3}
	if err := step("insert", addItems(rctx, db, apple, &Item{Name: "pear", Qty: 1})); err != nil {
		return err
	}
	n, err := restock(rctx, db, "fig", 4)
	if err := step(fmt.Sprintf("transaction (sees %d rows)", n), err); err != nil {
		return err
	}
	got, err := getItem(rwpool.WithPrimary(rctx), db, apple.ID)
	if err := step(fmt.Sprintf("read own write (%s)", got.Name), err); err != nil {
		return err
	}
	items, err := listItems(rctx, db)
	if err := step(fmt.Sprintf("list (%d rows)", len(items)), err); err != nil {
		return err
	}
	return step("drop table", dropTables(rctx, db))
}
