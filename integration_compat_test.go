package rwpool_test

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/lib/pq"

	"github.com/rwpool/rwpool"
)

// The database/sql surface that ORMs and drivers use, run through the bare
// driver and through rwpool on the real clusters: each case reports its
// outcome as text, and the two must be equal. A case that depends on a
// table reads with WithPrimary (a no-op for the bare driver), so that
// replication delay plays no part.

// compatCase is one entry of the table. run returns the outcome; an error
// is part of the outcome (errText), not a test failure.
type compatCase struct {
	name string
	only func(cl *cluster) bool // nil: every cluster
	run  func(t *testing.T, v *compatVariant) string
}

// compatVariant is one way of opening the cluster: bare or rwpool.
type compatVariant struct {
	name  string
	cl    *cluster
	db    *sql.DB
	raw   func(ctx context.Context, c *sql.Conn, f func(any) error) error
	table func(string) string // a table name of its own for the variant
}

// freshTable (re)creates the variant's table name with the given column
// definitions and returns its full name.
func (v *compatVariant) freshTable(t *testing.T, name, columns string) string {
	t.Helper()
	tb := v.table(name)
	mustExec(t, v.db, "DROP TABLE IF EXISTS "+tb)
	mustExec(t, v.db, "CREATE TABLE "+tb+" "+columns)
	return tb
}

func (v *compatVariant) ctx() context.Context { return rwpool.WithPrimary(context.Background()) }

// ph returns the i-th placeholder of the cluster's dialect.
func (v *compatVariant) ph(i int) string {
	if v.cl.IsPostgres() {
		return fmt.Sprintf("$%d", i)
	}
	return "?"
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return "error: " + err.Error()
}

// upper is a driver.Valuer and sql.Scanner: it stores upper case and reads
// back with a marker, so the test sees both conversions ran.
type upper string

func (u upper) Value() (driver.Value, error) { return strings.ToUpper(string(u)), nil }

func (u *upper) Scan(src any) error {
	switch s := src.(type) {
	case string:
		*u = upper("scanned:" + s)
	case []byte:
		*u = upper("scanned:" + string(s))
	default:
		return fmt.Errorf("upper: cannot scan %T", src)
	}
	return nil
}

