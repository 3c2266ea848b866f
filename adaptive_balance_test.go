package rwpool_test

// Review (scratch): balance=adaptive with read-only transactions.

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

var rwtestSlow atomic.Bool

func init() {
	fakedriver.Register("rwpool-rwtest-adaptive", fakedriver.Options{Fail: func(dsn, _ string) error {
		if dsn == "rwtest-r1" && rwtestSlow.Load() {
			time.Sleep(50 * time.Millisecond) // the replica's latency, not synchronisation
		}
		return nil
	}})
}

// load runs 8 readers for d, each a plain read or a read-only
// transaction, and counts the reads each node served.
func rwtestLoad(t *testing.T, db *sql.DB, d time.Duration, tx bool) map[string]int {
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	ctx := context.Background()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				var node string
				var err error
				if tx {
					var x *sql.Tx
					if x, err = db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}); err == nil {
						err = x.QueryRowContext(ctx, "SELECT node").Scan(&node)
						x.Commit()
					}
				} else {
					err = db.QueryRowContext(ctx, "SELECT node").Scan(&node)
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[node]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return got
}

// A replica that was slow and recovered gets its share back within about
// balance.ProbeEvery (README). With readonly_tx=replica, read-only
// transactions are placed by the adaptive picker (its costs and its
// probes) but never measured: a recovered replica keeps its old estimate
// while the traffic is transactions.
func TestAdaptiveRecoveryUnderReadOnlyTransactions(t *testing.T) {
	db, err := sql.Open("rwpool", "driver=rwpool-rwtest-adaptive;primary=rwtest-p;replica=rwtest-r1;replica=rwtest-r2;balance=adaptive;readonly_tx=replica;breaker=off")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rwtestSlow.Store(true)
	t.Logf("slow, plain reads: %v", rwtestLoad(t, db, time.Second, false))
	rwtestSlow.Store(false)
	rwtestLoad(t, db, time.Second, true) // recovery: ProbeEvery twice over
	got := rwtestLoad(t, db, time.Second, true)
	s, _ := rwpool.Stats(db)
	for _, n := range s.Nodes {
		t.Logf("%s: BalanceLatency %s", n.Name, n.BalanceLatency)
	}
	share := float64(got["rwtest-r1"]) / float64(got["rwtest-r1"]+got["rwtest-r2"])
	t.Logf("recovered, read-only transactions: %v (r1 share %.1f%%)", got, 100*share)
	if share < 0.3 {
		t.Errorf("recovered replica gets %.1f%% of read-only transactions 1 s after its recovery, want about 50%%", 100*share)
	}
}

// Control: the same with plain reads after the recovery.
func TestAdaptiveRecoveryUnderPlainReads(t *testing.T) {
	db, err := sql.Open("rwpool", "driver=rwpool-rwtest-adaptive;primary=rwtest-p;replica=rwtest-r1;replica=rwtest-r2;balance=adaptive;readonly_tx=replica;breaker=off")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rwtestSlow.Store(true)
	rwtestLoad(t, db, time.Second, false)
	rwtestSlow.Store(false)
	rwtestLoad(t, db, time.Second, false)
	got := rwtestLoad(t, db, time.Second, false)
	share := float64(got["rwtest-r1"]) / float64(got["rwtest-r1"]+got["rwtest-r2"])
	t.Logf("recovered, plain reads: %v (r1 share %.1f%%)", got, 100*share)
	if share < 0.3 {
		t.Errorf("r1 share %.1f%%", 100*share)
	}
}
