package rwpool

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/simcluster"
)

// A monotonic session's next read went to the node of its last read with
// nothing to prove, also once that node's endpoint had been seen to
// balance over several servers: its next connection could reach one
// further behind, and the session read back in time (TestSimulation,
// monotonic, a balancing replica endpoint). Once the endpoint is known to
// balance, such a read covers what the last one could have shown, checked
// on its own connection. Before the health checker has seen it balance,
// the cheap path stays (TestMonotonicSessionOnBalancingEndpoint, under
// -sim.strict, shows that window).
func TestMonotonicSessionOnLearntBalancingEndpoint(t *testing.T) {
	for _, f := range []simcluster.Flavor{simcluster.Postgres, simcluster.MariaDB} {
		t.Run(f.String(), func(t *testing.T) {
			cl := simcluster.New(t.Name(), f, 3, 1)
			defer cl.Close()
			cl.AddEndpoint("rr", "s1", "s2")
			db, err := sql.Open("rwpool", fmt.Sprintf("driver=%s;primary=%s;replica=%s;check_interval=10ms;pool_size=40",
				simcluster.DriverName(f), cl.DSN("s0"), cl.DSN("rr")))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if !until(func() bool { return connectorOf(db).replicas[0].endpoint.balancing() }) {
				t.Fatal("the health checker never saw the endpoint balance")
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
			sess := WithSession(ctx)
			found := 0
			for i := range 30 {
				var r Route
				rows, err := db.QueryContext(WithRoute(sess, &r), q, int64(7))
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
				t.Fatal("no read found the row: the test shows nothing")
			}
		})
	}
}
