package rwpool_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
)

// TestIntegrationOutcomeUnknown (issue #23): the primary is killed while a
// write runs on it (the write sleeps on the server), and, on PostgreSQL,
// while a COMMIT runs (a deferred constraint trigger sleeps at commit).
// Each fails with an error wrapping rwpool.ErrOutcomeUnknown, never
// driver.ErrBadConn, naming the node.
func TestIntegrationOutcomeUnknown(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "")
		table := "rw_outcome_" + cl.Name
		mustExec(t, db, "DROP TABLE IF EXISTS "+table)
		mustExec(t, db, "CREATE TABLE "+table+" (id INT)")
		t.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS " + table) })
		sleepy := fmt.Sprintf("INSERT INTO %s SELECT 1 FROM (SELECT pg_sleep(3)) s", table)
		if !cl.IsPostgres() {
			sleepy = fmt.Sprintf("INSERT INTO %s SELECT SLEEP(3)", table)
		}
		cl.waitSync(t)

		lostDuring := func(what string, run func(ctx context.Context) error) {
			t.Helper()
			errc := make(chan error, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			go func() { errc <- run(ctx) }()
			time.Sleep(500 * time.Millisecond) // the statement is on the server, sleeping: a measurement window
			cl.fault(t, "kill-node", cl.Primary)
			err := <-errc
			cl.fault(t, "start-node", cl.Primary)
			cl.waitSync(t)
			eventually(t, 10*time.Second, "the primary serves again", func() bool {
				return nodeStats(t, db, "primary").Available
			})
			t.Logf("%s: %s lost: %v", cl.Name, what, err)
			if !errors.Is(err, rwpool.ErrOutcomeUnknown) || errors.Is(err, driver.ErrBadConn) {
				t.Errorf("%s whose primary was killed: %v; want ErrOutcomeUnknown, not driver.ErrBadConn", what, err)
			}
		}
		lostDuring("a write", func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, sleepy)
			return err
		})
		if !cl.IsPostgres() {
			return // MariaDB has no deferred trigger to hold a COMMIT on the server
		}
		mustExec(t, db, "CREATE OR REPLACE FUNCTION rw_outcome_sleep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(3); RETURN NULL; END $$")
		mustExec(t, db, "CREATE CONSTRAINT TRIGGER rw_outcome_sleepy AFTER INSERT ON "+table+
			" DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION rw_outcome_sleep()")
		cl.waitSync(t)
		lostDuring("a COMMIT", func(ctx context.Context) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return fmt.Errorf("begin: %w", err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+table+" VALUES (2)"); err != nil {
				tx.Rollback()
				return fmt.Errorf("insert: %w", err)
			}
			return tx.Commit()
		})
	})
}
