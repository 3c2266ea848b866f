package rwpool_test

import (
	"database/sql"
	"testing"
)

// The benchmarks run over the no-op drivers of fakedriver_test.go.

func benchQuery(b *testing.B, db *sql.DB) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var n int
		for pb.Next() {
			if err := db.QueryRow("/* bench */ SELECT 1 FROM t WHERE id = $1", 7).Scan(&n); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkQueryBare(b *testing.B) {
	db, err := sql.Open("rwpool-bench-nop", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	benchQuery(b, db)
}

func BenchmarkQueryRWPool(b *testing.B) {
	db, err := sql.Open("rwpool", "driver=rwpool-bench-nop;primary=p;replica=r")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	benchQuery(b, db)
}
