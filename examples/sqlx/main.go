// Command sqlx shows rwpool under github.com/jmoiron/sqlx: it opens rwpool,
// creates a table, writes, reads and runs a transaction, printing which
// node served each step, then drops the table.
//
//	go run ./sqlx -dsn "driver=postgres;primary='host=db1 user=app dbname=shop';replica='host=db2 user=app dbname=shop'"
//	go run ./sqlx -dsn "driver=mysql;primary='app:pw@tcp(db1:3306)/shop';replica='app:pw@tcp(db2:3306)/shop'"
//
// sqlx needs one thing: the name of the real driver. sqlx picks its
// placeholder style (bind type) from the driver name it is given — $1 for
// "postgres" and "pgx", ? for "mysql" — to rewrite the ? of Rebind, In and
// the :name parameters of NamedExec and NamedQuery. sqlx.Open("rwpool", …)
// would work for plain queries but leave sqlx guessing "rwpool", which it
// does not know (it falls back to ?, wrong for PostgreSQL). So open rwpool
// with database/sql and wrap the *sql.DB with sqlx.NewDb and the real
// driver's name. When a program only ever uses one backend,
// sqlx.BindDriver("rwpool", sqlx.DOLLAR) once at start-up and then
// sqlx.Open("rwpool", dsn) works too.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/jmoiron/sqlx"

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

// open opens rwpool for sqlx, naming the real driver so that sqlx binds
// parameters the way that driver expects.
func open(composite string) (*sqlx.DB, error) {
	cfg, err := dsn.Parse(composite) // the composite DSN says which driver is behind rwpool
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("rwpool", composite)
	if err != nil {
		return nil, err
	}
	return sqlx.NewDb(db, cfg.Driver), nil // "postgres", "pgx" or "mysql": $1 or ?
}

// openPostgresOnly is the alternative for a program that only ever talks
// to PostgreSQL through rwpool: teach sqlx the name "rwpool" once, then
// sqlx.Open works. (The binding is global to the process.)
func openPostgresOnly(composite string) (*sqlx.DB, error) {
	sqlx.BindDriver("rwpool", sqlx.DOLLAR)
	return sqlx.Open("rwpool", composite)
}

// Item is one row of ex_sqlx_items.
type Item struct {
	ID   int64  `db:"id"`
	Name string `db:"name"`
	Qty  int    `db:"qty"`
}

// isMySQL reports whether db speaks MySQL (placeholders ?, AUTO_INCREMENT,
// LastInsertId) rather than PostgreSQL ($1, BIGSERIAL, RETURNING).
func isMySQL(db *sqlx.DB) bool { return sqlx.BindType(db.DriverName()) == sqlx.QUESTION }

func migrate(ctx context.Context, db *sqlx.DB) error {
	ddl := `CREATE TABLE IF NOT EXISTS ex_sqlx_items (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, qty INT NOT NULL)`
	if isMySQL(db) {
		ddl = `CREATE TABLE IF NOT EXISTS ex_sqlx_items (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100) NOT NULL, qty INT NOT NULL)`
	}
	_, err := db.ExecContext(ctx, ddl)
	return err
}

func dropTables(ctx context.Context, db *sqlx.DB) error {
	_, err := db.ExecContext(ctx, `DROP TABLE IF EXISTS ex_sqlx_items`)
	return err
}

// addItem inserts one item and returns its id. sqlx.Rebind turns the ?
// into $1, $2 for PostgreSQL: that is what the driver name is for.
func addItem(ctx context.Context, db sqlx.ExtContext, name string, qty int) (int64, error) {
	q := db.Rebind(`INSERT INTO ex_sqlx_items (name, qty) VALUES (?, ?)`)
	if sqlx.BindType(db.DriverName()) == sqlx.QUESTION {
		res, err := db.ExecContext(ctx, q, name, qty)
		if err != nil {
			return 0, err
		}
		return res.LastInsertId()
	}
	var id int64
	err := db.QueryRowxContext(ctx, q+` RETURNING id`, name, qty).Scan(&id)
	return id, err
}

// addItems inserts items with a named query: :name and :qty become the
// driver's placeholders.
func addItems(ctx context.Context, db *sqlx.DB, items []Item) error {
	_, err := db.NamedExecContext(ctx, `INSERT INTO ex_sqlx_items (name, qty) VALUES (:name, :qty)`, items)
	return err
}

// listItems reads every item: a SELECT, so a replica answers it.
func listItems(ctx context.Context, db *sqlx.DB) ([]Item, error) {
	var items []Item
	err := db.SelectContext(ctx, &items, `SELECT id, name, qty FROM ex_sqlx_items ORDER BY id`)
	return items, err
}

// getItems reads the items with the given ids, with sqlx.In expanding the
// slice and Rebind fixing the placeholders.
func getItems(ctx context.Context, db *sqlx.DB, ids []int64) ([]Item, error) {
	q, args, err := sqlx.In(`SELECT id, name, qty FROM ex_sqlx_items WHERE id IN (?) ORDER BY id`, ids)
	if err != nil {
		return nil, err
	}
	var items []Item
	err = db.SelectContext(ctx, &items, db.Rebind(q), args...)
	return items, err
}

// restock adds an item and counts the items in one transaction: the whole
// transaction runs on the primary, so the count sees the insert at once.
func restock(ctx context.Context, db *sqlx.DB, name string, qty int) (count int, err error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if _, err := addItem(ctx, tx, name, qty); err != nil {
		return 0, err
	}
	if err := tx.GetContext(ctx, &count, `SELECT count(*) FROM ex_sqlx_items`); err != nil {
		return 0, err
	}
	return count, tx.Commit()
}

// demo runs every step and prints which node served it.
func demo(ctx context.Context, db *sqlx.DB, w io.Writer) error {
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
	id, err := addItem(rctx, db, "apple", 3)
	if err := step("insert", err); err != nil {
		return err
	}
	if err := step("named insert", addItems(rctx, db, []Item{{Name: "pear", Qty: 1}, {Name: "plum", Qty: 2}})); err != nil {
		return err
	}
	n, err := restock(rctx, db, "fig", 4)
	if err := step(fmt.Sprintf("transaction (sees %d rows)", n), err); err != nil {
		return err
	}
	// A replica may lag behind the primary by a moment: read what was just
	// written with WithPrimary.
	items, err := getItems(rwpool.WithPrimary(rctx), db, []int64{id})
	if err := step(fmt.Sprintf("read own write (%d row)", len(items)), err); err != nil {
		return err
	}
	items, err = listItems(rctx, db)
	if err := step(fmt.Sprintf("list (%d rows)", len(items)), err); err != nil {
		return err
	}
	return step("drop table", dropTables(rctx, db))
}