var compatCases = []compatCase{
	{name: "prepared statement outside a transaction", run: func(t *testing.T, v *compatVariant) string {
		st, err := v.db.PrepareContext(v.ctx(), "SELECT "+v.ph(1)+" + 1")
		if err != nil {
			return errText(err)
		}
		defer st.Close()
		var out []int
		for i := range 3 {
			var n int
			if err := st.QueryRowContext(v.ctx(), i*10).Scan(&n); err != nil {
				return errText(err)
			}
			out = append(out, n)
		}
		return fmt.Sprint(out)
	}},
	{name: "prepared statement in a transaction", run: func(t *testing.T, v *compatVariant) string {
		tb := v.freshTable(t, "prep_tx", "(id INT PRIMARY KEY, v VARCHAR(20))")
		tx, err := v.db.BeginTx(v.ctx(), nil)
		if err != nil {
			return errText(err)
		}
		defer tx.Rollback()
		ins, err := tx.Prepare("INSERT INTO " + tb + " (id, v) VALUES (" + v.ph(1) + ", " + v.ph(2) + ")")
		if err != nil {
			return errText(err)
		}
		for i := range 5 {
			if _, err := ins.Exec(i, fmt.Sprint("v", i)); err != nil {
				return errText(err)
			}
		}
		sel, err := tx.Prepare("SELECT count(*), max(v) FROM " + tb)
		if err != nil {
			return errText(err)
		}
		var n int
		var mx string
		if err := sel.QueryRow().Scan(&n, &mx); err != nil {
			return errText(err)
		}
		return fmt.Sprintf("%d %s; commit: %s", n, mx, errText(tx.Commit()))
	}},
	{name: "COPY FROM STDIN in a transaction (pq.CopyIn)", only: isLibPQ, run: func(t *testing.T, v *compatVariant) string {
		tb := v.freshTable(t, "copy_tx", "(id INT PRIMARY KEY, v TEXT)")
		tx, err := v.db.BeginTx(v.ctx(), nil)
		if err != nil {
			return errText(err)
		}
		defer tx.Rollback()
		if s := copyRows(tx.Prepare, tb, 1000); s != "ok" {
			return s
		}
		if err := tx.Commit(); err != nil {
			return "commit: " + errText(err)
		}
		return countRows(v, tb)
	}},
	{name: "COPY FROM STDIN on a *sql.Conn in a BEGIN of its own (pq.CopyInSchema)", only: isLibPQ, run: func(t *testing.T, v *compatVariant) string {
		tb := v.freshTable(t, "copy_conn", "(id INT PRIMARY KEY, v TEXT)")
		c, err := v.db.Conn(v.ctx())
		if err != nil {
			return errText(err)
		}
		defer c.Close()
		prep := func(q string) (*sql.Stmt, error) {
			return c.PrepareContext(v.ctx(), strings.Replace(q, pq.CopyIn(tb, "id", "v"), pq.CopyInSchema("public", tb, "id", "v"), 1))
		}
		// Without a transaction lib/pq refuses COPY, bare or not.
		noTx := copyRows(prep, tb, 1)
		if _, err := c.ExecContext(v.ctx(), "BEGIN"); err != nil {
			return errText(err)
		}
		if s := copyRows(prep, tb, 300); s != "ok" {
			return s
		}
		if _, err := c.ExecContext(v.ctx(), "COMMIT"); err != nil {
			return errText(err)
		}
		// The *sql.Conn goes on working after the COPY.
		var n int
		if err := c.QueryRowContext(v.ctx(), "SELECT count(*) FROM "+tb).Scan(&n); err != nil {
			return errText(err)
		}
		return fmt.Sprintf("without a transaction: %s; %d rows on the conn; %s", noTx, n, countRows(v, tb))
	}},
	{name: "the real connection (Raw)", run: func(t *testing.T, v *compatVariant) string {
		c, err := v.db.Conn(v.ctx())
		if err != nil {
			return errText(err)
		}
		defer c.Close()
		var typ string
		err = v.raw(v.ctx(), c, func(dc any) error {
			typ = fmt.Sprintf("%T", dc)
			return nil
		})
		var port string
		perr := c.QueryRowContext(v.ctx(), v.cl.PortQuery).Scan(&port)
		return fmt.Sprintf("%s %s; later statement: %s, on %s", typ, errText(err), errText(perr), nodeOfPort(v.cl, port))
	}},
	{name: "pgx CopyFrom through the real connection", only: isPgx, run: func(t *testing.T, v *compatVariant) string {
		tb := v.freshTable(t, "copyfrom", "(id INT PRIMARY KEY, v TEXT)")
		c, err := v.db.Conn(v.ctx())
		if err != nil {
			return errText(err)
		}
		defer c.Close()
		var copied int64
		err = v.raw(v.ctx(), c, func(dc any) error {
			rows := make([][]any, 1000)
			for i := range rows {
				rows[i] = []any{int32(i), fmt.Sprint("v", i)}
			}
			copied, err = dc.(*stdlib.Conn).Conn().CopyFrom(v.ctx(), pgx.Identifier{tb}, []string{"id", "v"}, pgx.CopyFromRows(rows))
			return err
		})
		return fmt.Sprintf("copied %d: %s; %s", copied, errText(err), countRows(v, tb))
	}},
	{name: "several result sets (NextResultSet)", run: func(t *testing.T, v *compatVariant) string {
		rows, err := v.db.QueryContext(v.ctx(), "SELECT 1 AS a; SELECT 2 AS b, 3 AS c")
		if err != nil {
			return errText(err)
		}
		defer rows.Close()
		var out []string
		for {
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					return errText(err)
				}
				out = append(out, fmt.Sprintf("%v=%s", cols, fmt.Sprint(vals...)))
			}
			if !rows.NextResultSet() {
				break
			}
		}
		return strings.Join(out, " | ") + "; " + errText(rows.Err())
	}},
	{name: "column types", run: func(t *testing.T, v *compatVariant) string {
		tb := v.freshTable(t, "coltypes", "(i INT NOT NULL, s VARCHAR(17), d DECIMAL(9,3), b BOOLEAN, ts TIMESTAMP NULL)")
		rows, err := v.db.QueryContext(v.ctx(), "SELECT i, s, d, b, ts FROM "+tb)
		if err != nil {
			return errText(err)
		}
		defer rows.Close()
		cts, err := rows.ColumnTypes()
		if err != nil {
			return errText(err)
		}
		var out []string
		for _, ct := range cts {
			l, lok := ct.Length()
			p, s, dok := ct.DecimalSize()
			n, nok := ct.Nullable()
			out = append(out, fmt.Sprintf("%s:%s len=%d/%v dec=%d,%d/%v null=%v/%v scan=%v",
				ct.Name(), ct.DatabaseTypeName(), l, lok, p, s, dok, n, nok, ct.ScanType()))
		}
		return strings.Join(out, "; ")
	}},
	{name: "named arguments", run: func(t *testing.T, v *compatVariant) string {
		q := "SELECT " + v.ph(1)
		if isPgx(v.cl) {
			q = "SELECT @x::int" // pgx rewrites named arguments
		}
		var n int
		err := v.db.QueryRowContext(v.ctx(), q, sql.Named("x", 7)).Scan(&n)
		return fmt.Sprintf("%d %s", n, errText(err))
	}},
	{name: "driver.Valuer and sql.Scanner", run: func(t *testing.T, v *compatVariant) string {
		var got upper
		q := "SELECT " + v.ph(1)
		if v.cl.IsPostgres() {
			q += "::text"
		}
		err := v.db.QueryRowContext(v.ctx(), q, upper("abc")).Scan(&got)
		return fmt.Sprintf("%s %s", got, errText(err))
	}},
	{name: "LastInsertId and RowsAffected", run: func(t *testing.T, v *compatVariant) string {
		tb := v.table("ids")
		mustExec(t, v.db, "DROP TABLE IF EXISTS "+tb)
		if v.cl.IsPostgres() {
			mustExec(t, v.db, "CREATE TABLE "+tb+" (id SERIAL PRIMARY KEY, v INT)")
		} else {
			mustExec(t, v.db, "CREATE TABLE "+tb+" (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
		}
		var out []string
		for range 2 {
			res, err := v.db.ExecContext(v.ctx(), "INSERT INTO "+tb+" (v) VALUES (1)")
			if err != nil {
				return errText(err)
			}
			id, ierr := res.LastInsertId()
			out = append(out, fmt.Sprintf("id=%d %s", id, errText(ierr)))
		}
		res, err := v.db.ExecContext(v.ctx(), "UPDATE "+tb+" SET v = 2")
		if err != nil {
			return errText(err)
		}
		n, nerr := res.RowsAffected()
		return fmt.Sprintf("%s; updated %d %s", strings.Join(out, ", "), n, errText(nerr))
	}},
	{name: "context cancelled mid-rows", run: func(t *testing.T, v *compatVariant) string {
		q := "SELECT seq FROM seq_1_to_100000"
		if v.cl.IsPostgres() {
			q = "SELECT generate_series(1, 100000)"
		}
		ctx, cancel := context.WithCancel(v.ctx())
		defer cancel()
		rows, err := v.db.QueryContext(ctx, q)
		if err != nil {
			return errText(err)
		}
		read := 0
		for rows.Next() {
			if read++; read == 10 {
				cancel()
			}
		}
		rerr := rows.Err()
		rows.Close()
		var one int
		after := v.db.QueryRowContext(v.ctx(), "SELECT 1").Scan(&one)
		return fmt.Sprintf("stopped early: %v, canceled: %v; next statement: %s",
			read < 100000, errors.Is(rerr, context.Canceled), errText(after))
	}},
	{name: "diagnostics of the previous statement on a *sql.Conn", only: isMySQL, run: func(t *testing.T, v *compatVariant) string {
		tb := v.freshTable(t, "diag", "(id INT PRIMARY KEY)")
		mustExec(t, v.db, "INSERT INTO "+tb+" VALUES (1), (2), (3)")
		waitRows(t, v, tb, 3)
		ctx := context.Background() // no WithPrimary: reads go to replicas
		c, err := v.db.Conn(ctx)
		if err != nil {
			return errText(err)
		}
		defer c.Close()
		count := func(q string) string {
			var n int
			if err := c.QueryRowContext(ctx, q).Scan(&n); err != nil {
				return errText(err)
			}
			return fmt.Sprint(n)
		}
		warnings := func() string {
			rows, err := c.QueryContext(ctx, "SHOW WARNINGS")
			if err != nil {
				return errText(err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var level, msg string
				var code int
				if err := rows.Scan(&level, &code, &msg); err != nil {
					return errText(err)
				}
				out = append(out, fmt.Sprintf("%s %d", level, code))
			}
			return fmt.Sprint(out)
		}
		var out []string
		// A read with a warning (on a replica through rwpool), then the
		// warnings: they must come from the same connection.
		var x sql.NullString
		err = c.QueryRowContext(ctx, "SELECT CAST('12abc' AS INTEGER) FROM "+tb+" LIMIT 1").Scan(&x)
		out = append(out, "read: "+errText(err), "warnings: "+warnings(), "count: "+count("SHOW COUNT(*) WARNINGS"))
		// A write with a warning pins the primary; its warnings follow it.
		_, err = c.ExecContext(ctx, "INSERT IGNORE INTO "+tb+" VALUES (1)")
		out = append(out, "insert ignore: "+errText(err), "warnings: "+warnings())
		_, err = c.ExecContext(ctx, "UPDATE "+tb+" SET id = id + 10 WHERE id > 1")
		out = append(out, "update: "+errText(err), "row_count: "+count("SELECT ROW_COUNT()"))
		return strings.Join(out, "; ")
	}},
	{name: "LOAD DATA LOCAL INFILE from a registered reader", only: isMySQL, run: func(t *testing.T, v *compatVariant) string {
		tb := v.freshTable(t, "load", "(id INT PRIMARY KEY, v VARCHAR(20))")
		name := "rwpool-compat-" + v.name
		mysql.RegisterReaderHandler(name, func() io.Reader {
			var b bytes.Buffer
			for i := range 200 {
				fmt.Fprintf(&b, "%d\tv%d\n", i, i)
			}
			return &b
		})
		defer mysql.DeregisterReaderHandler(name)
		res, err := v.db.ExecContext(v.ctx(), "LOAD DATA LOCAL INFILE 'Reader::"+name+"' INTO TABLE "+tb)
		if err != nil {
			return errText(err)
		}
		n, _ := res.RowsAffected()
		return fmt.Sprintf("loaded %d; %s", n, countRows(v, tb))
	}},
}

func isLibPQ(cl *cluster) bool { return cl.Driver == "postgres" }
func isPgx(cl *cluster) bool   { return cl.Driver == "pgx" }
func isMySQL(cl *cluster) bool { return cl.Driver == "mysql" }

// copyRows loads n rows into tb with lib/pq's COPY FROM STDIN on a
// statement from prepare, as lib/pq documents it.
func copyRows(prepare func(string) (*sql.Stmt, error), tb string, n int) string {
	st, err := prepare(pq.CopyIn(tb, "id", "v"))
	if err != nil {
		return "prepare: " + errText(err)
	}
	for i := range n {
		if _, err := st.Exec(i, fmt.Sprint("v", i)); err != nil {
			return fmt.Sprintf("row %d: %s", i, errText(err))
		}
	}
	if _, err := st.Exec(); err != nil {
		return "flush: " + errText(err)
	}
	if err := st.Close(); err != nil {
		return "close: " + errText(err)
	}
	return "ok"
}

// waitRows waits until every replica has n rows in tb (a no-op test for
// the bare driver, which reads the primary).
func waitRows(t *testing.T, v *compatVariant, tb string, n int) {
	t.Helper()
	if v.name == "rwpool" {
		v.cl.waitReplicas(t, "SELECT count(*) FROM "+tb, fmt.Sprint(n))
	}
}

func countRows(v *compatVariant, tb string) string {
	var n int
	if err := v.db.QueryRowContext(v.ctx(), "SELECT count(*) FROM "+tb).Scan(&n); err != nil {
		return "count: " + errText(err)
	}
	return fmt.Sprintf("%d rows", n)
}

// nodeOfPort names the node of cl listening on port, the same for both
// variants.
func nodeOfPort(cl *cluster, port string) string {
	if port == cl.PrimaryPort() {
		return "primary"
	}
	if cl.IsReplicaPort(port) {
		return "a replica"
	}
	return "port " + port
}

func TestIntegrationCompatibility(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		// Several result sets need it on MySQL, for both variants alike.
		b := *cl.Backend
		if cl.Name == "mariadb" {
			b.Params = "multiStatements=true"
		}
		mc := cluster{&b}
		bare, err := sql.Open(mc.Driver, mc.NodeDSN(mc.Primary))
		if err != nil {
			t.Fatal(err)
		}
		defer bare.Close()
		variants := []*compatVariant{
			{name: "bare", cl: &mc, db: bare, raw: func(_ context.Context, c *sql.Conn, f func(any) error) error { return c.Raw(f) }},
			{name: "rwpool", cl: &mc, db: mc.open(t, ""), raw: rwpool.Raw},
		}
		for _, v := range variants {
			v.table = func(s string) string { return "compat_" + v.name + "_" + s }
		}
		for _, tc := range compatCases {
			if tc.only != nil && !tc.only(cl) {
				continue
			}
			t.Run(tc.name, func(t *testing.T) {
				want := tc.run(t, variants[0])
				got := tc.run(t, variants[1])
				// Table names differ by variant only.
				got = strings.ReplaceAll(got, "compat_rwpool_", "compat_bare_")
				if got != want {
					t.Errorf("through rwpool:\n  %s\nbare driver:\n  %s", got, want)
				}
				t.Logf("%s", want)
			})
		}
	})
}
