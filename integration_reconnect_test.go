package rwpool_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
)

// connCounters sums the real-connection counters of every node.
type connCounters struct{ dials, closedSession, closedBroken, resets int64 }

func countConns(t *testing.T, db *sql.DB) connCounters {
	t.Helper()
	s, err := rwpool.Stats(db)
	if err != nil {
		t.Fatal(err)
	}
	var c connCounters
	for _, n := range s.Nodes {
		c.dials += n.Dials
		c.closedSession += n.ClosedSession
		c.closedBroken += n.ClosedBroken
		c.resets += n.Resets
	}
	return c
}

func (c connCounters) minus(o connCounters) connCounters {
	return connCounters{c.dials - o.dials, c.closedSession - o.closedSession, c.closedBroken - o.closedBroken, c.resets - o.resets}
}

// TestIntegrationReconnects measures what leases that read or change
// session state cost in real connections. Reading the id a write just
// made (currval, LAST_INSERT_ID()) changes nothing: it costs no
// reconnect. A SET does: the connection is closed at the lease's end, or
// reset with reset_query, after which the next lease sees no trace of it.
func TestIntegrationReconnects(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		skipTransactionPooled(t, cl)
		ctx := context.Background()
		const leases = 50
		setup := cl.open(t, "")
		tb := "rw_reconnect"
		mustExec(t, setup, "DROP TABLE IF EXISTS "+tb)
		if cl.IsPostgres() {
			mustExec(t, setup, "CREATE TABLE "+tb+" (id SERIAL PRIMARY KEY, v INT)")
		} else {
			mustExec(t, setup, "CREATE TABLE "+tb+" (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
		}
		lastID := "SELECT LAST_INSERT_ID()"
		set, show := "SET @rw_mark = 'dirty'", "SELECT COALESCE(@rw_mark, 'clean')"
		reset := "SET @rw_mark = NULL"
		if cl.IsPostgres() {
			lastID = "SELECT currval(pg_get_serial_sequence('" + tb + "', 'id'))"
			set, show = "SET application_name = 'dirty'", "SELECT CASE WHEN current_setting('application_name') = 'dirty' THEN 'dirty' ELSE 'clean' END"
			reset = "DISCARD ALL"
		}
		if isPgx(cl) {
			// DISCARD ALL also drops the statements pgx caches per
			// connection: everything else it does, and no DEALLOCATE.
			reset = "RESET ALL; DISCARD TEMP; DISCARD SEQUENCES; CLOSE ALL; UNLISTEN *; SELECT pg_advisory_unlock_all()"
		}

		t.Run("reading the id of a write", func(t *testing.T) {
			db := cl.open(t, "pool_size=4")
			before := countConns(t, db)
			for i := range leases {
				c, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.ExecContext(ctx, "INSERT INTO "+tb+" (v) VALUES (1)"); err != nil {
					t.Fatal(err)
				}
				var id int64
				if err := c.QueryRowContext(ctx, lastID).Scan(&id); err != nil || id == 0 {
					t.Fatalf("lease %d: %s = %d, %v", i, lastID, id, err)
				}
				c.Close()
			}
			got := countConns(t, db).minus(before)
			t.Logf("%s: %d leases reading the id of their write: %d dials, %d closed for their session", cl.Name, leases, got.dials, got.closedSession)
			if got.closedSession != 0 {
				t.Errorf("%d connections closed for their session state, want 0: reading it changes nothing", got.closedSession)
			}
		})

		for _, resetQuery := range []string{"", reset} {
			name := "SET, closed at the lease's end"
			extra := "pool_size=4"
			if resetQuery != "" {
				name = "SET, reset with reset_query"
				extra += fmt.Sprintf(";reset_query='%s'", resetQuery)
			}
			t.Run(name, func(t *testing.T) {
				db := cl.open(t, extra)
				db.SetMaxOpenConns(1) // one lease at a time, so the next lease may get the same real connection
				before := countConns(t, db)
				for i := range leases {
					c, err := db.Conn(rwpool.WithPrimary(ctx))
					if err != nil {
						t.Fatal(err)
					}
					var mark string
					if err := c.QueryRowContext(rwpool.WithPrimary(ctx), show).Scan(&mark); err != nil || mark != "clean" {
						t.Fatalf("lease %d starts with %q (%v): a changed session leaked into another lease", i, mark, err)
					}
					if _, err := c.ExecContext(ctx, set); err != nil {
						t.Fatal(err)
					}
					c.Close()
					if resetQuery != "" {
						// The reset runs in the background: wait for it, so
						// that the next lease can reuse the connection.
						deadline := time.Now().Add(5 * time.Second)
						for countConns(t, db).minus(before).resets < int64(i+1) && time.Now().Before(deadline) {
							time.Sleep(time.Millisecond)
						}
					}
				}
				got := countConns(t, db).minus(before)
				t.Logf("%s: %d leases with a SET (reset_query %q): %d dials, %d closed for their session, %d reset",
					cl.Name, leases, resetQuery, got.dials, got.closedSession, got.resets)
				if resetQuery == "" && got.closedSession != leases {
					t.Errorf("closed %d connections for their session, want %d", got.closedSession, leases)
				}
				if resetQuery != "" && (got.closedSession != 0 || got.resets != leases || got.dials > 1) {
					t.Errorf("with reset_query: %d closed, %d reset, %d dials; want 0, %d, at most 1", got.closedSession, got.resets, got.dials, leases)
				}
			})
		}
	})
}
