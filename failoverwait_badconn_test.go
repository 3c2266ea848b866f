package rwpool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// badConnDriver's nodes that are down refuse dials and fail statements
// with driver.ErrBadConn, as lib/pq does when the server closed the
// connection: the cause a node's trip then carries.
var badConnDriver = fakedriver.Register("rwpool-test-badconn-down", fakedriver.Options{
	DialError: func(string) error { return fmt.Errorf("dial: %w", driver.ErrBadConn) },
	DownError: driver.ErrBadConn,
})

// TestFailoverWaitBoundsTheWholeWait (issue #23): while the primary is
// down with driver.ErrBadConn as its cause, a write waits failover_wait
// once and fails with ErrUnavailable. The error must not wrap
// driver.ErrBadConn: database/sql would run the statement again, up to
// three times, each waiting a fresh failover_wait.
func TestFailoverWaitBoundsTheWholeWait(t *testing.T) {
	const wait = 300 * time.Millisecond
	name := t.Name()
	db, err := sql.Open("rwpool", fmt.Sprintf("driver=rwpool-test-badconn-down;primary=%[1]s/p;replica=%[1]s/r;check_interval=50ms;probe_timeout=100ms;failover_wait=%s", name, wait))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	badConnDriver.Node(name + "/p").SetDown(true)
	defer badConnDriver.Node(name + "/p").SetDown(false)
	eventually(t, 5*time.Second, "the primary tripped", func() bool {
		return !nodeStats(t, db, "primary").Available
	})
	for _, write := range []func(context.Context) error{
		func(ctx context.Context) error { _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); return err },
		func(ctx context.Context) error {
			tx, err := db.BeginTx(ctx, nil)
			if err == nil {
				tx.Rollback()
			}
			return err
		},
	} {
		start := time.Now()
		err := write(context.Background())
		took := time.Since(start)
		if !errors.Is(err, rwpool.ErrUnavailable) || errors.Is(err, driver.ErrBadConn) {
			t.Errorf("err %v: want ErrUnavailable, not wrapping driver.ErrBadConn", err)
		}
		if took < wait || took > 2*wait {
			t.Errorf("the write failed after %s, want failover_wait (%s) once, not up to three times", took.Round(time.Millisecond), wait)
		}
	}
}
