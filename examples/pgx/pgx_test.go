package main

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/goleak"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/examples/internal/testcluster"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// urlDSN is the composite DSN of the PostgreSQL cluster with postgres://
// URLs as node DSNs (the root module's tests use keyword/value ones).
func urlDSN(b *testcluster.Backend) string {
	u := "postgres://" + os.Getenv("RWPOOL_DB_USER") + ":" + os.Getenv("RWPOOL_DB_PASSWORD") + "@%s/" + os.Getenv("RWPOOL_DB_NAME") + "?sslmode=disable&connect_timeout=5"
	var s strings.Builder
	s.WriteString("driver=pgx;primary='" + strings.ReplaceAll(u, "%s", b.Primary) + "';")
	for _, r := range b.Replicas {
		s.WriteString("replica='" + strings.ReplaceAll(u, "%s", r) + "';")
	}
	return s.String()
}

// TestPGX: pgx-native values through rwpool, writes on the primary, reads
// on replicas, a transaction reading its own write.
func TestPGX(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		if b.Driver != "pgx" {
			t.Skip("pgx only")
		}
		db, err := sql.Open("rwpool", urlDSN(b))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() }) // after the drop below: cleanups run last-in first-out
		testcluster.OnPrimary(t, "create table", func(ctx context.Context) error { return migrate(ctx, db) })
		t.Cleanup(func() {
			if err := dropTables(context.Background(), db); err != nil {
				t.Errorf("drop: %v", err)
			}
		})
		want := []int64{1 << 40, -2, 3}
		testcluster.OnPrimary(t, "insert", func(ctx context.Context) error {
			return addItem(ctx, db, 1, want, map[string]any{"k": []any{1, "two"}})
		})
		// pgx's errors come through unwrapped.
		testcluster.OnPrimary(t, "duplicate insert", func(ctx context.Context) error {
			err := addItem(ctx, db, 1, []int64{}, map[string]any{})
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
				t.Errorf("duplicate key: %v (%T), want a *pgconn.PgError with SQLSTATE 23505", err, err)
			}
			return nil
		})
		testcluster.OnPrimary(t, "read own write", func(ctx context.Context) error {
			got, err := getTags(rwpool.WithPrimary(ctx), db, 1)
			if err == nil && !slices.Equal(got, want) {
				t.Errorf("read back %v, want %v", got, want)
			}
			return err
		})
		testcluster.Eventually(t, 10*time.Second, "replica has the row", func() (bool, error) {
			var got []int64
			var err error
			testcluster.OnReplica(t, "read", func(ctx context.Context) error {
				got, err = getTags(ctx, db, 1)
				if err == sql.ErrNoRows {
					return nil
				}
				return err
			})
			return slices.Equal(got, want), err
		})
		testcluster.OnPrimary(t, "transaction", func(ctx context.Context) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if _, err := tx.ExecContext(ctx, `INSERT INTO ex_pgx_items VALUES ($1, $2, $3)`, 2, []int64{}, map[string]any{}); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM ex_pgx_items`).Scan(&n); err != nil {
				return err
			}
			if n != 2 {
				t.Errorf("the transaction counted %d rows, want 2", n)
			}
			return tx.Commit()
		})
		var port string
		if err := db.QueryRow(b.PortQuery).Scan(&port); err != nil || !b.IsReplicaPort(port) {
			t.Errorf("read answered by port %s (%v), want a replica", port, err)
		}
	})
}

// TestDemo runs what `go run ./pgx` runs.
func TestDemo(t *testing.T) {
	testcluster.ForEach(t, func(t *testing.T, b *testcluster.Backend) {
		if b.Driver != "pgx" {
			t.Skip("pgx only")
		}
		db, err := sql.Open("rwpool", b.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := demo(context.Background(), db, io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}
