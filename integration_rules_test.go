package rwpool_test

import (
	"context"
	"strings"
	"testing"
)

// Each classifier rule on the real clusters: every statement returns the
// port of the server that ran it, which must be the primary's or a
// replica's as the rule says. Statements are run on a fresh *sql.Conn each,
// so a pin left by an earlier one cannot hide a misroute.
func TestIntegrationRoutingRules(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "")
		mustExec(t, db, "DROP TABLE IF EXISTS rw_one")
		mustExec(t, db, "CREATE TABLE rw_one (id INT PRIMARY KEY)")
		mustExec(t, db, "INSERT INTO rw_one VALUES (1)")
		cl.waitReplicas(t, "SELECT count(*) FROM rw_one", "1") // reads below expect the row on every replica
		// {P} stands for the dialect's port expression.
		var toPrimary, toReplica []string
		switch {
		case cl.IsPostgres():
			mustExec(t, db, "DROP SEQUENCE IF EXISTS rw_seq")
			mustExec(t, db, "CREATE SEQUENCE rw_seq")
			toPrimary = []string{
				"SELECT {P} FROM rw_one FOR UPDATE",
				"SELECT {P} FROM rw_one FOR NO KEY UPDATE",
				"SELECT {P} FROM rw_one FOR SHARE",
				"SELECT {P} FROM rw_one FOR KEY SHARE",
				"SELECT {P} FROM rw_one FOR UPDATE SKIP LOCKED",
				"SELECT {P} FROM (SELECT id FROM rw_one FOR UPDATE) s",
				"SELECT {P}, nextval('rw_seq')",
				"SELECT {P}, setval('rw_seq', 10)",
				"SELECT {P}, pg_try_advisory_lock(42), pg_advisory_unlock(42)",
				"SELECT {P}, pg_catalog.nextval('rw_seq')",
				"WITH d AS (DELETE FROM rw_one WHERE id < 0 RETURNING id) SELECT {P}",
				"WITH u AS (UPDATE rw_one SET id = id WHERE id < 0 RETURNING id) SELECT {P} FROM (SELECT 1) x",
				"/*rwpool:primary*/ SELECT {P}",
				"/* rwpool:primary */ -- and another comment\n SELECT {P}",
				"UPDATE rw_one SET id = id RETURNING {P}",
				"INSERT INTO rw_one VALUES (2) ON CONFLICT (id) DO NOTHING RETURNING {P}",
			}
			toReplica = []string{
				"SELECT {P}",
				"select {P}",
				"  \n-- comment\n/* block /* nested */ */ SELECT {P}",
				"((SELECT {P}))",
				"WITH t AS (SELECT 1) SELECT {P} FROM t",
				"VALUES ({P})",
				"SELECT {P}, 'FOR UPDATE', 'nextval(' FROM rw_one",
				"SELECT {P}, $$ DELETE FROM rw_one $$",
				"SELECT {P}, \"id\" FROM rw_one AS \"for update\"",
				"SELECT {P}, @ -5",
				"/*rwpool:replica*/ SELECT {P}",
				"SELECT {P} WHERE 1 = 1; -- trailing comment",
			}
		case cl.Name == "mariadb":
			toPrimary = []string{
				"SELECT {P} FROM rw_one FOR UPDATE",
				"SELECT {P} FROM rw_one LOCK IN SHARE MODE",
				"SELECT {P}, LAST_INSERT_ID()",
				"SELECT {P}, GET_LOCK('rw_l', 0), RELEASE_LOCK('rw_l')",
				"SELECT {P}, @rw_var",
				"SELECT {P}, @`rw var`",
				"/*rwpool:primary*/ SELECT {P}",
				"WITH t AS (SELECT 1) SELECT {P} FROM t FOR UPDATE",
			}
			toReplica = []string{
				"SELECT {P}",
				"# hash comment\nSELECT {P}",
				"/* c */ (SELECT {P})",
				"WITH t AS (SELECT 1) SELECT {P} FROM t",
				"SELECT {P}, @@version, @@session.sql_mode",
				"SELECT {P}, '@x', 'FOR UPDATE', \"LAST_INSERT_ID()\"",
				"SELECT {P}, `for` FROM (SELECT 1 AS `for`) s",
				"SELECT {P} FROM rw_one WHERE id = 1 -- FOR UPDATE",
				"/*rwpool:replica*/ SELECT {P}",
				"VALUES ({P})",
				// Diagnostics of the previous statement run where it ran;
				// on a fresh *sql.Conn there is none, so they read like
				// any read (integration_compat_test.go has the rest).
				"SELECT {P}, FOUND_ROWS()",
				"SELECT {P}, ROW_COUNT()",
			}
		}
		portExpr := strings.TrimPrefix(cl.PortQuery, "SELECT ")
		ctx := context.Background()
		run := func(q string) string {
			q = strings.ReplaceAll(q, "{P}", portExpr)
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var port string
			rows, err := c.QueryContext(ctx, q)
			if err != nil {
				t.Fatalf("%q: %v", q, err)
			}
			defer rows.Close()
			if !rows.Next() {
				t.Fatalf("%q: no row (%v)", q, rows.Err())
			}
			cols, _ := rows.Columns()
			dest := make([]any, len(cols))
			dest[0] = &port
			for i := 1; i < len(dest); i++ {
				dest[i] = new(any)
			}
			if err := rows.Scan(dest...); err != nil {
				t.Fatalf("%q: %v", q, err)
			}
			return port
		}
		for _, q := range toPrimary {
			if p := run(q); p != portOf(cl.Primary) {
				t.Errorf("%q ran on port %s, want the primary %s", q, p, cl.Primary)
			}
		}
		for _, q := range toReplica {
			if p := run(q); !cl.IsReplicaPort(p) {
				t.Errorf("%q ran on port %s, want a replica %v", q, p, cl.Replicas)
			}
		}
	})
}

// Writes a replica would refuse, and statements that only make sense on
// the primary, run without error through rwpool.
func TestIntegrationWritesNeverReachReplicas(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "")
		mustExec(t, db, "DROP TABLE IF EXISTS rw_w")
		mustExec(t, db, "DROP TABLE IF EXISTS rw_into")
		mustExec(t, db, "CREATE TABLE rw_w (id INT PRIMARY KEY)")
		var stmts []string
		switch {
		case cl.IsPostgres():
			stmts = []string{
				"SELECT 1 AS id INTO rw_into",
				"WITH i AS (INSERT INTO rw_w VALUES (1) RETURNING id) SELECT id FROM i",
				"SELECT 1; INSERT INTO rw_w VALUES (2)",
				"EXPLAIN ANALYZE INSERT INTO rw_w VALUES (3)",
				"/* INSERT */ DELETE FROM rw_w WHERE id = 3",
			}
		case cl.Name == "mariadb":
			stmts = []string{
				"CREATE TABLE rw_into AS SELECT 1 AS id",
				"INSERT INTO rw_w VALUES (1)",
				"REPLACE INTO rw_w VALUES (2)",
				"SELECT id INTO @rw_x FROM rw_w LIMIT 1",
				"DELETE FROM rw_w WHERE id = 2",
			}
		}
		for _, q := range stmts {
			if _, err := db.Exec(q); err != nil {
				t.Errorf("%q: %v", q, err)
			}
		}
	})
}
