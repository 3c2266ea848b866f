package rwpool_test

import (
	"fmt"

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
)

// The no-op drivers of the benchmarks: they measure the shim and
// database/sql, not a network. The second one's name DialectOf reads as
// PostgreSQL, so that BenchmarkStatementMix is classified as a lib/pq or
// pgx application's would be.
func init() {
	fakedriver.Register("rwpool-bench-nop", fakedriver.Options{Nop: true})
	fakedriver.Register("rwpool-bench-nop-postgres", fakedriver.Options{Nop: true})
}
