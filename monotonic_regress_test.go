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

// A monotonic session's next read goes to the node of its last read; when
// that node's endpoint balances over several servers, the read's
// connection may reach another one, further behind: the session would
// read back in time. Found by TestSimulation (monotonic, a balancing
// replica endpoint with one replica delayed, or with a followed
// switchover that made one of its servers the primary). planRead takes
// the last read's node as proof only once its endpoint is known to lead
// to one server (endpointSeen.single, learnt in one burst of fresh dials
// at the first probe, learnEndpoint); until then, and for good on a
// balancing endpoint, the read covers the primary's position at the end
// of the last read (floor), checked on its own connection. This test
// reads before the health checker's first check (check_interval=1h): the
// reads' own nudge makes the probe that learns the endpoint.
func TestMonotonicSessionOnBalancingEndpoint(t *testing.T) {
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
