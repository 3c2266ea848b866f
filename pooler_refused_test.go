package rwpool_test

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// poolerFails is how many of the primary's next INSERTs fail with
// poolerErr, per test (keyed by the primary's DSN).
var (
	poolerFails atomic.Int64
	poolerErr   atomic.Pointer[fakedriver.PostgresError]
	poolerCalls atomic.Int64
)

// poolerDriver's primary fails INSERTs as a PgBouncer in front of it does:
// with SQLSTATE 08P01 and the pooler's own message (pgx keeps both).
var poolerDriver = fakedriver.Register("rwpool-test-pooler", fakedriver.Options{
	Record: true,
	Fail: func(dsn, query string) error {
		if !strings.HasSuffix(dsn, "/p") || !strings.HasPrefix(query, "INSERT") {
			return nil
		}
		poolerCalls.Add(1)
		if poolerFails.Add(-1) >= 0 {
			return poolerErr.Load()
		}
		return nil
	},
})

// TestPoolerRefusalIsRunAgain (issue #23): a write that PgBouncer refused
// before giving it to any server ("server login has been failing",
// "query_wait_timeout") was certainly not applied. rwpool runs it again
// instead of reporting ErrOutcomeUnknown; a write PgBouncer lost after a
// server got it ("server conn crashed?") stays unknown and is never sent
// twice.
func TestPoolerRefusalIsRunAgain(t *testing.T) {
	for _, tc := range []struct {
		msg     string
		fails   int64
		unknown bool // the write's outcome is unknown: one attempt, ErrOutcomeUnknown
	}{
		{"server login has been failing, try again later (server_login_retry)", 2, false},
		{"query_wait_timeout", 1, false},
		{"pgbouncer cannot connect to server", 3, false},
		{"server conn crashed?", 1, true},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			name := t.Name()
			db, err := sql.Open("rwpool", fmt.Sprintf("driver=rwpool-test-pooler;primary=%[1]s/p;replica=%[1]s/r;check_interval=1h", name))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			poolerErr.Store(&fakedriver.PostgresError{Code: "08P01", Message: tc.msg})
			poolerFails.Store(tc.fails)
			poolerCalls.Store(0)
			_, err = db.Exec("INSERT INTO t VALUES (1)")
			applied := poolerDriver.Node(name + "/p").Count("INSERT")
			if tc.unknown {
				if !errors.Is(err, rwpool.ErrOutcomeUnknown) || poolerCalls.Load() != 1 || applied != 0 {
					t.Fatalf("err %v after %d attempts (%d applied): want ErrOutcomeUnknown after one", err, poolerCalls.Load(), applied)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v after %d attempts: want the write run again until the pooler takes it", err, poolerCalls.Load())
			}
			if applied != 1 || poolerCalls.Load() != tc.fails+1 {
				t.Errorf("applied %d times in %d attempts, want once in %d", applied, poolerCalls.Load(), tc.fails+1)
			}
		})
	}
}

// poolerUntil is when poolerTimedDriver's primary stops refusing INSERTs
// (UnixNano).
var poolerUntil atomic.Int64

var poolerTimedDriver = fakedriver.Register("rwpool-test-pooler-timed", fakedriver.Options{
	Record: true,
	Fail: func(dsn, query string) error {
		if !strings.HasSuffix(dsn, "/p") || !strings.HasPrefix(query, "INSERT") || time.Now().UnixNano() >= poolerUntil.Load() {
			return nil
		}
		return &fakedriver.PostgresError{Code: "08P01", Message: "server login has been failing, try again later (server_login_retry)"}
	},
})

// With failover_wait, a write a pooler refused waits for the primary's
// next change before it runs again, as after a refused borrow. A
// PgBouncer whose server is dead refuses every new connection ("server
// login has been failing") until rwpool trips the node; run again at
// once, the write used up its attempts in milliseconds and failed with
// seconds of failover_wait left (CI: TestIntegrationFollowPromotion
// through PgBouncer with pgx). Here the pooler refuses for 400 ms.
func TestPoolerRefusalWaitsWithFailoverWait(t *testing.T) {
	name := t.Name()
	db, err := sql.Open("rwpool", fmt.Sprintf("driver=rwpool-test-pooler-timed;primary=%[1]s/p;replica=%[1]s/r;check_interval=1h;failover_wait=5s", name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("INSERT INTO t VALUES (0)"); err != nil {
		t.Fatalf("a write before the refusals: %v", err)
	}
	poolerUntil.Store(time.Now().Add(400 * time.Millisecond).UnixNano())
	start := time.Now()
	if _, err := db.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatalf("a write refused by the pooler for 400 ms, with failover_wait=5s, failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	}
	if got := poolerTimedDriver.Node(name + "/p").Count("INSERT"); got != 2 {
		t.Errorf("the primary applied %d INSERTs, want 2", got)
	}
	t.Logf("the write went through %s after the pooler's first refusal", time.Since(start).Round(time.Millisecond))
}
