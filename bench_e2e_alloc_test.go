package rwpool_test

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// BenchmarkE2EAllocs measures what one read costs the client on the real
// drivers (lib/pq, pgx, go-sql-driver/mysql), one goroutine, with the
// per-request deadline applications give their reads (the case rwpool
// watches for rescue and suspicion): allocations and bytes per read, bare
// driver against rwpool. Run it with the clusters up:
//
//	go test -run '^$' -bench E2EAllocs -benchmem -count 5 .
func BenchmarkE2EAllocs(b *testing.B) {
	for _, cl := range realClusters(b) {
		bare, rw := openE2E(b, cl)
		for _, v := range []struct {
			name string
			db   *sql.DB
		}{{"bare", bare}, {"rwpool", rw}} {
			b.Run(cl.Name+"/"+v.name, func(b *testing.B) {
				var n int
				if err := v.db.QueryRow("SELECT 1").Scan(&n); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					err := v.db.QueryRowContext(ctx, "SELECT 1").Scan(&n)
					cancel()
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		bare.Close()
		rw.Close()
	}
}
