package driverinfo

import (
	"errors"
	"reflect"
	"strings"
)

// PostgreSQL SQLSTATE codes that mean the connection or the server is gone
// (PostgreSQL documentation, Appendix A, "PostgreSQL Error Codes").
const (
	// SQLStateConnectionException is the class (the first two characters)
	// of every connection exception: 08000, 08003 connection_does_not_exist,
	// 08006 connection_failure, 08001, 08004, ...
	SQLStateConnectionException = "08"
	// SQLStateAdminShutdown is admin_shutdown: the server is shutting down
	// or the session was terminated by an administrator.
	SQLStateAdminShutdown = "57P01"
	// SQLStateCrashShutdown is crash_shutdown: another server process
	// crashed and the server is restarting.
	SQLStateCrashShutdown = "57P02"
	// SQLStateCannotConnectNow is cannot_connect_now: the server is starting
	// up or in a state that accepts no connections.
	SQLStateCannotConnectNow = "57P03"
)

// MySQL and MariaDB error numbers that mean the connection or the server
// is gone (MySQL's server and client error references, MariaDB's error
// codes).
const (
	// MySQLServerShutdown is ER_SERVER_SHUTDOWN: "Server shutdown in
	// progress".
	MySQLServerShutdown = 1053
	// MySQLConnectionKilled is MariaDB's ER_CONNECTION_KILLED: "Connection
	// was killed".
	MySQLConnectionKilled = 1927
	// MySQLServerGone is CR_SERVER_GONE_ERROR: "MySQL server has gone
	// away".
	MySQLServerGone = 2006
	// MySQLServerLost is CR_SERVER_LOST: "Lost connection to MySQL server
	// during query".
	MySQLServerLost = 2013
)

// Error codes that mean the server refused a write because it is
// read-only: a demoted primary, or one an operator set read-only. Nothing
// of the statement was applied.
const (
	// SQLStateReadOnlyTransaction is PostgreSQL's
	// read_only_sql_transaction: a write in a read-only transaction, on a
	// standby or under default_transaction_read_only.
	SQLStateReadOnlyTransaction = "25006"
	// MySQLOptionPreventsStatement is ER_OPTION_PREVENTS_STATEMENT: "The
	// MySQL server is running with the --read-only option so it cannot
	// execute this statement" (the option named varies).
	MySQLOptionPreventsStatement = 1290
	// MySQLCantExecuteInReadOnlyTransaction is
	// ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION.
	MySQLCantExecuteInReadOnlyTransaction = 1792
)

// ReadOnly reports whether err is a server's refusal of a write because it
// is read-only (see SQLStateReadOnlyTransaction and the MySQL numbers
// beside it).
func ReadOnly(err error) bool {
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		return st.SQLState() == SQLStateReadOnlyTransaction
	}
	if n, ok := mysqlErrorNumber(err); ok {
		return n == MySQLOptionPreventsStatement || n == MySQLCantExecuteInReadOnlyTransaction
	}
	return false
}

// Refused reports whether err is a PostgreSQL server's refusal of a query
// it will refuse every time: SQLSTATE class 42 (a function or view this
// role may not use, or that this server lacks: 42501, 42883, 42P01) or
// 0A000 (not supported, as by a server that only speaks PostgreSQL's
// protocol). Not a broken connection, not a timeout.
func Refused(err error) bool {
	var st interface{ SQLState() string }
	if !errors.As(err, &st) {
		return false
	}
	code := st.SQLState()
	return len(code) == 5 && code[:2] == "42" || code == "0A000"
}

// mysqlInvalidConn is the text of go-sql-driver/mysql's ErrInvalidConn, a
// plain errors.New value with which it reports a connection that broke
// mid-statement or mid-handshake.
const mysqlInvalidConn = "invalid connection"

// mysqlErrorType is the end of the type name of go-sql-driver/mysql's
// server error (*mysql.MySQLError), whose Number field holds the error
// number.
const mysqlErrorType = "MySQLError"

// pgxConnClosed is the text of pgconn.ErrConnClosed.
const pgxConnClosed = "conn closed"

// ConnFailure reports whether err carries a driver's own error that means
// the connection or the server is gone. It reads the first of these it
// finds in err's chain and goes by its verdict alone: a SQLState() string
// method (lib/pq, pgx), counting class 08 and 57P01-57P03; a
// *MySQLError-shaped value (a pointer to a struct whose type name ends in
// MySQLError, with a uint16 Number field, as go-sql-driver/mysql's),
// counting 1053, 1927, 2006 and 2013; go-sql-driver/mysql's "invalid
// connection"; pgx's "conn closed" (pgconn.ErrConnClosed: the connection
// died under an earlier step of the call, or before it). Any other error
// is not a driver's connection failure.
func ConnFailure(err error) bool {
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		return PostgresConnFailure(st.SQLState())
	}
	if n, ok := mysqlErrorNumber(err); ok {
		return MySQLConnFailure(n)
	}
	return anyInChain(err, func(e error) bool { return e.Error() == mysqlInvalidConn || e.Error() == pgxConnClosed })
}

// PostgresConnFailure reports whether SQLSTATE code means the connection
// or the server is gone.
func PostgresConnFailure(code string) bool {
	switch code {
	case SQLStateAdminShutdown, SQLStateCrashShutdown, SQLStateCannotConnectNow:
		return true
	}
	return strings.HasPrefix(code, SQLStateConnectionException)
}

// MySQLConnFailure reports whether MySQL or MariaDB error number n means
// the connection or the server is gone.
func MySQLConnFailure(n uint16) bool {
	switch n {
	case MySQLServerShutdown, MySQLConnectionKilled, MySQLServerGone, MySQLServerLost:
		return true
	}
	return false
}

// mysqlErrorNumber finds a *MySQLError-shaped error in err's chain and
// returns its Number.
func mysqlErrorNumber(err error) (uint16, bool) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		v := reflect.ValueOf(e)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			continue
		}
		if !strings.HasSuffix(v.Elem().Type().Name(), mysqlErrorType) {
			continue
		}
		f := v.Elem().FieldByName("Number")
		if f.IsValid() && f.Kind() == reflect.Uint16 {
			return uint16(f.Uint()), true
		}
	}
	return 0, false
}

// anyInChain reports whether f holds for err or any error it wraps,
// following both Unwrap() error and Unwrap() []error.
func anyInChain(err error, f func(error) bool) bool {
	if err == nil {
		return false
	}
	if f(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return anyInChain(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if anyInChain(e, f) {
				return true
			}
		}
	}
	return false
}
