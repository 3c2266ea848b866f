package rwpool

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
)

// BenchmarkReadContext measures a plain read's cost over the no-op driver
// as a driver that honours contexts (mysql, pgx) sees it: with a context
// that can end, a read is watched for rescue (rescue.go); with one that
// cannot, it is not. Compare with the bare driver, run the same way.
func BenchmarkReadContext(b *testing.B) { benchBareAndRWPool(b, "rwpool-bench-nop", benchRead) }

// benchBareAndRWPool runs run over the driver registered as driverName,
// bare and through rwpool (as a driver that honours contexts), with a
// context that can end and with one that cannot.
func benchBareAndRWPool(b *testing.B, driverName string, run func(*testing.B, *sql.DB, context.Context)) {
	deadline, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{{"deadline", deadline}, {"background", context.Background()}} {
		b.Run("bare/"+bc.name, func(b *testing.B) {
			db, err := sql.Open(driverName, "")
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			run(b, db, bc.ctx)
		})
		b.Run("rwpool/"+bc.name, func(b *testing.B) {
			db := openHonouring(b, "driver="+driverName+";primary=p;replica=r")
			defer db.Close()
			run(b, db, bc.ctx)
		})
	}
}

func benchRead(b *testing.B, db *sql.DB, ctx context.Context) {
	b.ReportAllocs()
	var n int
	cpu0, cpuOK := processCPU()
	i := 0
	for b.Loop() {
		if err := db.QueryRowContext(ctx, "SELECT 1 FROM t WHERE id = $1", 7).Scan(&n); err != nil {
			b.Fatal(err)
		}
		i++
	}
	// The process's CPU time per read (the watcher's goroutine included):
	// steadier than wall time on a machine shared with other jobs.
	if cpu1, ok := processCPU(); ok && cpuOK && i > 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(i), "cpu-ns/op")
	}
}

// honoursContext makes a Connector treat its driver as one that honours
// contexts (mysql, pgx), before any goroutine of its starts.
func honoursContext(c *Connector) { c.watch = false }

// openHonouring opens the rwpool DSN s as for a driver that honours
// contexts (honoursContext); the caller closes the *sql.DB.
func openHonouring(tb testing.TB, s string) *sql.DB {
	tb.Helper()
	cfg, err := dsn.Parse(s)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := NewConnector(cfg, honoursContext)
	if err != nil {
		tb.Fatal(err)
	}
	return sql.OpenDB(c)
}

// BenchmarkReadWatched measures a read with a deadline over the no-op
// driver as rwpool runs it for a driver that may block past a context's
// end (lib/pq, and any driver driverinfo does not know to honour
// contexts): each call runs on a goroutine the read can abandon (watch.go).
// bare is the same driver used directly.
func BenchmarkReadWatched(b *testing.B) {
	deadline, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.Run("bare", func(b *testing.B) {
		db, err := sql.Open("rwpool-bench-nop", "")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		benchRead(b, db, deadline)
	})
	b.Run("rwpool", func(b *testing.B) {
		db, err := sql.Open("rwpool", "driver=rwpool-bench-nop;primary=p;replica=r")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		benchRead(b, db, deadline)
	})
}
