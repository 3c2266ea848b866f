package rwpool_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/rwpool/rwpool"
)

// TestSessionWrote: a session has written after a write or a committed
// transaction that wrote; not after reads, a resumed token, a failed
// write or a transaction rolled back, even though reads and tokens move
// its token.
func TestSessionWrote(t *testing.T) {
	db, cl := openSim(t, "causal_wait=0")
	if rwpool.SessionWrote(context.Background()) {
		t.Error("a context without a session wrote")
	}
	w := rwpool.WithSession(context.Background())
	if _, err := db.ExecContext(w, "UPDATE t SET x = 1"); err != nil {
		t.Fatal(err)
	}
	if !rwpool.SessionWrote(w) {
		t.Error("a session that wrote did not")
	}

	sim.Node(cl + "/r1").SetReplayed(0x100)
	sim.Node(cl + "/r2").SetReplayed(0x100)
	ctx, err := rwpool.WithSessionToken(context.Background(), rwpool.SessionToken(w))
	if err != nil {
		t.Fatal(err)
	}
	simRead(t, db, ctx)
	if rwpool.SessionToken(ctx) == "" || rwpool.SessionWrote(ctx) {
		t.Errorf("a session that resumed a token and read: token %q, wrote %v; want a token, no write", rwpool.SessionToken(ctx), rwpool.SessionWrote(ctx))
	}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx.ExecContext(ctx, "UPDATE t SET x = 2")
	tx.Rollback()
	if rwpool.SessionWrote(ctx) {
		t.Error("a session whose transaction rolled back wrote")
	}
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx.ExecContext(ctx, "UPDATE t SET x = 3")
	if rwpool.SessionWrote(ctx) {
		t.Error("a session wrote before its transaction committed")
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if !rwpool.SessionWrote(ctx) {
		t.Error("a session whose transaction committed a write did not write")
	}
}

// A request hands its session's token to the client only if it wrote:
// reads move a session's token too (what they saw), and handing that back
// after every read would change the client's token on nearly every
// response.
func ExampleSessionWrote() {
	db, other := exampleCluster("example-wrote")
	defer db.Close()
	defer other.Close()

	ctx := rwpool.WithSession(context.Background())
	var status string
	db.QueryRowContext(ctx, "SELECT status FROM orders WHERE id = 7").Scan(&status)
	fmt.Println("after a read:", rwpool.SessionWrote(ctx))
	if _, err := db.ExecContext(ctx, "UPDATE orders SET status = 'paid' WHERE id = 7"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("after a write:", rwpool.SessionWrote(ctx))
	if rwpool.SessionWrote(ctx) {
		fmt.Println("token to hand back:", rwpool.SessionToken(ctx) != "")
	}
	// Output:
	// after a read: false
	// after a write: true
	// token to hand back: true
}
