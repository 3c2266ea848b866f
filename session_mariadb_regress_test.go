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

// On MariaDB, a session write whose rows were open (INSERT … RETURNING) has
// its position read at the session's next read, on whichever primary
// connection is free: @@last_gtid there is that connection's own last
// write, an older one, so a replica that has only the older one served the
// read without the session's row. The position is now the binlog's.
// Found by TestSimulation (session-read after session-returning).
func TestMariaDBPendingWritePositionIsGlobal(t *testing.T) {
	cl := simcluster.New(t.Name(), simcluster.MariaDB, 2, 1)
	defer cl.Close()
	db, err := sql.Open("rwpool", fmt.Sprintf("driver=%s;primary=%s;replica=%s;check_interval=1h;pool_size=2",
		simcluster.MariaDBDriver, cl.DSN("s0"), cl.DSN("s1")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Primary connection A writes row 1 (its @@last_gtid), held by a lease
	// while the session writes row 2 on connection B.
	a, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if !cl.Has("s1", 1) {
		t.Fatal("the replica lacks row 1")
	}
	cl.Delay("s1", time.Hour) // row 2 never reaches it
	sess := rwpool.WithSession(ctx)
	var id int64
	if err := db.QueryRowContext(sess, "INSERT INTO t VALUES (2) RETURNING id").Scan(&id); err != nil {
		t.Fatal(err)
	}
	a.Close() // A idle again, the most recently released
	var r rwpool.Route
	err = db.QueryRowContext(rwpool.WithRoute(sess, &r), "SELECT id FROM t WHERE id = ?", int64(2)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("the session read missed its own write: served by %s (%s)", r.Node, r.Reason)
	}
	if err != nil {
		t.Fatal(err)
	}
}
