// Command ent shows rwpool under ent (entgo.io/ent) with the client
// generated from ./entdb/schema (one entity, Item, in table ex_ent_items):
// it opens rwpool, migrates, writes, reads and runs a transaction,
// printing which node served each step, then drops the table.
//
//	go run ./ent -dsn "driver=postgres;primary='host=db1 user=app dbname=shop';replica='host=db2 user=app dbname=shop'"
//	go run ./ent -dsn "driver=mysql;primary='app:pw@tcp(db1:3306)/shop';replica='app:pw@tcp(db2:3306)/shop'"
//
// ent takes a *sql.DB through entgo.io/ent/dialect/sql.OpenDB with the
// dialect of the real driver (dialect.Postgres for lib/pq and pgx,
// dialect.MySQL for go-sql-driver/mysql). entsql.Open(name, dsn) will not
// do: it uses one name both as the database/sql driver to open and as
// ent's dialect, and "rwpool" is no dialect ent knows. Every ent
// query takes a context, so rwpool.WithPrimary and rwpool.WithRoute pass
// straight through. client.Tx runs on the primary; queries outside it are
// routed by their SQL, reads to replicas. client.Schema.Create inspects
// the catalog outside its transaction, on a replica unless its context
// says WithPrimary: migrate with rwpool.WithPrimary so that it never plans
// against a replica that has not yet replayed the last migration.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/examples/ent/entdb"
	"github.com/rwpool/rwpool/examples/ent/entdb/item"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/lib/pq"
)

func main() {
	dsnFlag := flag.String("dsn", os.Getenv("RWPOOL_DSN"), "composite rwpool DSN (default $RWPOOL_DSN)")
	flag.Parse()
	client, db, err := open(*dsnFlag)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close() // closes db
	if err := demo(context.Background(), client, db, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// open opens rwpool with database/sql and gives ent the *sql.DB with the
// dialect of the real driver behind it. It returns the *sql.DB too, for
// rwpool.Stats and for SQL the generated client has no method for.
func open(composite string) (*entdb.Client, *sql.DB, error) {
	cfg, err := dsn.Parse(composite)
	if err != nil {
		return nil, nil, err
	}
	var d string
	switch cfg.Driver {
	case "mysql":
		d = dialect.MySQL
	case "postgres", "pgx":
		d = dialect.Postgres
	default:
		return nil, nil, fmt.Errorf("no ent dialect for driver %q", cfg.Driver)
	}
	db, err := sql.Open("rwpool", composite)
	if err != nil {
		return nil, nil, err
	}
	return entdb.NewClient(entdb.Driver(entsql.OpenDB(d, db))), db, nil // client.Close closes db
}

// migrate creates or updates the schema, planned against the primary.
func migrate(ctx context.Context, c *entdb.Client) error {
	return c.Schema.Create(rwpool.WithPrimary(ctx))
}

// dropTables drops the example's table (ent migrations never drop one).
func dropTables(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS ex_ent_items")
	return err
}

func addItem(ctx context.Context, c *entdb.Client, name string, qty int) (*entdb.Item, error) {
	return c.Item.Create().SetName(name).SetQty(qty).Save(ctx)
}

func addItems(ctx context.Context, c *entdb.Client, names ...string) ([]*entdb.Item, error) {
	b := make([]*entdb.ItemCreate, len(names))
	for i, n := range names {
		b[i] = c.Item.Create().SetName(n).SetQty(1)
	}
	return c.Item.CreateBulk(b...).Save(ctx)
}

// listItems reads every item: a SELECT, so a replica answers it.
func listItems(ctx context.Context, c *entdb.Client) ([]*entdb.Item, error) {
	return c.Item.Query().Order(entdb.Asc(item.FieldID)).All(ctx)
}

// restock adds an item and counts the items in one ent transaction: all of
// it runs on the primary, so the count sees the insert.
func restock(ctx context.Context, c *entdb.Client, name string, qty int) (int, error) {
	tx, err := c.Tx(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if _, err := tx.Item.Create().SetName(name).SetQty(qty).Save(ctx); err != nil {
		return 0, err
	}
	n, err := tx.Item.Query().Count(ctx)
	if err != nil {
		return 0, err
	}
	return n, tx.Commit()
}

// demo runs every step and prints which node served it.
func demo(ctx context.Context, c *entdb.Client, db *sql.DB, w io.Writer) error {
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
	if err := step("migrate", migrate(rctx, c)); err != nil {
		return err
	}
	defer dropTables(ctx, db)
	it, err := addItem(rctx, c, "apple", 3)
	if err := step("create", err); err != nil {
		return err
	}
	_, err = addItems(rctx, c, "pear", "plum")
	if err := step("create bulk", err); err != nil {
		return err
	}
	n, err := restock(rctx, c, "fig", 4)
	if err := step(fmt.Sprintf("transaction (sees %d rows)", n), err); err != nil {
		return err
	}
	got, err := c.Item.Get(rwpool.WithPrimary(rctx), it.ID)
	if err := step(fmt.Sprintf("read own write (%s)", got.Name), err); err != nil {
		return err
	}
	items, err := listItems(rctx, c)
	if err := step(fmt.Sprintf("list (%d rows)", len(items)), err); err != nil {
		return err
	}
	return step("drop table", dropTables(rctx, db))
}
