package rwpool

import (
	"context"
	"database/sql/driver"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool/internal/driverinfo"
	"github.com/rwpool/rwpool/pool"
)

// needsWatch reports whether the real driver may block past a context's
// end on a hung server, so that rwpool must bound its calls itself: every
// driver not known to honour contexts (driverinfo.HonoursContext), lib/pq
// among them.
func needsWatch(driverName string) bool { return !driverinfo.HonoursContext(driverName) }

// watches reports whether a call bounded by ctx must run in a goroutine
// (watched): the driver may block past a context's end (needsWatch) and
// ctx can end. Callers test it before building the closure watched takes,
// so that an inline call allocates nothing.
func (c *Connector) watches(ctx context.Context) bool { return c.watch && ctx.Done() != nil }

// execWatched runs execReal on pc, bounded by ctx even when the driver
// ignores ctx.
func execWatched(c *Connector, ctx context.Context, pc *pool.Conn, query string, args []driver.NamedValue) (driver.Result, error) {
	if !c.watches(ctx) {
		return execReal(ctx, pc.Raw(), query, args)
	}
	_, res, err := c.callWatched(ctx, pc, query, args, true)
	return res, err
}

// queryWatched runs queryReal on pc and wraps its rows, bounded by ctx like
// execWatched.
func queryWatched(c *Connector, ctx context.Context, pc *pool.Conn, query string, args []driver.NamedValue) (*rows, error) {
	if !c.watches(ctx) {
		return queryRows(ctx, pc, query, args)
	}
	rs, _, err := c.callWatched(ctx, pc, query, args, false)
	return rs, err
}

func queryRows(ctx context.Context, pc *pool.Conn, query string, args []driver.NamedValue) (*rows, error) {
	rs, st, err := queryReal(ctx, pc.Raw(), query, args)
	if err != nil {
		return nil, err
	}
	if rc, ok := ctx.(*readCtx); ok && !rc.ownUsed {
		// A read's one call: its rows come with its readCtx.
		rc.ownUsed = true
		rc.own.rs, rc.own.st = rs, st
		return &rc.own, nil
	}
	return &rows{rs: rs, st: st}, nil
}

// watched runs f, which uses pc, in a goroutine bounded by ctx (await):
// when ctx ends first the caller gets errAbandoned, and pc is destroyed
// once f lets go of it (after discard cleaned up what f returned).
func watched[T any](c *Connector, ctx context.Context, pc *pool.Conn, f func() (T, error), discard func(T)) (T, error) {
	return await(&c.bg, ctx, f, func(v T, err error) {
		if err == nil && discard != nil {
			discard(v)
		}
		pc.Destroy()
	})
}

// await runs f in a goroutine of bg's and waits for it or for ctx to
// end, whichever comes first. When ctx ends first it returns errAbandoned
// at once, and the goroutine hands f's result to cleanup when f finally
// returns. A lost race between the two is resolved by one compare-and-swap,
// so f's result is either returned or cleaned up, never both or neither.
func await[T any](bg *background, ctx context.Context, f func() (T, error), cleanup func(T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	var state atomic.Int32 // 0 running, 1 finished, 2 abandoned
	done := make(chan result, 1)
	if !bg.Go(func() {
		v, err := f()
		if state.CompareAndSwap(0, 1) {
			done <- result{v, err}
			return
		}
		cleanup(v, err)
	}) {
		var zero T
		return zero, ErrClosed
	}
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		if state.CompareAndSwap(0, 2) {
			var zero T
			return zero, errAbandoned
		}
		r := <-done
		return r.v, r.err
	}
}

// background owns a Connector's goroutines: the health checkers, and the
// short-lived ones (watched calls, confirming probes, fences, resets). It
// refuses new ones once Close has begun, so that Close's wait never races
// a start (statements on a *sql.Conn may still run while the *sql.DB
// closes).
type background struct {
	mu      sync.RWMutex
	closing bool
	wg      sync.WaitGroup
}

// Go runs f in a goroutine of b's, unless b is closing; it reports whether
// it did.
func (b *background) Go(f func()) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closing {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
	return true
}

// close refuses new goroutines and waits for the running ones, at most d.
func (b *background) close(d time.Duration) {
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
	waitBounded(&b.wg, d)
}

// monoStart anchors monoNow.
var monoStart = time.Now()

// monoNow returns nanoseconds on the monotonic clock, for rate limits: a
// step of the system clock (NTP) must not suppress probes for as long as
// the step. It starts a day in, so that 0 ("never") is older than any
// limit from the process's first moment.
func monoNow() int64 { return int64(time.Since(monoStart) + 24*time.Hour) }

// once reports whether last (a monoNow, 0 for never) is at least every
// ago, and if so sets it to now: true for one caller per every, however
// many race.
func once(last *atomic.Int64, every time.Duration) bool {
	now := monoNow()
	prev := last.Load()
	return now-prev >= int64(every) && last.CompareAndSwap(prev, now)
}
