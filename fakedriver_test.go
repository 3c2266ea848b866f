package rwpool_test

import (
	"fmt"
	"io"

	"github.com/rwpool/rwpool/internal/fakedriver"
)

// The fake drivers of the root tests, one internal/fakedriver each mode.
var (
	// legacy has only the interfaces database/sql requires and records
	// what each node ran; a node that is down echoes its DSN in the dial
	// error, as some real drivers do.
	legacy = fakedriver.Register("rwpool-test-legacy", fakedriver.Options{
		Legacy: true, Record: true,
		DialError: func(dsn string) error { return fmt.Errorf("legacy: cannot connect to %s", dsn) },
	})

	// ctl's nodes go down, hang and lose connections mid-result, for the
	// breaker, health check and replay tests.
	ctl = fakedriver.Register("rwpool-test-ctl", fakedriver.Options{})

	// sim is a PostgreSQL cluster for fast tests of session routing (its
	// name contains "postgres"), see openSim.
	sim = fakedriver.Register("rwpool-test-postgres-sim", fakedriver.Options{Replication: true, Record: true})

	// leaseMySQL and leasePostgres are the MySQL and PostgreSQL drivers of
	// the lease's regression tests (lease_regress_test.go): queries
	// answer n = 1, and the statement BROKEN fails as a connection lost
	// mid-statement. leasePostgres's connections also prepare real
	// statements, and refuse a write in a read-only transaction with
	// SQLSTATE 25006.
	leaseMySQL    = fakedriver.Register("rwpool-test-lease-mysql", fakedriver.Options{AnswerOne: true, Fail: failBroken})
	leasePostgres = fakedriver.Register("rwpool-test-lease-postgres", fakedriver.Options{
		AnswerOne: true, Fail: failBroken, Prepare: true, ReadOnlyTx: true,
	})
)

// failBroken fails the statement BROKEN as a connection lost
// mid-statement (Options.Fail).
func failBroken(_, query string) error {
	if query == "BROKEN" {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// The no-op drivers of the benchmarks: they measure the shim and
// database/sql, not a network. The second one's name DialectOf reads as
// PostgreSQL, so that BenchmarkStatementMix is classified as a lib/pq or
// pgx application's would be.
func init() {
	fakedriver.Register("rwpool-bench-nop", fakedriver.Options{Nop: true})
	fakedriver.Register("rwpool-bench-nop-postgres", fakedriver.Options{Nop: true})
}
