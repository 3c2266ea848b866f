package rwpool_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/simcluster"
)

// A monotonic session's next read goes to the node of its last read with
// nothing more to prove; when that node's endpoint balances over several
// servers, the read's connection may reach another one, further behind:
// the session reads back in time. Found by TestSimulation (monotonic, a
// balancing replica endpoint with one replica delayed, or with a followed
// switchover that made one of its servers the primary). Known open: a fix
// (planRead floors the read, as when the last read's node is unavailable,
// unless the node's endpoint is known to lead to one server) costs a
// question to the primary per session read while an endpoint is not
// known to lead to one server, and fails such reads while the primary is
// unreachable; the choice is the feature's.
//
// Tried and backed out (this session): flooring whenever the node's
// endpoint is not known to lead to one server (endpointSeen.single). It
// fixes this test, but single() needs endpointMoveDials identity reads,
// one per fifth health check (about 80 s at the defaults), so for that
// long after start every session read after the first floored: with a
// primary that keeps writing, each then waited causal_wait and went to
// the primary (TestSessionReadsStayMonotonic and TestSessionRoutesByPosition
// fail). A fix needs the endpoint learnt at the first probe (a burst of
// fresh dials, as confirmMove does), then the floor only on endpoints not
// known to lead to one server. What is on main floors only where the
// endpoint was seen to balance (TestMonotonicSessionOnLearntBalancingEndpoint);
// this test, which reads before the health checker has looked, shows the
// window left.
func TestMonotonicSessionOnBalancingEndpoint(t *testing.T) {
	if !*simStrict {
		t.Skip("known open (simKnownOpen: monotonic): -sim.strict runs it; delete this skip with the fix")
	}
	monotonicOnBalancingEndpoint(t, "1h", false)
}

// Once the health checker has seen the endpoint balance, a session's read
// on the node of its last read covers what that read could have shown,
// checked on its own connection.
func TestMonotonicSessionOnLearntBalancingEndpoint(t *testing.T) {
	monotonicOnBalancingEndpoint(t, "10ms", true)
}

// monotonicOnBalancingEndpoint runs 30 reads of one session through a
// replica endpoint balancing over two servers, one of which never gets
// the row written first: once a read found it, none may miss it. With
// learnt, the reads start once the health checker (every checkInterval)
// has seen the endpoint balance.
func monotonicOnBalancingEndpoint(t *testing.T, checkInterval string, learnt bool) {
	for _, f := range []simcluster.Flavor{simcluster.Postgres, simcluster.MariaDB} {
		t.Run(f.String(), func(t *testing.T) {
			cl := simcluster.New(t.Name(), f, 3, 1)
			defer cl.Close()
			cl.AddEndpoint("rr", "s1", "s2")
			db, err := sql.Open("rwpool", fmt.Sprintf("driver=%s;primary=%s;replica=%s;check_interval=%s;pool_size=40",
				simcluster.DriverName(f), cl.DSN("s0"), cl.DSN("rr"), checkInterval))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if learnt {
				eventually(t, 5*time.Second, "the health checker sees the endpoint balance", func() bool { return rwpool.EndpointBalancing(db, 0) })
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cl.Delay("s2", time.Hour) // s2 never gets the row
			if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (7)"); err != nil {
				t.Fatal(err)
			}
			q := "SELECT id FROM t WHERE id = $1"
			if f == simcluster.MariaDB {
				q = "SELECT id FROM t WHERE id = ?"
			}
			// Each read keeps its rows, and so its connection, open: the
			// next one dials anew, reaching s1 or s2 at random.
			sess := rwpool.WithSession(ctx)
			found := 0
			for i := range 30 {
				var r rwpool.Route
				rows, err := db.QueryContext(rwpool.WithRoute(sess, &r), q, int64(7))
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				switch got := rows.Next(); {
				case got:
					found++
				case found > 0:
					t.Fatalf("read %d missed the row an earlier read of the session found: served by %s (%s)", i, r.Node, r.Reason)
				}
			}
			if found == 0 {
				t.Fatal("no read reached s1: the test shows nothing")
			}
		})
	}
}
