package rwpool_test

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

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
