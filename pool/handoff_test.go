package pool

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// waitParked waits until n Acquire calls are parked in waitLocked's select.
// Once parked, a waiter's select commits to whichever case fires first, so
// a test can make "gave up" and "handed a connection" happen in that order.
func waitParked(t *testing.T, n int) {
	t.Helper()
	eventually(t, "waiters parked", func() bool {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		parked := 0
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "[select") && strings.Contains(g, "(*Pool).waitLocked") {
				parked++
			}
		}
		return parked == n
	})
}

// startGivingUp queues a waiter with a cancellable context and waits until
// it is parked.
func startGivingUp(t *testing.T, p *Pool) (cancel func(), res <-chan acquireResult) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	res = acquireAsync(t, p, ctx, p.Stat().Waiting+1)
	waitParked(t, p.Stat().Waiting)
	return cancel, res
}

func wantCanceled(t *testing.T, res <-chan acquireResult) {
	t.Helper()
	if r := receive(t, res); r.c != nil || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Acquire = %v, %v; want context.Canceled", r.c, r.err)
	}
}

func TestGiveUpRacingConnHandoffReturnsConn(t *testing.T) {
	p, _ := newTestPool(t, Config{MaxOpen: 1, MaxWaiters: 2})
	held := mustAcquire(t, p)
	cancel, res := startGivingUp(t, p)

	p.mu.Lock()
	cancel()          // the waiter gives up first...
	p.putLocked(held) // ...then Release hands it the connection
	p.mu.Unlock()

	wantCanceled(t, res)
	if s := p.Stat(); s.Idle != 1 || s.Open != 1 || s.InUse != 0 {
		t.Fatalf("handed-off conn not put back: %+v", s)
	}
}

func TestGiveUpRacingConnHandoffPassesToNextWaiter(t *testing.T) {
	p, _ := newTestPool(t, Config{MaxOpen: 1, MaxWaiters: 2})
	held := mustAcquire(t, p)
	cancel, first := startGivingUp(t, p)
	second := acquireAsync(t, p, context.Background(), 2)

	p.mu.Lock()
	cancel()
	p.putLocked(held)
	p.mu.Unlock()

	wantCanceled(t, first)
	r := receive(t, second)
	if r.err != nil || r.c != held {
		t.Fatalf("next waiter got %v, %v", r.c, r.err)
	}
	r.c.Release()
}

func TestGiveUpRacingDialGrantFreesSlot(t *testing.T) {
	p, _ := newTestPool(t, Config{MaxOpen: 1, MaxWaiters: 1})
	held := mustAcquire(t, p)
	cancel, res := startGivingUp(t, p)

	// held.Destroy(), with the waiter giving up just before the freed slot
	// is granted to it.
	p.mu.Lock()
	p.retireLocked(held)
	p.mu.Unlock()
	_ = held.raw.Close()
	p.mu.Lock()
	cancel()
	p.closing--
	p.numOpen--
	p.grantLocked()
	p.mu.Unlock()

	wantCanceled(t, res)
	if s := p.Stat(); s.Open != 0 || s.Dialing != 0 {
		t.Fatalf("granted slot leaked: %+v", s)
	}
	mustAcquire(t, p).Release()
}

func TestGiveUpRacingHandoffOfStaleConnClosesIt(t *testing.T) {
	p, _ := newTestPool(t, Config{MaxOpen: 1, MaxWaiters: 1})
	held := mustAcquire(t, p)
	cancel, res := startGivingUp(t, p)

	p.mu.Lock()
	cancel()
	p.putLocked(held)
	p.gen++ // DiscardIdle while the hand-off is in flight
	p.mu.Unlock()

	wantCanceled(t, res)
	eventually(t, "stale conn closed", func() bool { return fake(held).closed.Load() })
	if s := p.Stat(); s.Open != 0 {
		t.Fatalf("stat %+v", s)
	}
}
