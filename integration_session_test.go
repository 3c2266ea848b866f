package rwpool_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/rwpool/rwpool"
)

// Session semantics on one *sql.Conn: a write or a session-changing
// statement pins the lease to one primary connection, so what follows sees
// the session as on a single database.

func TestIntegrationSessionPinning(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "")
		ctx := context.Background()
		mustExec(t, db, "DROP TABLE IF EXISTS rw_sess")
		if cl.IsPostgres() {
			mustExec(t, db, "CREATE TABLE rw_sess (id SERIAL PRIMARY KEY, v TEXT)")
		} else {
			mustExec(t, db, "CREATE TABLE rw_sess (id INT AUTO_INCREMENT PRIMARY KEY, v TEXT)")
		}
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		// Before any write, reads on the *sql.Conn go to replicas.
		if p := cl.ServerPort(t, connQ{c}); !cl.IsReplicaPort(p) {
			t.Fatalf("first read on a fresh conn answered by %s, want a replica", p)
		}
		// A write, then the session-bound function that reads its id.
		var want, got int64
		switch {
		case cl.IsPostgres():
			if err := c.QueryRowContext(ctx, "INSERT INTO rw_sess (v) VALUES ('a') RETURNING id").Scan(&want); err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRowContext(ctx, "SELECT currval(pg_get_serial_sequence('rw_sess', 'id'))").Scan(&got); err != nil {
				t.Fatalf("currval after INSERT on the same *sql.Conn: %v", err)
			}
		case cl.Name == "mariadb":
			res, err := c.ExecContext(ctx, "INSERT INTO rw_sess (v) VALUES ('a')")
			if err != nil {
				t.Fatal(err)
			}
			want, _ = res.LastInsertId()
			if err := c.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&got); err != nil {
				t.Fatal(err)
			}
		}
		if got != want || want == 0 {
			t.Fatalf("session id after insert = %d, want %d", got, want)
		}
		// After the write every statement of the lease, reads included,
		// runs on the primary connection: it reads its own write at once.
		if p := cl.ServerPort(t, connQ{c}); p != portOf(cl.Primary) {
			t.Fatalf("read after a write on the same conn answered by %s, want primary", p)
		}
		var n int
		if err := c.QueryRowContext(ctx, "SELECT count(*) FROM rw_sess").Scan(&n); err != nil || n != 1 {
			t.Fatalf("read-your-write on the pinned conn: %d, %v", n, err)
		}
	})
}

func TestIntegrationSessionStateAndTempTables(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		skipTransactionPooled(t, cl)
		db := cl.open(t, "")
		ctx := context.Background()
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var set, show, mkTemp string
		switch {
		case cl.IsPostgres():
			set, show = "SET application_name = 'rwpool_sess'", "SHOW application_name"
			mkTemp = "CREATE TEMP TABLE rw_tmp (v INT)"
		case cl.Name == "mariadb":
			set, show = "SET @@session.sql_mode = 'ANSI_QUOTES'", "SELECT @@session.sql_mode"
			mkTemp = "CREATE TEMPORARY TABLE rw_tmp (v INT)"
		}
		if _, err := c.ExecContext(ctx, set); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := c.QueryRowContext(ctx, show).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != "rwpool_sess" && v != "ANSI_QUOTES" {
			t.Fatalf("%s after %s = %q: the session was lost", show, set, v)
		}
		if _, err := c.ExecContext(ctx, mkTemp); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, "INSERT INTO rw_tmp VALUES (42)"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := c.QueryRowContext(ctx, "SELECT v FROM rw_tmp").Scan(&n); err != nil || n != 42 {
			t.Fatalf("temp table read on the same conn: %d, %v", n, err)
		}
		c.Close()

		// The connection that carried that session state is never handed
		// to another lease: new leases see a clean session.
		for range 20 {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRowContext(ctx, "/*rwpool:primary*/ "+show).Scan(&v); err != nil {
				t.Fatal(err)
			}
			if v == "rwpool_sess" || v == "ANSI_QUOTES" {
				t.Fatalf("a later lease inherited the session state %q", v)
			}
			if _, err := c.ExecContext(ctx, "INSERT INTO rw_tmp VALUES (1)"); err == nil {
				t.Fatal("a later lease sees the temporary table of an ended one")
			}
			c.Close()
		}
	})
}

func TestIntegrationReadOnlyTransactionOnReplica(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "")
		tx, err := db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		first := cl.ServerPort(t, tx)
		if !cl.IsReplicaPort(first) {
			t.Fatalf("read-only transaction answered by %s, want a replica", first)
		}
		for range 10 {
			if p := cl.ServerPort(t, tx); p != first {
				t.Fatalf("read-only transaction moved from %s to %s", first, p)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// With readonly_tx=primary the same transaction runs on the primary.
		db2 := cl.open(t, "readonly_tx=primary")
		tx, err = db2.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if p := cl.ServerPort(t, tx); p != portOf(cl.Primary) {
			t.Fatalf("readonly_tx=primary: answered by %s, want primary", p)
		}
	})
}

// connQ runs QueryRow on a *sql.Conn with a background context.
type connQ struct{ c *sql.Conn }

func (q connQ) QueryRow(s string, args ...any) *sql.Row {
	return q.c.QueryRowContext(context.Background(), s, args...)
}

// db.Prepare: prepared reads run on replicas and prepared writes on the
// primary, with arguments, on both drivers (go-sql-driver/mysql prepares on
// the real connection when it is given arguments; lib/pq executes
// directly).
func TestIntegrationPreparedStatements(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "")
		mustExec(t, db, "DROP TABLE IF EXISTS rw_prep")
		mustExec(t, db, "CREATE TABLE rw_prep (id INT PRIMARY KEY, v INT)")
		ph := "?"
		if cl.IsPostgres() {
			ph = "$1"
		}
		ins, err := db.Prepare("INSERT INTO rw_prep (id, v) VALUES (" + ph + ", 1)")
		if err != nil {
			t.Fatal(err)
		}
		defer ins.Close()
		for i := range 10 {
			if _, err := ins.Exec(i); err != nil {
				t.Fatalf("prepared insert %d: %v", i, err)
			}
		}
		sel, err := db.Prepare(cl.PortQuery + " WHERE 1 = " + ph)
		if err != nil {
			t.Fatal(err)
		}
		defer sel.Close()
		for range 20 {
			var port string
			if err := sel.QueryRow(1).Scan(&port); err != nil {
				t.Fatal(err)
			}
			if !cl.IsReplicaPort(port) {
				t.Fatalf("prepared read answered by %s, want a replica", port)
			}
		}
		var n int
		if err := db.QueryRowContext(rwpool.WithPrimary(context.Background()), "SELECT count(*) FROM rw_prep").Scan(&n); err != nil || n != 10 {
			t.Fatalf("rows written by the prepared insert: %d, %v", n, err)
		}
	})
}
