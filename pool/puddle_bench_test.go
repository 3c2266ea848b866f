package pool

import (
	"context"
	"runtime"
	"testing"

	"github.com/jackc/puddle/v2"
)

// The same workloads on github.com/jackc/puddle/v2, pgx's pool, so one
// `go test -bench . ./pool/` run compares the two on the same machine:
//
//	go test -run '^$' -bench 'AcquireRelease|Puddle' -count 10 ./pool/ | benchstat -

func newPuddle(b *testing.B, size int32) *puddle.Pool[int] {
	b.Helper()
	p, err := puddle.NewPool(&puddle.Config[int]{
		Constructor: func(context.Context) (int, error) { return 1, nil },
		Destructor:  func(int) {},
		MaxSize:     size,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return p
}

// BenchmarkPuddleAcquireRelease is BenchmarkAcquireReleaseNoTimeouts on puddle.
func BenchmarkPuddleAcquireRelease(b *testing.B) {
	p := newPuddle(b, 16)
	ctx := context.Background()
	r, err := p.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	r.Release()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r, err := p.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
}

// BenchmarkPuddleAcquireReleaseParallel is BenchmarkAcquireReleaseParallel
// on puddle: 64 goroutines over 16 resources.
func BenchmarkPuddleAcquireReleaseParallel(b *testing.B) {
	const goroutines, conns = 64, 16
	p := newPuddle(b, conns)
	ctx := context.Background()
	b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, err := p.Acquire(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			r.Release()
		}
	})
}
