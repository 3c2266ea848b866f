// Command pgx shows rwpool over pgx (github.com/jackc/pgx/v5) as the real
// driver, through plain database/sql: it creates a table, writes pgx-native
// values, reads them back on a replica, and drops the table.
//
//	go run ./pgx -dsn "driver=pgx;primary='postgres://app:pw@db1:5432/shop';replica='postgres://app:pw@db2:5432/shop'"
//
// Import github.com/jackc/pgx/v5/stdlib, which registers the database/sql
// driver "pgx", and name it in the composite DSN. Node DSNs are anything
// pgx.ParseConfig reads: postgres:// URLs or keyword/value strings
// (host=db1 user=app dbname=shop). rwpool hands every argument to pgx's
// own NamedValueChecker, so pgx's value support works as without rwpool:
// a []int64 goes straight into a BIGINT[] and a map into JSONB, neither of
// which database/sql's default converter or lib/pq accepts. pgx honours
// contexts itself, so rwpool runs its statements inline, with no watchdog
// goroutine. ORMs built for pgx work on top: gorm.io/driver/postgres (set
// DriverName, see ../gorm), ent and bun with their PostgreSQL dialects,
// sqlx with the bind name "pgx".
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rwpool/rwpool"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
)

func main() {
	dsnFlag := flag.String("dsn", os.Getenv("RWPOOL_DSN"), "composite rwpool DSN with driver=pgx (default $RWPOOL_DSN)")
	flag.Parse()
	db, err := sql.Open("rwpool", *dsnFlag)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := demo(context.Background(), db, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func migrate(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS ex_pgx_items (id BIGINT PRIMARY KEY, tags BIGINT[] NOT NULL, attrs JSONB NOT NULL)`)
	return err
}

func dropTables(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, `DROP TABLE IF EXISTS ex_pgx_items`)
	return err
}

// addItem writes pgx-native values: a []int64 into BIGINT[] and a map into
// JSONB, encoded by pgx.
func addItem(ctx context.Context, db *sql.DB, id int64, tags []int64, attrs map[string]any) error {
	_, err := db.ExecContext(ctx, `INSERT INTO ex_pgx_items (id, tags, attrs) VALUES ($1, $2, $3)`, id, tags, attrs)
	return err
}

// getTags reads an array back into a []int64 with pgx's type map; run on a
// replica unless ctx says WithPrimary.
func getTags(ctx context.Context, db *sql.DB, id int64) ([]int64, error) {
	var tags []int64
	err := db.QueryRowContext(ctx, `SELECT tags FROM ex_pgx_items WHERE id = $1`, id).Scan(pgtype.NewMap().SQLScanner(&tags))
	return tags, err
}

// demo runs every step and prints which node served it.
func demo(ctx context.Context, db *sql.DB, w io.Writer) error {
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
	if err := step("insert []int64, map", addItem(rctx, db, 1, []int64{7, 8, 9}, map[string]any{"color": "red"})); err != nil {
		return err
	}
	tags, err := getTags(rwpool.WithPrimary(rctx), db, 1)
	if err := step(fmt.Sprintf("read own write %v", tags), err); err != nil {
		return err
	}
	return step("drop table", dropTables(rctx, db))
}
