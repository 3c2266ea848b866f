package rwpool

import (
	"errors"
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/replication"
)

// markBehind compares the replicas' positions by LSN alone. A standby
// whose primary died has no WAL receiver, and reports its last
// restartpoint's timeline: under Patroni, two standbys replaying timeline
// 39 reported 37 and 38. With timelines, the one behind (labelled with a
// later timeline) and the one ahead were incomparable, and the node order
// chose: the one ahead was marked behind and the one behind served every
// read (rwpool bench --patroni: a read 11 s stale after the failover).
func TestMarkBehindAcrossStaleTimelines(t *testing.T) {
	cfg := dsn.NewConfig()
	cfg.Driver = "rwpool-internal-endpoint-postgres"
	cfg.Primary = dsn.Node{Name: "primary", DSN: "mb-p", Weight: 1, Role: dsn.RolePrimary}
	cfg.Replicas = []dsn.Node{{Name: "replica1", DSN: "mb-r1", Weight: 1, Role: dsn.RoleReplica},
		{Name: "replica2", DSN: "mb-r2", Weight: 1, Role: dsn.RoleReplica}}
	cfg.CheckInterval = time.Hour // no probe runs: the test is the health checker
	cfg.FollowPromotion = true
	for _, d := range []string{"mb-p", "mb-r1", "mb-r2"} {
		endpointFake.Fresh(d).SetStatus(replicaStatus)
	}
	endpointFake.Node("mb-p").SetStatus(primaryStatus)
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	at := func(lsn string, tli uint32) replication.Position {
		pos, err := replication.ParseLSN(lsn)
		if err != nil {
			t.Fatal(err)
		}
		return pos.OnTimeline(tli)
	}
	p, r1, r2 := c.topo().nodes[0], c.topo().nodes[1], c.topo().nodes[2]
	behind, ahead := at("0/1800", 39), at("0/2000", 38)
	r1.repl.pos.Store(&behind) // its restartpoint is recent
	r2.repl.pos.Store(&ahead)  // its restartpoint is older
	c.markBehind()
	if r1.isBehind() || r2.isBehind() {
		t.Fatal("a replica marked behind while the primary is healthy")
	}
	p.health.Trip(errors.New("probe: connection refused"))
	c.markBehind()
	if !r1.isBehind() || r2.isBehind() {
		t.Errorf("primary down: replica1 (0/1800) behind %v, want true; replica2 (0/2000) behind %v, want false", r1.isBehind(), r2.isBehind())
	}
	// replica2 fails: replica1 serves again, marked or not.
	r2.health.Trip(errors.New("probe: connection refused"))
	if r1.isBehind() {
		t.Error("replica1 still behind the failed replica2")
	}
}
