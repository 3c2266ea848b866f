package rwpool_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/simcluster"
)

// A session whose only write returned rows (INSERT … RETURNING) had its
// write's position pending, to be read at its next read or by
// SessionToken; but SessionToken asks the Connector the session last used,
// and such a write did not record it: the token was "", and a session
// resumed from it on another Connector read from a replica without the
// row. Found by TestSimulation (token-read in token-handover, saved as
// testdata/simulation/token-read-returning-only.json).
func TestSessionTokenAfterReturningOnly(t *testing.T) {
	for _, f := range []simcluster.Flavor{simcluster.Postgres, simcluster.MariaDB} {
		t.Run(f.String(), func(t *testing.T) {
			cl := simcluster.New(t.Name(), f, 2, 1)
			defer cl.Close()
			open := func() *sql.DB {
				db, err := sql.Open("rwpool", fmt.Sprintf("driver=%s;primary=%s;replica=%s;check_interval=1h",
					simcluster.DriverName(f), cl.DSN("s0"), cl.DSN("s1")))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
			db1, db2 := open(), open()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			cl.Delay("s1", time.Hour) // the replica never gets the row
			ph := "$1"
			if f == simcluster.MariaDB {
				ph = "?"
			}
			sess := rwpool.WithSession(ctx)
			var id int64
			if err := db1.QueryRowContext(sess, "INSERT INTO t VALUES (7) RETURNING id").Scan(&id); err != nil {
				t.Fatal(err)
			}
			tok := rwpool.SessionToken(sess)
			if tok == "" {
				t.Fatal("no token after a session's write that returned rows")
			}
			r, err := rwpool.WithSessionToken(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			var route rwpool.Route
			err = db2.QueryRowContext(rwpool.WithRoute(r, &route), "SELECT id FROM t WHERE id = "+ph, int64(7)).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				t.Fatalf("the resumed session missed the token's write: served by %s (%s)", route.Node, route.Reason)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
