package rwpool_test

import (
	"database/sql"
	"database/sql/driver"
	"reflect"
	"strings"
	"testing"
)

// A driver without DriverContext or any optional interface still routes,
// runs prepared and direct statements, converts values with the default
// converter, and reports column types as database/sql would without rwpool.
func TestLegacyDriverWithoutOptionalInterfaces(t *testing.T) {
	legacy.Fresh("legacy-p")
	legacy.Fresh("legacy-r")
	db, err := sql.Open("rwpool", "driver=rwpool-test-legacy;primary=legacy-p;replica=legacy-r name=r")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	var node string
	if err := db.QueryRow("SELECT node").Scan(&node); err != nil || node != "legacy-r" {
		t.Fatalf("read answered by %q (%v), want legacy-r", node, err)
	}
	type myInt int32 // converted by the default converter to int64
	if _, err := db.Exec("INSERT INTO t VALUES (?)", myInt(5)); err != nil {
		t.Fatal(err)
	}
	if got := legacy.Node("legacy-p").Statements(); len(got) != 1 || got[0] != "INSERT INTO t VALUES (?)" {
		t.Fatalf("primary ran %q", got)
	}
	if arg := legacy.Node("legacy-p").Args()[0]; arg != int64(5) {
		t.Fatalf("argument reached the driver as %#v, want int64(5) from the default converter", arg)
	}

	st, err := db.Prepare("SELECT node FROM x WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.QueryRow(1).Scan(&node); err != nil || node != "legacy-r" {
		t.Fatalf("prepared read answered by %q (%v)", node, err)
	}

	rows, err := db.Query("SELECT node")
	if err != nil {
		t.Fatal(err)
	}
	cts, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	ct := cts[0]
	_, hasLen := ct.Length()
	_, nullOK := ct.Nullable()
	_, _, psOK := ct.DecimalSize()
	if ct.ScanType() != reflect.TypeFor[any]() || ct.DatabaseTypeName() != "" || hasLen || nullOK || psOK {
		t.Fatalf("column type of a driver without column-type interfaces: %v %q %v %v %v",
			ct.ScanType(), ct.DatabaseTypeName(), hasLen, nullOK, psOK)
	}
	for rows.Next() {
	}
	if rows.NextResultSet() || rows.Err() != nil {
		t.Fatalf("NextResultSet on a driver without it: %v", rows.Err())
	}
	rows.Close()

	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow("SELECT node").Scan(&node); err != nil || node != "legacy-p" {
		t.Fatalf("read in a transaction answered by %q (%v)", node, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.BeginTx(t.Context(), &sql.TxOptions{Isolation: sql.LevelSerializable}); err == nil {
		t.Fatal("a non-default isolation level on a driver without ConnBeginTx must fail")
	}
}

func TestBadDSNErrorsNameTheProblem(t *testing.T) {
	const pw = "S3ntinelPW"
	cases := []struct{ dsn, want string }{
		{"primary='host=a password=" + pw + "'", "driver"},
		{"driver=nosuchdriver;primary='host=a password=" + pw + "'", `"nosuchdriver" is not registered`},
		{"driver=rwpool-test-legacy;primary='x';pool_sise=3", `did you mean "pool_size"`},
		{"driver=rwpool-test-legacy;replica='host=a password=" + pw + "'", "primary"},
		{"driver=rwpool-test-legacy;primary='a';replica='b' weight=-1", "weight"},
		{"driver=rwpool-test-legacy;primary='a';acquire_timeout=10", "acquire_timeout"},
		{"driver=rwpool-test-legacy;primary='host=a password=" + pw, "quote"},
		{"driver=rwpool-test-legacy;primary=''", "primary"},
	}
	for _, c := range cases {
		db, err := sql.Open("rwpool", c.dsn)
		if err == nil {
			db.Close()
			t.Errorf("sql.Open(%q) succeeded", c.dsn)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("sql.Open(%q): %v; want it to mention %q", c.dsn, err, c.want)
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("error leaks the password: %v", err)
		}
	}
}

// A node whose driver rejects the connection fails the statement with an
// error naming the node, never its DSN, and database/sql gets no
// driver.ErrBadConn (nothing it could retry would help).
func TestDialErrorNamesNodeNotDSN(t *testing.T) {
	const node = "fail password=S3ntinelPW"
	legacy.Node(node).SetDown(true)
	db, err := sql.Open("rwpool", "driver=rwpool-test-legacy;primary='"+node+"'")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec("INSERT INTO t VALUES (1)")
	if err == nil || !strings.Contains(err.Error(), "primary") || strings.Contains(err.Error(), "S3ntinelPW") {
		t.Fatalf("dial error: %v", err)
	}
	if err == driver.ErrBadConn {
		t.Fatal("ErrBadConn returned for a dial failure")
	}
}
