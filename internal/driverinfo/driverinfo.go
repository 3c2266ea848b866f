// Package driverinfo is everything rwpool knows about particular
// database/sql drivers and database servers, in one place: the names
// drivers register, which of them honour a context's end, which SQL
// dialect a driver name implies, and which driver errors mean that a
// connection (not a statement) failed.
//
// Nothing else in rwpool should spell a driver name or a server error
// code; a driver rwpool learns about is added here. The package imports no
// driver: errors are read by their methods and fields.
package driverinfo

// Names real drivers register with database/sql.
const (
	// DriverLibPQ is github.com/lib/pq.
	DriverLibPQ = "postgres"
	// DriverPgx is github.com/jackc/pgx's stdlib package (v4, and v5 for
	// compatibility).
	DriverPgx = "pgx"
	// DriverPgxV5 is github.com/jackc/pgx/v5/stdlib's own name.
	DriverPgxV5 = "pgx/v5"
	// DriverMySQL is github.com/go-sql-driver/mysql, for MySQL and MariaDB.
	DriverMySQL = "mysql"
)

// HonoursContext reports whether the driver registered as name returns
// promptly when a dial's or a statement's context ends, even when the
// server has stopped answering. go-sql-driver/mysql and pgx do: they close
// the socket or set its deadline. lib/pq does not: it sends a cancel
// request on a new connection, which a hung server never answers, and
// keeps reading. A driver not listed here is assumed not to, so that
// rwpool bounds its calls itself.
func HonoursContext(name string) bool {
	switch name {
	case DriverMySQL, DriverPgx, DriverPgxV5:
		return true
	}
	return false
}

// SafeBadConn reports whether the driver registered as name returns
// driver.ErrBadConn only when nothing of the statement reached the
// server, as database/sql requires: go-sql-driver/mysql does (before
// writing a packet). lib/pq also returns it when the connection drops
// after the server got the statement (io.EOF, a fatal server error), so a
// write that failed with it may have been applied. So does pgx v5 (5.12,
// measured by TestIntegrationOutcomeUnknown): a statement whose server
// died while it ran can end with the "conn closed" error of a later step
// of the same call, which pgconn.SafeToRetry calls safe, and the stdlib
// turns into driver.ErrBadConn. A driver not listed is assumed not to be
// safe.
func SafeBadConn(name string) bool {
	return name == DriverMySQL
}

// TiesContextCheaply reports whether the driver registered as name ties a
// statement to a context that can end without handing each statement to
// a goroutine: pgx registers with the standard library's
// context.AfterFunc. go-sql-driver/mysql hands every such context to its
// connection's watcher goroutine and, when the statement ends, waits for
// that goroutine to be scheduled.
func TiesContextCheaply(name string) bool {
	switch name {
	case DriverPgx, DriverPgxV5:
		return true
	}
	return false
}
