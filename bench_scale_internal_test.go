package rwpool

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkReadReplicas measures how a read's cost grows with the number
// of replicas (issue #25: it must not grow beyond the pick's own), over
// the no-op driver as a driver that honours contexts, with a context that
// cannot end; and what a Connector of that many nodes holds in memory
// (connector-B, measured once per size from the heap before and after
// opening it, before any statement).
func BenchmarkReadReplicas(b *testing.B) {
	for _, n := range []int{1, 2, 8, 32, 64} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			var s strings.Builder
			s.WriteString("driver=rwpool-bench-nop;primary=p;check_interval=1h")
			for i := range n {
				fmt.Fprintf(&s, ";replica=r%d", i+1)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			db := openHonouring(b, s.String())
			defer db.Close()
			runtime.GC()
			runtime.ReadMemStats(&after)
			benchRead(b, db, context.Background())
			b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "connector-B")
		})
	}
}

// BenchmarkReadGoroutines measures how a read's cost grows with the
// goroutines sharing one *sql.DB (issue #25): 1 to 1,024 goroutines, each
// reading in a loop with a context that can end (the production case,
// watched for rescue), over the no-op driver with 64 connections
// (pool_size=64 and database/sql's own limits at 64, bare the same). It
// reports, beside ns/op (wall time per read across all goroutines):
//
//   - cpu-ns/op: the process's CPU time per read, every goroutine of
//     database/sql's and rwpool's included: its inverse is the throughput
//     per core;
//   - p99-ns: the 99th percentile of one read's time as its goroutine saw
//     it (over every 8th read), which waiting for one of the 64
//     connections dominates beyond 64 goroutines.
//
// Run with -mutexprofile to see which locks the goroutines contend on.
func BenchmarkReadGoroutines(b *testing.B) {
	const conns = 64
	deadline, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, g := range []int{1, 8, 64, 512, 1024} {
		for _, mode := range []string{"bare", "rwpool"} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", mode, g), func(b *testing.B) {
				var db *sql.DB
				if mode == "bare" {
					var err error
					if db, err = sql.Open("rwpool-bench-nop", ""); err != nil {
						b.Fatal(err)
					}
				} else {
					db = openHonouring(b, fmt.Sprintf("driver=rwpool-bench-nop;primary=p;replica=r1;replica=r2;pool_size=%d", conns))
				}
				defer db.Close()
				db.SetMaxOpenConns(conns)
				db.SetMaxIdleConns(conns)
				// Every 8th read's time is kept, in room taken before the
				// timer starts (so it adds no allocation to the reads'), for
				// an exact p99 of the sample.
				const every = 8
				samples := make([][]time.Duration, g)
				for i := range samples {
					samples[i] = make([]time.Duration, 0, b.N/g/every+2)
				}
				b.ReportAllocs()
				cpu0, cpuOK := processCPU()
				b.ResetTimer()
				// g goroutines share b.N reads (RunParallel could only
				// start a multiple of GOMAXPROCS).
				var next atomic.Int64
				var wg sync.WaitGroup
				for i := range g {
					wg.Go(func() {
						var n int
						mine := samples[i]
						for k := 0; next.Add(1) <= int64(b.N); k++ {
							t0 := time.Now()
							if err := db.QueryRowContext(deadline, "SELECT 1 FROM t WHERE id = $1", 7).Scan(&n); err != nil {
								b.Error(err)
								return
							}
							if k%every == 0 && len(mine) < cap(mine) {
								mine = append(mine, time.Since(t0))
							}
						}
						samples[i] = mine
					})
				}
				wg.Wait()
				b.StopTimer()
				if cpu1, ok := processCPU(); ok && cpuOK {
					b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
				}
				all := slices.Concat(samples...)
				if len(all) > 0 {
					slices.Sort(all)
					b.ReportMetric(float64(all[(len(all)-1)*99/100]), "p99-ns")
				}
			})
		}
	}
}
