package rwpool_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/testcluster"
)

// pgbouncerQueryWait is query_wait_timeout in scripts/pgbouncer.sh.
const pgbouncerQueryWait = time.Second

// notPooledAway returns errs without the writes that failed with
// ErrOutcomeUnknown, and logs how many those were. Through PgBouncer, a
// write sent in the moment between a server's death and rwpool's trip
// reaches the pooler, which queues it and then ends the client connection
// with a FATAL error ("server login has been failing", "query_wait_timeout")
// without ever giving it to a server. lib/pq turns every FATAL error into
// driver.ErrBadConn, so rwpool cannot tell this from a connection lost
// mid-write and must report the outcome unknown; failover_wait cannot
// retry such a write (README, Behind PgBouncer).
func notPooledAway(t *testing.T, errs []error) []error {
	t.Helper()
	var rest []error
	unknown := 0
	for _, err := range errs {
		if errors.Is(err, rwpool.ErrOutcomeUnknown) {
			unknown++
			continue
		}
		rest = append(rest, err)
	}
	t.Logf("writes issued during the outage that PgBouncer took and failed (ErrOutcomeUnknown): %d", unknown)
	return rest
}

// TestIntegrationPgBouncerRepointed is a PostgreSQL switchover behind a
// PgBouncer that an HA tool re-points, as Patroni's callbacks or an
// operator's script do: the old primary is set read-only, replica1 catches
// up and is promoted, and the PgBouncer that rwpool's primary DSN names is
// pointed at it and reloaded (switchoverBehindEndpoint, through
// pgbouncerMove). Unlike an endpoint that moves, every client connection
// rwpool holds stays open and reaches the new server with its next
// transaction: "the server rwpool dialled" is whatever the pooler picks per
// transaction. rwpool must write to the new primary within check_interval
// + 1 s of the reload, lose and duplicate nothing, fail no read, and with
// failover_wait fail no write.
func TestIntegrationPgBouncerRepointed(t *testing.T) {
	withAndWithoutFailoverWait(t, switchoverBehindEndpoint, testcluster.PgBouncerTx)
}

// pgbouncerMove makes r's move re-point the PgBouncer in front of the
// primary, and puts it back when the test ends: before the rig's restore
// (cleanups run last first), so that the pooler reaches the original
// primary again before replica1 is cloned from it.
func pgbouncerMove(t *testing.T, cl *cluster, r *failoverRig) {
	pooler, primaryPort := testcluster.Port(cl.Primary), portOf(cl.Primary)
	r.move = func(t *testing.T, to string) {
		if out, err := pgbouncerScript("repoint", pooler, portOf(to)); err != nil {
			t.Fatalf("pgbouncer.sh repoint: %v\n%s", err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := pgbouncerScript("repoint", pooler, primaryPort); err != nil {
			t.Errorf("cleanup: pgbouncer.sh repoint: %v\n%s", err, out)
		}
	})
}
