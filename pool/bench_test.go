package pool

import (
	"context"
	"runtime"
	"testing"
	"time"
)

func benchPool(b *testing.B, cfg Config) *Pool {
	b.Helper()
	cfg.Name = "bench"
	cfg.Connector = &fakeConnector{}
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// BenchmarkAcquireRelease is the uncontended hot path with a realistic
// configuration (idle timeout and lifetime on, so the clock is read).
func BenchmarkAcquireRelease(b *testing.B) {
	p := benchPool(b, Config{MaxOpen: 16, IdleTimeout: 5 * time.Minute, MaxLifetime: 30 * time.Minute})
	ctx := context.Background()
	mustAcquireB(b, p, ctx).Release()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := p.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		c.Release()
	}
}

// BenchmarkAcquireReleaseNoTimeouts is the hot path without a clock read.
func BenchmarkAcquireReleaseNoTimeouts(b *testing.B) {
	p := benchPool(b, Config{MaxOpen: 16})
	ctx := context.Background()
	mustAcquireB(b, p, ctx).Release()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := p.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		c.Release()
	}
}

// BenchmarkAcquireReleaseParallel runs 64 goroutines over 16 connections,
// so most Acquire calls queue and are served by hand-off.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	const goroutines, conns = 64, 16
	p := benchPool(b, Config{
		MaxOpen: conns, MaxWaiters: goroutines,
		AcquireTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute, MaxLifetime: 30 * time.Minute,
	})
	ctx := context.Background()
	b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c, err := p.Acquire(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			c.Release()
		}
	})
}

func mustAcquireB(b *testing.B, p *Pool, ctx context.Context) *Conn {
	c, err := p.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
