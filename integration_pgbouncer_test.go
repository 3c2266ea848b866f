package rwpool_test

import (
	"errors"
	"fmt"
	"sync/atomic"
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
// pointed at it and reloaded. Unlike an endpoint that moves, every client
// connection rwpool holds stays open and reaches the new server with its
// next transaction: "the server rwpool dialled" is whatever the pooler
// picks per transaction. rwpool must write to the new primary within
// check_interval + 1 s of the reload, lose and duplicate nothing, fail no
// read, and with failover_wait fail no write.
func TestIntegrationPgBouncerRepointed(t *testing.T) {
	withAndWithoutFailoverWait(t, pgbouncerRepointed, testcluster.PgBouncerTx)
}

func pgbouncerRepointed(t *testing.T, cl *cluster, wait time.Duration) {
	const table = "rw_pgb_repoint"
	checkInterval := failoverCheckInterval
	primaryPort, newPrimary := portOf(cl.Primary), cl.Replicas[0]
	pooler := testcluster.Port(cl.Primary)
	r := newFailoverRig(t, cl, table, fmt.Sprintf("failover_wait=%s", wait), false, [][]string{
		{"set-read-only", primaryPort, "off"}, // first: rejoin-node clones the primary's settings
		{"rejoin-node", portOf(newPrimary)},
		{"wait-sync"},
	})
	// Registered after the rig: runs before its restore, so that the
	// pooler points at the original primary again before replica1 is
	// cloned from it.
	t.Cleanup(func() {
		if out, err := pgbouncerScript("repoint", pooler, primaryPort); err != nil {
			t.Errorf("cleanup: pgbouncer.sh repoint: %v\n%s", err, out)
		}
	})
	var moved atomic.Int32
	if err := rwpool.Configure(r.db, rwpool.WithEventHandler(func(e rwpool.Event) {
		if e.Kind == rwpool.EndpointMoved && e.Node == "primary" {
			moved.Add(1)
		}
	})); err != nil {
		t.Fatal(err)
	}
	w := r.w

	tReadOnly := time.Now()
	if out, err := clusterScript("set-read-only", primaryPort, "on"); err != nil {
		t.Fatalf("set-read-only: %v\n%s", err, out)
	}
	eventually(t, 10*time.Second, "replica1 caught up with the read-only primary", func() bool {
		return len(w.missingOn(t, cl, newPrimary, table)) == 0
	})
	if out, err := clusterScript("promote-node", portOf(newPrimary)); err != nil {
		t.Fatalf("promote-node: %v\n%s", err, out)
	}
	tMove := time.Now()
	if out, err := pgbouncerScript("repoint", pooler, portOf(newPrimary)); err != nil {
		t.Fatalf("pgbouncer.sh repoint: %v\n%s", err, out)
	}
	soak(checkInterval + 2*time.Second)
	wr, rr := r.writers.stop(), r.readers.stop()
	back, ok := firstSuccessAfter(wr, tMove)
	if !ok {
		if s, err := rwpool.Stats(r.db); err == nil {
			t.Logf("\n%s", s)
		}
		t.Fatalf("no write succeeded after the PgBouncer was re-pointed: %s; before: %s", wr.summary(tMove, time.Time{}), wr.summary(time.Time{}, tMove))
	}
	recovery := tMove.Add(back).Sub(tReadOnly)
	failed := wr.failures(time.Time{}, time.Time{})
	t.Logf("writes: back %s after the reload (%s after the primary turned read-only); %d of %d failed (%s); longest %s; %d EndpointMoved events",
		back.Round(time.Millisecond), recovery.Round(time.Millisecond), len(failed), wr.count(time.Time{}, time.Time{}),
		errSummary(failed, 3), wr.max(time.Time{}, time.Time{}).Round(time.Millisecond), moved.Load())
	t.Logf("reads: %s", rr.summary(time.Time{}, time.Time{}))
	if back > checkInterval+time.Second {
		t.Errorf("writes came back %s after the reload, want within check_interval + 1s (%s)", back, checkInterval+time.Second)
	}
	if missing := w.missingOn(t, cl, newPrimary, table); len(missing) > 0 {
		t.Errorf("%d acknowledged writes missing on the new primary: %v", len(missing), missing[:min(len(missing), 10)])
	}
	if dup := w.duplicatesOn(t, cl, newPrimary, table); len(dup) > 0 {
		t.Errorf("%d writes applied twice on the new primary: %v", len(dup), dup[:min(len(dup), 10)])
	}
	if errs := rr.failures(time.Time{}, time.Time{}); len(errs) > 0 {
		t.Errorf("%d reads failed: %s", len(errs), errSummary(errs, 3))
	}
	if wait > 0 {
		if len(failed) > 0 {
			t.Errorf("with failover_wait=%s, %d writes failed: %s", wait, len(failed), errSummary(failed, 3))
		}
		tolerance := 100 * time.Millisecond
		if longest := wr.max(time.Time{}, time.Time{}); longest > recovery+tolerance {
			t.Errorf("longest write %s, want at most the recovery time %s + %s", longest, recovery, tolerance)
		}
	} else {
		for _, err := range failed {
			if !errors.Is(err, rwpool.ErrReadOnly) && !isReadOnlyServerError(err) {
				t.Errorf("a write failed with %v, want a read-only refusal (the server's or rwpool's)", err)
				break
			}
		}
	}
}
