package driverinfo

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"
)

func TestHonoursContext(t *testing.T) {
	for name, want := range map[string]bool{
		DriverMySQL: true, DriverPgx: true, DriverPgxV5: true,
		DriverLibPQ: false, "sqlite3": false, "": false, "MYSQL": false,
	} {
		if got := HonoursContext(name); got != want {
			t.Errorf("HonoursContext(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestTiesContextCheaply(t *testing.T) {
	for name, want := range map[string]bool{
		DriverPgx: true, DriverPgxV5: true,
		DriverMySQL: false, DriverLibPQ: false, "sqlite3": false, "": false,
	} {
		if got := TiesContextCheaply(name); got != want {
			t.Errorf("TiesContextCheaply(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestSafeBadConn(t *testing.T) {
	for name, want := range map[string]bool{
		DriverMySQL: true, DriverPgx: false, DriverPgxV5: false,
		DriverLibPQ: false, "sqlite3": false, "": false,
	} {
		if got := SafeBadConn(name); got != want {
			t.Errorf("SafeBadConn(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestFamilyOf(t *testing.T) {
	for name, want := range map[string]Family{
		"postgres": FamilyPostgres, "postgresql": FamilyPostgres, "pgx": FamilyPostgres,
		"pgx/v5": FamilyPostgres, "cloudsqlpostgres": FamilyPostgres, "nrpostgres": FamilyPostgres,
		"PQ": FamilyPostgres, "cockroach": FamilyPostgres, "mysql": FamilyMySQL,
		"nrmysql": FamilyMySQL, "MariaDB": FamilyMySQL, "sqlite3": FamilyOther,
		"pqx": FamilyOther, "": FamilyOther, "sqlserver": FamilyOther,
	} {
		if got := FamilyOf(name); got != want {
			t.Errorf("FamilyOf(%q) = %v, want %v", name, got, want)
		}
	}
}

type sqlStateErr string

func (e sqlStateErr) Error() string    { return "pg: " + string(e) }
func (e sqlStateErr) SQLState() string { return string(e) }

// MySQLError has the shape of go-sql-driver/mysql's server error.
type MySQLError struct {
	Number  uint16
	Message string
}

func (e *MySQLError) Error() string { return e.Message }

// otherMySQLError has the name but not the shape.
type otherMySQLError struct{ Number int }

func (e *otherMySQLError) Error() string { return "x" }

func TestConnFailure(t *testing.T) {
	invalid := errors.New(mysqlInvalidConn)
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("boom"), false},
		{driver.ErrBadConn, false}, // not a driver's own code: health handles it
		{context.Canceled, false},
		{sqlStateErr("08006"), true},
		{sqlStateErr("08P01"), true},
		{fmt.Errorf("wrapped: %w", sqlStateErr("57P01")), true},
		{sqlStateErr("57P02"), true},
		{sqlStateErr("57P03"), true},
		{sqlStateErr("57014"), false}, // query_canceled
		{sqlStateErr("25006"), false}, // read_only_sql_transaction
		{&MySQLError{Number: MySQLServerShutdown}, true},
		{&MySQLError{Number: MySQLConnectionKilled}, true},
		{fmt.Errorf("x: %w", &MySQLError{Number: MySQLServerGone}), true},
		{&MySQLError{Number: MySQLServerLost}, true},
		{&MySQLError{Number: 1290}, false}, // --read-only
		{&MySQLError{Number: 1213}, false}, // deadlock
		{&otherMySQLError{Number: 2006}, false},
		{invalid, true},
		{fmt.Errorf("rwpool: node replica1: %w", invalid), true},
		{errors.Join(errors.New("dial"), fmt.Errorf("x: %w", invalid)), true},
		{errors.New("an invalid connection string"), false},
	} {
		if got := ConnFailure(c.err); got != c.want {
			t.Errorf("ConnFailure(%#v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestReadOnly(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{sqlStateErr("25006"), true},
		{fmt.Errorf("wrapped: %w", sqlStateErr("25006")), true},
		{sqlStateErr("25P02"), false},
		{&MySQLError{Number: 1290}, true},
		{&MySQLError{Number: 1792}, true},
		{&MySQLError{Number: 1062}, false},
		{errors.New("read-only"), false},
		{nil, false},
	} {
		if got := ReadOnly(c.err); got != c.want {
			t.Errorf("ReadOnly(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestPoolerNeverSent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("rwpool: node primary: %w", poolerErr{"08P01", "FATAL: server login has been failing, try again later (server_login_retry) (SQLSTATE 08P01)"}), true},
		{poolerErr{"08P01", "FATAL: query_wait_timeout (SQLSTATE 08P01)"}, true},
		{poolerErr{"08P01", "FATAL: no more connections allowed (max_client_conn) (SQLSTATE 08P01)"}, true},
		{poolerErr{"08P01", "FATAL: server conn crashed? (SQLSTATE 08P01)"}, false}, // the server had the statement
		{poolerErr{"08P01", "FATAL: query_timeout (SQLSTATE 08P01)"}, false},        // it ran too long: it was sent
		{poolerErr{"08006", "FATAL: query_wait_timeout"}, false},                    // not PgBouncer's code
		{errors.New("query_wait_timeout"), false},
		{nil, false},
	} {
		if got := PoolerNeverSent(tc.err); got != tc.want {
			t.Errorf("PoolerNeverSent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// poolerErr is a driver error with a SQLSTATE and a message, as pgx's
// *pgconn.PgError.
type poolerErr struct{ code, msg string }

func (e poolerErr) Error() string    { return e.msg }
func (e poolerErr) SQLState() string { return e.code }
