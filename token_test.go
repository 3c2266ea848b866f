package rwpool_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/replication"
	"github.com/rwpool/rwpool/internal/token"
)

// openSimAgain opens a second rwpool, with its own Connector, over the
// simulated cluster openSim made: another process, as far as sessions go.
func openSimAgain(t *testing.T, cl, extra string) *sql.DB {
	t.Helper()
	db, err := sql.Open("rwpool", fmt.Sprintf("driver=rwpool-test-postgres-sim;primary=%[1]s/p;replica=%[1]s/r1;replica=%[1]s/r2;check_interval=1h;%s", cl, extra))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestSessionTokenAcrossConnectors: a session writes through one
// Connector and hands its token over; a session resumed from it on
// another Connector reads only from replicas that have the write (else
// the primary), while a read without the token goes to a replica that
// does not have it (the control: the test can fail).
func TestSessionTokenAcrossConnectors(t *testing.T) {
	db1, cl := openSim(t, "")
	db2 := openSimAgain(t, cl, "")
	if tok := rwpool.SessionToken(context.Background()); tok != "" {
		t.Errorf("a context without a session has token %q", tok)
	}
	w := rwpool.WithSession(context.Background())
	if tok := rwpool.SessionToken(w); tok != "" {
		t.Errorf("a session with no position has token %q", tok)
	}
	if _, err := db1.ExecContext(w, "UPDATE t SET x = 1"); err != nil {
		t.Fatal(err)
	}
	tok := rwpool.SessionToken(w)
	if tok == "" || len(tok) > 64 {
		t.Fatalf("token %q: want 1 to 64 characters", tok)
	}
	if strings.Contains(tok, cl) {
		t.Errorf("token %q names the cluster's DSN", tok)
	}

	r, err := rwpool.WithSessionToken(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if got := simRead(t, db2, r); got.Node != "primary" {
		t.Errorf("the resumed session read from %s (%s) before any replica had the write", got.Node, got.Reason)
	}
	if got := simRead(t, db2, context.Background()); got.Role != "replica" {
		t.Errorf("the control read without the token went to %s", got.Node)
	}
	sim.Node(cl + "/r2").SetReplayed(0x100)
	for range 20 {
		if got := simRead(t, db2, r); got.Node != "replica2" {
			t.Fatalf("the resumed session read from %s (%s), want replica2, the one replica with the write", got.Node, got.Reason)
		}
	}
	// Resuming into a session that exists keeps it, and merges.
	again, err := rwpool.WithSessionToken(r, tok)
	if err != nil || rwpool.SessionToken(again) != rwpool.SessionToken(r) {
		t.Errorf("resuming a token twice: %v, token %q then %q", err, rwpool.SessionToken(r), rwpool.SessionToken(again))
	}
	if ctx, err := rwpool.WithSessionToken(r, ""); err != nil || ctx != r {
		t.Errorf(`WithSessionToken(ctx, "") = %v, %v; want ctx, nil`, ctx, err)
	}
}

// TestSessionTokenHostile: what is not a token is refused with
// ErrInvalidToken, whole or cut, altered or huge; a token of another kind
// of server fails the session's first read the same way.
func TestSessionTokenHostile(t *testing.T) {
	db, _ := openSim(t, "")
	w := rwpool.WithSession(context.Background())
	db.ExecContext(w, "UPDATE t SET x = 1")
	good := rwpool.SessionToken(w)
	flipped := []byte(good)
	flipped[len(flipped)/2] ^= 0x04
	for name, tok := range map[string]string{
		"garbage":   "hello, world",
		"truncated": good[:len(good)-2],
		"bit flip":  string(flipped),
		"1 MiB":     strings.Repeat("Q", 1<<20),
		"a JWT":     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.e30.x",
	} {
		ctx, err := rwpool.WithSessionToken(context.Background(), tok)
		if !errors.Is(err, rwpool.ErrInvalidToken) {
			t.Errorf("%s: err %v, want ErrInvalidToken", name, err)
		}
		if ctx != context.Background() {
			t.Errorf("%s: a refused token changed the context", name)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("%s: the error quotes the token: %.80s…", name, err)
		}
	}

	maria, _ := replication.ParseMariaDBGTID("0-1-42")
	foreign := token.Encode(token.Token{Pos: maria})
	ctx, err := rwpool.WithSessionToken(context.Background(), foreign)
	if err != nil {
		t.Fatalf("a well-formed MariaDB token: %v", err)
	}
	var node string
	err = db.QueryRowContext(ctx, "SELECT node").Scan(&node)
	if !errors.Is(err, rwpool.ErrInvalidToken) {
		t.Errorf("a read resuming a MariaDB token on PostgreSQL: err %v, want ErrInvalidToken", err)
	}
}

// TestMaxStaleness: a read bounded by WithMaxStaleness goes only to a
// replica that has the primary's position of the bound's moment; with
// none, to the primary, or with causal_fallback=error it fails with
// ErrTooStale (which is ErrUnavailable too). Unbounded reads are not
// affected.
func TestMaxStaleness(t *testing.T) {
	db, cl := openSim(t, "causal_wait=0")
	db.ExecContext(context.Background(), "UPDATE t SET x = 1") // the primary is at 0x100, no replica is
	time.Sleep(2 * time.Millisecond)                           // the bound's moment comes after that write
	ctx := rwpool.WithMaxStaleness(context.Background(), time.Millisecond)
	if got := simRead(t, db, ctx); got.Node != "primary" || !strings.Contains(got.Reason, "staleness") {
		t.Errorf("a bounded read with every replica behind went to %s (%s)", got.Node, got.Reason)
	}
	if got := simRead(t, db, context.Background()); got.Role != "replica" {
		t.Errorf("an unbounded read went to %s", got.Node)
	}
	sim.Node(cl + "/r1").SetReplayed(0x100)
	for range 20 {
		if got := simRead(t, db, ctx); got.Node != "replica1" {
			t.Fatalf("a bounded read went to %s (%s), want replica1, the one replica fresh enough", got.Node, got.Reason)
		}
	}

	strict := openSimAgain(t, cl, "causal_wait=0;causal_fallback=error")
	strict.ExecContext(context.Background(), "UPDATE t SET x = 2") // 0x200: replica1 is behind now
	time.Sleep(2 * time.Millisecond)
	var node string
	err := strict.QueryRowContext(ctx, "SELECT node").Scan(&node)
	if !errors.Is(err, rwpool.ErrTooStale) || !errors.Is(err, rwpool.ErrUnavailable) {
		t.Errorf("causal_fallback=error with every replica behind: err %v, want ErrTooStale and ErrUnavailable", err)
	}

	// What happened shows in Stats.
	st, _ := rwpool.Stats(db)
	if p, r1 := st.Nodes[0], st.Nodes[1]; p.CausalFallbacks < 1 || r1.CausalReads < 20 || p.CausalReads < 1 {
		t.Errorf("stats: primary %d causal fallbacks, %d causal reads; replica1 %d causal reads; want >= 1, >= 1, >= 20",
			p.CausalFallbacks, p.CausalReads, r1.CausalReads)
	}
	if st, _ := rwpool.Stats(strict); st.Nodes[0].TooStale != 1 {
		t.Errorf("stats: %d reads counted as too stale, want 1", st.Nodes[0].TooStale)
	}
}

// TestSessionReadsStayMonotonic: a session's reads stay on the replica of
// its first read while it is available, so that they never go back in
// time by moving to a replica further behind.
func TestSessionReadsStayMonotonic(t *testing.T) {
	db, _ := openSim(t, "")
	ctx := rwpool.WithSession(context.Background())
	first := simRead(t, db, ctx)
	if first.Role != "replica" {
		t.Fatalf("a session's first read went to %s", first.Node)
	}
	for range 50 {
		if got := simRead(t, db, ctx); got.Node != first.Node {
			t.Fatalf("a session read went to %s (%s) after one on %s", got.Node, got.Reason, first.Node)
		}
	}
	seen := map[string]bool{}
	for range 100 {
		seen[simRead(t, db, context.Background()).Node] = true
	}
	if len(seen) != 2 {
		t.Errorf("reads without a session went to %v, want both replicas", seen)
	}
}

// TestCausalWaitZeroAsksOnce: with causal_wait=0 a PostgreSQL replica is
// asked for its replay position once, not polled.
func TestCausalWaitZeroAsksOnce(t *testing.T) {
	db, cl := openSim(t, "causal_wait=0")
	ctx := rwpool.WithSession(context.Background())
	db.ExecContext(ctx, "UPDATE t SET x = 1")
	simRead(t, db, ctx)
	for _, r := range []string{"/r1", "/r2"} {
		if n := sim.Node(cl + r).Count("pg_last_wal_replay_lsn()"); n != 1 {
			t.Errorf("replica %s asked %d times, want once", r, n)
		}
	}
}

// TestTokenNamingLostWritesIsRebased: a token naming writes no node has
// (a promotion lost them: its position is past the primary's) does not
// make reads wait for them: the first read finds even the primary behind
// it, lowers the session's position to the primary's, and is served by a
// replica that has that; so are the next ones, and the session's token now
// names the primary's position.
func TestTokenNamingLostWritesIsRebased(t *testing.T) {
	for _, fallback := range []string{"primary", "error"} {
		t.Run(fallback, func(t *testing.T) {
			db, cl := openSim(t, "causal_fallback="+fallback)
			db.ExecContext(context.Background(), "UPDATE t SET x = 1") // the primary is at 0x100
			sim.Node(cl + "/r1").SetReplayed(0x100)
			sim.Node(cl + "/r2").SetReplayed(0x100)
			lost, _ := replication.ParseLSN("0/10000")
			ctx, err := rwpool.WithSessionToken(context.Background(), token.Encode(token.Token{Pos: lost}))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				start := time.Now()
				got := simRead(t, db, ctx)
				if got.Role != "replica" || time.Since(start) > time.Second {
					t.Errorf("read %d resuming a token past the primary went to %s (%s) in %s, want a replica at once",
						i, got.Node, got.Reason, time.Since(start))
				}
			}
			tok, err := token.Decode(rwpool.SessionToken(ctx))
			if err != nil || tok.Pos.String() != "0/100" {
				t.Errorf("the rebased session's token names %v (%v), want the primary's 0/100", tok.Pos, err)
			}
		})
	}
}
