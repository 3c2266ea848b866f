package rwpool_test

import (
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkE2E compares, on the real test clusters, `SELECT 1` through the
// bare driver (database/sql straight to one replica) with the same through
// rwpool (primary plus one replica, so every read lands on that replica),
// at 1, 8 and 64 goroutines, for lib/pq and go-sql-driver/mysql. Besides
// ns/op it reports p50 and p99 latency. Run it with the clusters up:
//
//	go test -run '^$' -bench E2E -benchtime 5s -count 5 . | tee new.txt
//	benchstat new.txt
func BenchmarkE2E(b *testing.B) {
	for _, cl := range realClusters(b) {
		if cl.Name == "pgx" {
			continue
		}
		bare, rw := openE2E(b, cl)
		for _, g := range []int{1, 8, 64} {
			for _, v := range []struct {
				name string
				db   *sql.DB
			}{{"bare", bare}, {"rwpool", rw}} {
				v.db.SetMaxIdleConns(g)
				b.Run(fmt.Sprintf("%s/g%d/%s", cl.Name, g, v.name), func(b *testing.B) {
					benchSelect1(b, v.db, g)
				})
			}
		}
		bare.Close()
		rw.Close()
	}
}

func benchSelect1(b *testing.B, db *sql.DB, goroutines int) {
	// Warm both pools so dials are not measured.
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int
			db.QueryRow("SELECT 1").Scan(&n)
		}()
	}
	wg.Wait()
	per := make([][]time.Duration, goroutines)
	var next sync.Mutex
	i := 0
	b.ReportAllocs()
	b.ResetTimer()
	for w := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int
			for {
				next.Lock()
				if i >= b.N {
					next.Unlock()
					return
				}
				i++
				next.Unlock()
				start := time.Now()
				if err := db.QueryRow("SELECT 1").Scan(&n); err != nil {
					b.Error(err)
					return
				}
				per[w] = append(per[w], time.Since(start))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	all := slices.Concat(per...)
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(all[(len(all)-1)*99/100].Microseconds()), "p99-µs")
	}
}

// openE2E opens the bare driver on replica1 and rwpool over the primary
// and replica1 (so every read lands on the same server); the caller
// closes both.
func openE2E(b *testing.B, cl *cluster) (bare, rw *sql.DB) {
	replica := cl.Replicas[0]
	bare, err := sql.Open(cl.Driver, cl.NodeDSN(replica))
	if err != nil {
		b.Fatal(err)
	}
	rw, err = sql.Open("rwpool", cl.DSNOver(cl.Primary, []string{replica}, ""))
	if err != nil {
		b.Fatal(err)
	}
	return bare, rw
}
