package rwpool_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

var contestNoIdent atomic.Bool

var contestDrv = fakedriver.Register("rwpool-test-postgres-unproven", fakedriver.Options{Replication: true, Record: true,
	Fail: func(dsn, q string) error {
		// replica1's server cannot be identified: its endpoint is never
		// shown to lead to one server (leadsToOneServer is false).
		if contestNoIdent.Load() && strings.HasSuffix(dsn, "/r1") && strings.Contains(q, "pg_postmaster_start_time") {
			return errors.New("permission denied for function pg_postmaster_start_time")
		}
		return nil
	}})

// The primary goes down while ONE replica claims to be the primary whose
// endpoint is not shown to lead to one server: contested, none followed.
// The file comment says the primary, back writable while that replica
// still claims, is a split brain. But the status read of the recovery
// probe runs while the primary is still tripped, so followRoles takes the
// "one claimant" branch again (split nil), the breaker then recovers the
// primary, and writes reach it until its next status read.
func TestFollowPromotionUnprovenClaimantHoldsReturningPrimary(t *testing.T) {
	contestNoIdent.Store(true)
	defer contestNoIdent.Store(false)
	fc := openSimCluster(t, contestDrv, "rwpool-test-postgres-unproven",
		"follow_promotion=on;check_interval=300ms;probe_timeout=1s")
	fc.r1.SetStatus(fakedriver.Status{LSN: "0/2000", ReplayAge: -1})
	waitFor(t, "replica1 flagged as writable", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return s.Nodes[1].RoleMismatch()
	})
	fc.p.SetDown(true)
	waitFor(t, "the primary unavailable", func() bool {
		s, _ := rwpool.Stats(fc.db)
		return !s.Nodes[0].Available
	})
	time.Sleep(700 * time.Millisecond) // replica1's status reads: contested
	if node, err := fc.write(); err == nil {
		t.Fatalf("write reached %s: replica1 was followed", node)
	}
	fc.p.SetDown(false)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if node, err := fc.write(); err == nil {
			t.Fatalf("write reached %s while replica1 still claims to be the primary (%d writes on the old primary)",
				node, fc.p.Count("INSERT INTO t VALUES (1)"))
		}
		time.Sleep(time.Millisecond)
	}
}
