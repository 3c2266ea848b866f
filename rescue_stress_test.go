package rwpool_test

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Stress: many readers, hedge_after=1ms, replicas hanging on and off;
// -race and goleak (TestMain) judge.
func TestStressHedgeRescue(t *testing.T) {
	cc := newCtlCluster(t, 2, "hedge_after=1ms;hedge_budget=100%")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(20+(g*7+i)%80)*time.Millisecond)
				if g%3 == 0 {
					// two queries at once on one *sql.Conn
					conn, err := cc.db.Conn(ctx)
					if err == nil {
						r1, err1 := conn.QueryContext(ctx, "SELECT node")
						r2, err2 := conn.QueryContext(ctx, "SELECT node")
						if err1 == nil {
							for r1.Next() {
							}
							r1.Close()
						}
						if err2 == nil {
							for r2.Next() {
							}
							r2.Close()
						}
						conn.Close()
					}
				} else {
					var node string
					cc.db.QueryRowContext(ctx, "SELECT node").Scan(&node)
				}
				cancel()
			}
		}()
	}
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		cc.replicas[i%2].SetHang(i%3 != 0)
		time.Sleep(37 * time.Millisecond)
	}
	cc.replicas[0].SetHang(false)
	cc.replicas[1].SetHang(false)
	close(stop)
	wg.Wait()
	for _, n := range []string{"replica1", "replica2"} {
		st := cc.stats(t, n)
		t.Logf("%s: hedges %d wins %d refused %d errors %d closedBroken %d", n, st.Hedges, st.HedgeWins, st.HedgesRefused, st.Errors, st.ClosedBroken)
	}
}
