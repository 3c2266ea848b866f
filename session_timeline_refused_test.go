package rwpool_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// A PostgreSQL server (or role) on which pg_walfile_name() is refused, as
// readStatus anticipates ("a role that may not read the timeline ... or a
// server that only speaks PostgreSQL's protocol"): the status query falls
// back to positions without timelines, and pg_current_wal_lsn() alone
// still works.
var noWalfileFake = fakedriver.Register("rwpool-test-postgres-nowalfile", fakedriver.Options{
	Replication: true, Record: true,
	Fail: func(dsn, q string) error {
		if strings.Contains(q, "pg_walfile_name") {
			return &fakedriver.PostgresError{Code: "42501", Message: "permission denied for function pg_walfile_name"}
		}
		return nil
	},
})

// TestSessionPositionWithoutWalfileName: with the timeline unreadable, a
// session's write must still get its position (without a timeline, as the
// status falls back to), so that a replica that replayed the write serves
// the session's read.
func TestSessionPositionWithoutWalfileName(t *testing.T) {
	name := t.Name()
	noWalfileFake.Fresh(name + "/p")
	noWalfileFake.Fresh(name + "/r1").SetReplayed(0)
	db, err := sql.Open("rwpool", fmt.Sprintf("driver=rwpool-test-postgres-nowalfile;primary=%[1]s/p;replica=%[1]s/r1;check_interval=1h", name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rwpool.LearnEndpoints(db)
	ctx := rwpool.WithSession(context.Background())
	if _, err := db.ExecContext(ctx, "UPDATE t SET x = 1"); err != nil {
		t.Fatal(err)
	}
	noWalfileFake.Node(name + "/r1").SetReplayed(0x100) // the replica has the write
	var r rwpool.Route
	var node string
	if err := db.QueryRowContext(rwpool.WithRoute(ctx, &r), "SELECT node").Scan(&node); err != nil {
		t.Fatal(err)
	}
	if r.Role != "replica" {
		t.Errorf("the session read went to %s (%s), want the replica, which replayed the write; primary ran %q",
			r.Node, r.Reason, noWalfileFake.Node(name+"/p").Statements())
	}
}
