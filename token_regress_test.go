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
			db1, db2, ctx, ph := twoConnectors(t, f)
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

// A session's token covered what its reads had seen only as far as the
// node that served them was known to have applied (its health checker's
// last look, a lower bound), and not at all for a read the primary
// served: a row the session found on a replica that had replayed it since,
// or on the primary, was left out, and a session resumed from the token on
// another Connector read a replica without it. Found by TestSimulation
// (token-read in token-handover, a row "the token's session found";
// testdata/simulation/token-read-found-on-primary.json).
func TestSessionTokenCoversWhatReadsSaw(t *testing.T) {
	for _, c := range []struct {
		f       simcluster.Flavor
		replica string // db1's replica, "": none, the primary serves its reads
	}{{simcluster.Postgres, "s1"}, {simcluster.MariaDB, "s1"}, {simcluster.Postgres, ""}, {simcluster.MariaDB, ""}} {
		f := c.f
		name := f.String() + "/on-replica"
		if c.replica == "" {
			name = f.String() + "/on-primary"
		}
		t.Run(name, func(t *testing.T) {
			cl := simcluster.New(t.Name(), f, 3, 1)
			defer cl.Close()
			// Each Connector has one replica (or db1 none): db1 the one
			// that has the row, db2 the one that never gets it.
			open := func(replica string) *sql.DB {
				d := fmt.Sprintf("driver=%s;primary=%s;check_interval=1h", simcluster.DriverName(f), cl.DSN("s0"))
				if replica != "" {
					d += ";replica=" + cl.DSN(replica)
				}
				db, err := sql.Open("rwpool", d)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
			db1, db2 := open(c.replica), open("s2")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ph := "$1"
			if f == simcluster.MariaDB {
				ph = "?"
			}
			read := func(db *sql.DB, ctx context.Context) (bool, rwpool.Route) {
				var r rwpool.Route
				var id int64
				err := db.QueryRowContext(rwpool.WithRoute(ctx, &r), "SELECT id FROM t WHERE id = "+ph, int64(7)).Scan(&id)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					t.Fatal(err)
				}
				return err == nil, r
			}
			// Both Connectors have seen their replica at the start: the
			// health checker's one look.
			read(db1, ctx)
			read(db2, ctx)
			cl.Delay("s2", time.Hour)
			if _, err := db1.ExecContext(ctx, "INSERT INTO t VALUES (7)"); err != nil { // no session: someone else's write
				t.Fatal(err)
			}
			if !cl.Has("s1", 7) || cl.Has("s2", 7) {
				t.Fatal("s1 must have row 7, s2 not")
			}
			sess := rwpool.WithSession(ctx)
			if found, r := read(db1, sess); !found || r.Role != "replica" && c.replica != "" {
				t.Fatalf("the session's read: found=%v on %s (%s), want found on the replica", found, r.Node, r.Reason)
			}
			tok := rwpool.SessionToken(sess)
			resumed, err := rwpool.WithSessionToken(rwpool.WithSession(ctx), tok)
			if err != nil {
				t.Fatal(err)
			}
			if found, r := read(db2, resumed); !found {
				t.Fatalf("the session resumed from token %q missed the row the token's session had found: served by %s (%s)", tok, r.Node, r.Reason)
			}
		})
	}
}

// A token made when the primary could not be asked for a pending write's
// position (here the DB was already closing, as when a request ends
// during shutdown; likewise with the primary down or hung) left the write
// out: "" for a session whose only write returned rows, and a session
// resumed from it on another Connector read a replica without the row.
// The token now says a write is pending, and the resumed session asks its
// own primary first. Found by TestSimulation (token-read in
// token-handover, Close while the workers run, seed 7620196231773789081).
func TestSessionTokenOfAnUnresolvedWrite(t *testing.T) {
	for _, f := range []simcluster.Flavor{simcluster.Postgres, simcluster.MariaDB} {
		t.Run(f.String(), func(t *testing.T) {
			db1, db2, ctx, ph := twoConnectors(t, f)
			sess := rwpool.WithSession(ctx)
			var id int64
			if err := db1.QueryRowContext(sess, "INSERT INTO t VALUES (7) RETURNING id").Scan(&id); err != nil {
				t.Fatal(err)
			}
			db1.Close() // the write's position can no longer be read through db1
			tok := rwpool.SessionToken(sess)
			if tok == "" {
				t.Fatal("no token after a session's write whose position could not be read")
			}
			// Handed on again before any read, it still says so.
			r, err := rwpool.WithSessionToken(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			if again := rwpool.SessionToken(r); again != tok {
				t.Fatalf("the resumed session's token %q, want %q", again, tok)
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

// twoConnectors opens two *sql.DB on one simulated cluster of a primary
// (s0) and a replica (s1) that never replays the primary's writes, and
// returns them with a context for the test and the flavor's placeholder.
func twoConnectors(t *testing.T, f simcluster.Flavor) (db1, db2 *sql.DB, ctx context.Context, ph string) {
	t.Helper()
	cl := simcluster.New(t.Name(), f, 2, 1)
	t.Cleanup(cl.Close)
	open := func() *sql.DB {
		db, err := sql.Open("rwpool", fmt.Sprintf("driver=%s;primary=%s;replica=%s;check_interval=1h",
			simcluster.DriverName(f), cl.DSN("s0"), cl.DSN("s1")))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db1, db2 = open(), open()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	cl.Delay("s1", time.Hour) // the replica never gets the row
	ph = "$1"
	if f == simcluster.MariaDB {
		ph = "?"
	}
	return db1, db2, ctx, ph
}
