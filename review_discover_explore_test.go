package rwpool_test

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool/discovery"
)

func TestReviewExploreModes(t *testing.T) {
	for _, mode := range []string{"query", "prepared", "conn", "hedge"} {
		t.Run(mode, func(t *testing.T) {
			extra := " every=2ms"
			if mode == "hedge" {
				extra += ";hedge_after=1ms"
			}
			rc := openReview(t, t.Name()+"-p", extra, mem("a", 7301), mem("b", 7302))
			for p := 7301; p <= 7304; p++ {
				ctl.Fresh(rc.memberDSN(p))
			}
			if !rc.waitFor("joined", 5*time.Second, func() bool { return len(rc.discovered()) == 2 }) {
				t.Fatal("no join")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			var stmt *sql.Stmt
			if mode == "prepared" {
				var err error
				if stmt, err = rc.db.PrepareContext(ctx, "SELECT node"); err != nil {
					t.Fatal(err)
				}
				defer stmt.Close()
			}
			var wg sync.WaitGroup
			var n, failed atomic.Int64
			var firstErr atomic.Pointer[error]
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var cn *sql.Conn
					if mode == "conn" {
						cn, _ = rc.db.Conn(ctx)
						if cn == nil {
							return
						}
						defer cn.Close()
					}
					for ctx.Err() == nil {
						var where string
						var err error
						switch mode {
						case "query", "hedge":
							err = rc.db.QueryRowContext(ctx, "SELECT node").Scan(&where)
						case "prepared":
							err = stmt.QueryRowContext(ctx).Scan(&where)
						case "conn":
							err = cn.QueryRowContext(ctx, "SELECT node").Scan(&where)
						}
						if ctx.Err() != nil {
							return
						}
						n.Add(1)
						if err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, &err)
						}
					}
				}()
			}
			sets := [][]discovery.Member{{mem("a", 7301), mem("b", 7302)}, {mem("c", 7303), mem("d", 7304)}}
			for i := 0; ctx.Err() == nil; i++ {
				rc.src.set(nil, sets[i%2]...)
				time.Sleep(4 * time.Millisecond)
			}
			wg.Wait()
			if failed.Load() != 0 {
				t.Errorf("%d of %d failed; first %v", failed.Load(), n.Load(), *firstErr.Load())
			} else {
				t.Logf("%d reads ok", n.Load())
			}
		})
	}
}
