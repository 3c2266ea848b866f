package rwpool_test

// Review (scratch): balance=adaptive and a replica that fails fast.

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/fakedriver"
)

func init() {
	fakedriver.Register("rwpool-rwtest-blackhole", fakedriver.Options{Fail: func(dsn, q string) error {
		if q != "SELECT node" {
			return nil // probes pass: the server is up
		}
		switch dsn {
		case "rwtest-bh-r1":
			// Every read fails at once with an SQL error (schema drift,
			// out of memory, a broken relation...): not a connection error.
			return errors.New("ERROR: relation \"t\" does not exist (SQLSTATE 42P01)")
		case "rwtest-bh-r2":
			time.Sleep(10 * time.Millisecond) // the healthy replica's latency, not synchronisation
		}
		return nil
	}})
}

func rwtestFailShare(t *testing.T, balance string) float64 {
	db, err := sql.Open("rwpool", "driver=rwpool-rwtest-blackhole;primary=rwtest-bh-p;replica=rwtest-bh-r1;replica=rwtest-bh-r2;balance="+balance)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mu sync.Mutex
	ok, failed := 0, 0
	var wg sync.WaitGroup
	end := time.Now().Add(1500 * time.Millisecond)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				var node string
				err := db.QueryRowContext(context.Background(), "SELECT node").Scan(&node)
				mu.Lock()
				if err != nil {
					failed++
				} else {
					ok++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	share := float64(failed) / float64(ok+failed)
	t.Logf("balance=%s: %d reads failed, %d succeeded (%.1f%% failed)", balance, failed, ok, 100*share)
	return share
}

// With weighted balance, a replica that fails every read fast costs its
// share of the reads (half). Adaptive must not make it more: its fast
// failures are no evidence that it serves reads well.
func TestAdaptiveDoesNotFeedAFastFailingReplica(t *testing.T) {
	w := rwtestFailShare(t, "weighted")
	a := rwtestFailShare(t, "adaptive")
	if a > w+0.15 {
		t.Errorf("balance=adaptive: %.1f%% of reads failed on the fast-failing replica, weighted: %.1f%%", 100*a, 100*w)
	}
}
