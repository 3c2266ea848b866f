package rwpool_test

import (
	"context"
	"errors"
	"io"
	"testing"
)

// Rows read on a pinned lease count their failure against the node, like
// rows read on a borrowed connection: a connection lost mid-result costs
// the pin and starts a confirming probe.
func TestPinnedRowsRecordTheirErrors(t *testing.T) {
	cc := newCtlCluster(t, 1, "")
	ctx := context.Background()
	c, err := cc.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "UPDATE t SET v = 1"); err != nil { // pins the primary
		t.Fatal(err)
	}
	before := cc.stats(t, "primary")
	dials := cc.primary.Dials()
	cc.primary.SetRowsErr(io.ErrUnexpectedEOF)

	rows, err := c.QueryContext(ctx, "SELECT node")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("rows.Err() = %v, want the connection error", err)
	}
	rows.Close()
	cc.primary.SetRowsErr(nil)

	if got := cc.stats(t, "primary").Errors - before.Errors; got != 1 {
		t.Errorf("primary errors grew by %d, want 1", got)
	}
	// (Whether that probe succeeds is not this test's: it may run while
	// the node still fails its rows.)
	waitFor(t, "a confirming probe of the primary", func() bool { return cc.primary.Dials() > dials })
	// The pin held the UPDATE's session (LAST_INSERT_ID, ROW_COUNT...):
	// the lease ends with it instead of going on elsewhere, as on the
	// bare driver.
	var node string
	if err := c.QueryRowContext(ctx, "SELECT node").Scan(&node); err == nil {
		t.Fatalf("the next statement on the lease ran on %s, after its pin broke", node)
	}
}
