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
			open, ctx, ph := tokenCluster(t, f)
			tok := rwpool.SessionToken(writeReturning(t, open(""), ctx, 7))
			if tok == "" {
				t.Fatal("no token after a session's write that returned rows")
			}
			r, err := rwpool.WithSessionToken(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			if found, route := hasRow(t, open(""), r, ph, 7); !found {
				t.Fatalf("the resumed session missed the token's write: served by %s (%s)", route.Node, route.Reason)
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
			open, ctx, ph := tokenCluster(t, f)
			tok := pendingToken(t, open, ctx, 7)
			// Handed on again before any read, it still says so.
			r, err := rwpool.WithSessionToken(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			if again := rwpool.SessionToken(r); again != tok {
				t.Fatalf("the resumed session's token %q, want %q", again, tok)
			}
			if found, route := hasRow(t, open(""), r, ph, 7); !found {
				t.Fatalf("the resumed session missed the token's write: served by %s (%s)", route.Node, route.Reason)
			}
		})
	}
}

// tokenCluster starts a simulated cluster of a primary (s0) and a replica
// (s1) that never replays the primary's writes, and returns a function
// opening a *sql.DB on it with DSN keys extra (";key=value…"), a context
// for the test and the flavor's placeholder.
func tokenCluster(t *testing.T, f simcluster.Flavor) (open func(extra string) *sql.DB, ctx context.Context, ph string) {
	t.Helper()
	cl := simcluster.New(t.Name(), f, 2, 1)
	t.Cleanup(cl.Close)
	open = func(extra string) *sql.DB {
		db, err := sql.Open("rwpool", fmt.Sprintf("driver=%s;primary=%s;replica=%s;check_interval=1h%s",
			simcluster.DriverName(f), cl.DSN("s0"), cl.DSN("s1"), extra))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	cl.Delay("s1", time.Hour) // the replica never gets the row
	ph = "$1"
	if f == simcluster.MariaDB {
		ph = "?"
	}
	return open, ctx, ph
}

// writeReturning writes row v with RETURNING through db, in a new session
// of ctx, and returns the session: its write's position is pending.
func writeReturning(t *testing.T, db *sql.DB, ctx context.Context, v int) context.Context {
	t.Helper()
	sess := rwpool.WithSession(ctx)
	var id int64
	if err := db.QueryRowContext(sess, fmt.Sprintf("INSERT INTO t VALUES (%d) RETURNING id", v)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return sess
}

// pendingToken writes row v with RETURNING through a DB that is then
// closed, and returns the session's token: it can only say that a write
// is pending.
func pendingToken(t *testing.T, open func(string) *sql.DB, ctx context.Context, v int) string {
	t.Helper()
	db := open("")
	sess := writeReturning(t, db, ctx, v)
	db.Close() // the write's position can no longer be read through db
	tok := rwpool.SessionToken(sess)
	if tok == "" {
		t.Fatal("no token after a session's write whose position could not be read")
	}
	return tok
}

// hasRow reports whether a read of row id through db with ctx found it,
// and where it was served.
func hasRow(t *testing.T, db *sql.DB, ctx context.Context, ph string, id int) (bool, rwpool.Route) {
	t.Helper()
	var r rwpool.Route
	var got int64
	err := db.QueryRowContext(rwpool.WithRoute(ctx, &r), "SELECT id FROM t WHERE id = "+ph, int64(id)).Scan(&got)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("read of row %d: %v", id, err)
	}
	return err == nil, r
}

// A pending token with no position, merged after a token with one, made
// the session's read fail with ErrInvalidToken ("tokens of two clusters
// or kinds of server"): its zero position has no kind of server, which
// differed from the other's. Found by review of the pending tokens.
func TestPendingTokenMergesWithOthers(t *testing.T) {
	for _, f := range []simcluster.Flavor{simcluster.Postgres, simcluster.MariaDB} {
		t.Run(f.String(), func(t *testing.T) {
			open, ctx, ph := tokenCluster(t, f)
			db := open("")
			a := rwpool.WithSession(ctx)
			if _, err := db.ExecContext(a, "INSERT INTO t VALUES (7)"); err != nil {
				t.Fatal(err)
			}
			tokA, tokB := rwpool.SessionToken(a), pendingToken(t, open, ctx, 8)
			for _, order := range [][2]string{{tokA, tokB}, {tokB, tokA}} {
				r := ctx
				for _, tok := range order {
					var err error
					if r, err = rwpool.WithSessionToken(r, tok); err != nil {
						t.Fatal(err)
					}
				}
				for _, id := range []int{7, 8} {
					if found, route := hasRow(t, db, r, ph, id); !found {
						t.Fatalf("merged tokens: row %d missed on %s (%s)", id, route.Node, route.Reason)
					}
				}
			}
		})
	}
}

// A pending token resumed through a read_your_writes Connector lost its
// pending write there: that Connector's reads ignored a resumed token, and
// its SessionToken left the pending write out. Found by review of the
// pending tokens.
func TestPendingTokenThroughReadYourWrites(t *testing.T) {
	for _, f := range []simcluster.Flavor{simcluster.Postgres, simcluster.MariaDB} {
		t.Run(f.String(), func(t *testing.T) {
			open, ctx, ph := tokenCluster(t, f)
			tok := pendingToken(t, open, ctx, 7)
			ryw, plain := open(";read_your_writes=1s"), open("")
			r, err := rwpool.WithSessionToken(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			if found, route := hasRow(t, ryw, r, ph, 7); !found {
				t.Fatalf("read_your_writes Connector: the resumed token's write missed on %s (%s)", route.Node, route.Reason)
			}
			relayed := rwpool.SessionToken(r)
			r2, err := rwpool.WithSessionToken(ctx, relayed)
			if err != nil {
				t.Fatal(err)
			}
			if found, route := hasRow(t, plain, r2, ph, 7); !found {
				t.Fatalf("token %q relayed through a read_your_writes Connector lost the write: missed on %s (%s)", relayed, route.Node, route.Reason)
			}
		})
	}
}

// A token that says only that a write is pending carried no kind of
// server: resumed on another kind's cluster (whose identity could not
// tell it either: MariaDB offers none), its reads asked that cluster's
// primary instead of failing with ErrInvalidToken, as a token with a
// position does. Its flags now carry its kind.
func TestPendingTokenOfAnotherKindIsRefused(t *testing.T) {
	kinds := []simcluster.Flavor{simcluster.Postgres, simcluster.MariaDB}
	for i, from := range kinds {
		on := kinds[1-i]
		t.Run(from.String()+"-on-"+on.String(), func(t *testing.T) {
			openFrom, ctx, _ := tokenCluster(t, from)
			// A session's write first: its position read tells the
			// Connector its kind of server, as the health checker's
			// first status read would.
			w := openFrom("")
			if _, err := w.ExecContext(rwpool.WithSession(ctx), "INSERT INTO t VALUES (6)"); err != nil {
				t.Fatal(err)
			}
			sess := writeReturning(t, w, ctx, 7)
			w.Close() // the write's position can no longer be read
			tok := rwpool.SessionToken(sess)
			openOn, _, ph := tokenCluster(t, on)
			db := openOn("")
			r, err := rwpool.WithSessionToken(ctx, tok)
			if err != nil {
				t.Fatalf("WithSessionToken: %v", err) // the kind is the cluster's to say, at the first read
			}
			var got int64
			err = db.QueryRowContext(r, "SELECT id FROM t WHERE id = "+ph, int64(7)).Scan(&got)
			if !errors.Is(err, rwpool.ErrInvalidToken) {
				t.Fatalf("a pending %s token read on %s: %v, want ErrInvalidToken", from, on, err)
			}
		})
	}
}
