package rwpool_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
)

// Each routing rule, end to end through database/sql and rwpool, against
// go-sqlmock nodes: a statement reaching the wrong node fails the test
// (the other node has no expectation for it).
func TestRoutingRulesUnit(t *testing.T) {
	toReplica := []string{
		"SELECT 1",
		"  \n\tselect 1",
		"-- leading comment\nSELECT 1",
		"/* block */ SELECT 1",
		"((SELECT 1))",
		"WITH t AS (SELECT 1) SELECT * FROM t",
		"SHOW search_path",
		"VALUES (1), (2)",
		"TABLE users",
		"EXPLAIN SELECT * FROM users",
		"SELECT 'FOR UPDATE', \"nextval\" FROM t",
		"SELECT $$ DELETE FROM t $$",
		"/*rwpool:replica*/ SELECT * FROM t FOR UPDATE",
		"SELECT 1; SELECT 2",
		// Diagnostics run where the lease's previous statement ran: on a
		// fresh *sql.Conn there is none, so they read like any read.
		"SELECT FOUND_ROWS()",
		"SELECT ROW_COUNT()",
	}
	toPrimary := []string{
		"INSERT INTO t VALUES (1)",
		"UPDATE t SET a = 1",
		"DELETE FROM t",
		"MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
		"CREATE TABLE t (a int)",
		"SELECT * FROM t FOR UPDATE",
		"SELECT * FROM t FOR NO KEY UPDATE",
		"SELECT * FROM t FOR SHARE",
		"SELECT * FROM t FOR KEY SHARE",
		"SELECT * FROM t LOCK IN SHARE MODE",
		"SELECT * INTO new_t FROM t",
		"SELECT nextval('s')",
		"SELECT setval('s', 5)",
		"SELECT currval('s')",
		"SELECT lastval()",
		"SELECT LAST_INSERT_ID()",
		"SELECT GET_LOCK('l', 1)",
		"SELECT RELEASE_LOCK('l')",
		"SELECT pg_advisory_lock(1)",
		"SELECT pg_try_advisory_lock(1)",
		"WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
		"EXPLAIN ANALYZE DELETE FROM t",
		"SELECT 1; DELETE FROM t",
		"/*rwpool:primary*/ SELECT 1",
		"SET search_path = x",
		"SELECT @x",
		"SELECT @x := 1",
		"LOCK TABLES t WRITE",
		"PREPARE s FROM 'SELECT 1'",
		"USE shop",
		"CREATE TEMPORARY TABLE tmp (a int)",
		"SELECT pg_advisory_unlock(1)",
	}
	mc := newMockCluster(t, 1, "")
	ctx := context.Background()
	for _, q := range toReplica {
		mc.replicas[0].ExpectQuery(q).WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(1))
	}
	for _, q := range toPrimary {
		mc.primary.ExpectQuery(q).WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(1))
	}
	for _, q := range append(append([]string(nil), toReplica...), toPrimary...) {
		// A fresh *sql.Conn per statement, so a pin from an earlier write
		// cannot hide a misroute.
		c, err := mc.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := c.QueryContext(ctx, q)
		if err != nil {
			t.Errorf("%q: %v", q, err)
		} else {
			rows.Close()
		}
		c.Close()
	}
}

// On one *sql.Conn, a write pins the lease: the read after it runs on the
// primary; once the *sql.Conn is returned, reads spread again.
func TestLeasePinsAfterWriteUnit(t *testing.T) {
	mc := newMockCluster(t, 1, "")
	ctx := context.Background()
	mc.replicas[0].ExpectQuery("SELECT 1").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(1))
	mc.primary.ExpectExec("INSERT INTO t VALUES (1)").WillReturnResult(sqlmock.NewResult(1, 1))
	mc.primary.ExpectQuery("SELECT 2").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(2))
	mc.replicas[0].ExpectQuery("SELECT 3").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(3))

	c, err := mc.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRowContext(ctx, "SELECT 2").Scan(&n); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := mc.db.QueryRow("SELECT 3").Scan(&n); err != nil {
		t.Fatal(err)
	}
}

// TxOptions{ReadOnly: true} runs on one replica connection as a read-only
// transaction; with readonly_tx=primary it runs on the primary.
func TestReadOnlyTransactionUnit(t *testing.T) {
	for _, tc := range []struct {
		extra     string
		onReplica bool
	}{{"", true}, {"readonly_tx=primary", false}} {
		t.Run(tc.extra, func(t *testing.T) {
			mc := newMockCluster(t, 1, tc.extra)
			m := mc.primary
			if tc.onReplica {
				m = mc.replicas[0]
			}
			m.ExpectBegin()
			m.ExpectQuery("SELECT 1").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(1))
			m.ExpectQuery("SELECT 2").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(2))
			m.ExpectCommit()
			tx, err := mc.db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			var n int
			for _, q := range []string{"SELECT 1", "SELECT 2"} {
				if err := tx.QueryRow(q).Scan(&n); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// db.Prepare classifies once and runs each execution where routing sends
// it: prepared reads on the replica, prepared writes on the primary.
func TestPreparedStatementsRouteUnit(t *testing.T) {
	mc := newMockCluster(t, 1, "")
	mc.replicas[0].ExpectQuery("SELECT v FROM t WHERE id = ?").WithArgs(1).
		WillReturnRows(sqlmock.NewRows([]string{"v"}).AddRow("a"))
	mc.replicas[0].ExpectQuery("SELECT v FROM t WHERE id = ?").WithArgs(2).
		WillReturnRows(sqlmock.NewRows([]string{"v"}).AddRow("b"))
	mc.primary.ExpectExec("UPDATE t SET v = ? WHERE id = ?").WithArgs("c", 1).
		WillReturnResult(sqlmock.NewResult(0, 1))
	sel, err := mc.db.Prepare("SELECT v FROM t WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Close()
	upd, err := mc.db.Prepare("UPDATE t SET v = ? WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer upd.Close()
	for i, want := range []string{"a", "b"} {
		var v string
		if err := sel.QueryRow(i + 1).Scan(&v); err != nil || v != want {
			t.Fatalf("prepared read %d: %q, %v", i+1, v, err)
		}
	}
	if _, err := upd.Exec("c", 1); err != nil {
		t.Fatal(err)
	}
}
