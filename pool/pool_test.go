package pool

import (
	"context"
	"database/sql/driver"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestNewValidates(t *testing.T) {
	fc := &fakeConnector{}
	ok := Config{Name: "primary", Connector: fc, MaxOpen: 2}
	tests := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"no name", func(c *Config) { c.Name = "" }, "Name is required"},
		{"no connector", func(c *Config) { c.Connector = nil }, "Connector is nil"},
		{"max open", func(c *Config) { c.MaxOpen = 0 }, "MaxOpen must be >= 1"},
		{"min idle", func(c *Config) { c.MinIdle = 3 }, "MinIdle must be between 0 and MaxOpen 2"},
		{"acquire timeout", func(c *Config) { c.AcquireTimeout = -1 }, "AcquireTimeout"},
		{"idle timeout", func(c *Config) { c.IdleTimeout = -1 }, "IdleTimeout"},
		{"lifetime", func(c *Config) { c.MaxLifetime = -1 }, "MaxLifetime"},
		{"waiters", func(c *Config) { c.MaxWaiters = -1 }, "MaxWaiters"},
		{"dials", func(c *Config) { c.MaxConcurrentDials = -1 }, "MaxConcurrentDials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.modify(&cfg)
			p, err := New(cfg)
			if err == nil {
				p.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "rwpool: ") {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestAcquireReleaseLIFO(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 3})
	a, b, c := mustAcquire(t, p), mustAcquire(t, p), mustAcquire(t, p)
	if got := fc.opens.Load(); got != 3 {
		t.Fatalf("opens = %d, want 3", got)
	}
	if s := p.Stat(); s.Open != 3 || s.InUse != 3 || s.Idle != 0 || s.AcquireCount != 3 || s.Dials != 3 {
		t.Fatalf("stat %+v", s)
	}
	if a.created < 0 || a.created > p.now() {
		t.Errorf("created = %v", a.created)
	}
	b.Release()
	c.Release()
	a.Release()
	if s := p.Stat(); s.Open != 3 || s.InUse != 0 || s.Idle != 3 {
		t.Fatalf("stat %+v", s)
	}
	// Most recently released first.
	for _, want := range []*Conn{a, c, b} {
		got := mustAcquire(t, p)
		if got != want {
			t.Errorf("got conn %d, want %d", fake(got).id, fake(want).id)
		}
	}
	if got := fc.opens.Load(); got != 3 {
		t.Errorf("opens = %d, want 3 (reuse)", got)
	}
	a.Release()
	b.Release()
	c.Release()
}

func TestMaxOpenNeverExceeded(t *testing.T) {
	const maxOpen, workers, rounds = 8, 64, 200
	p, fc := newTestPool(t, Config{MaxOpen: maxOpen, MaxWaiters: workers, IdleTimeout: time.Hour, MaxLifetime: time.Hour})
	var inUse, peak atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				c, err := p.Acquire(context.Background())
				if err != nil {
					t.Errorf("Acquire: %v", err)
					return
				}
				n := inUse.Add(1)
				for {
					m := peak.Load()
					if n <= m || peak.CompareAndSwap(m, n) {
						break
					}
				}
				if o := fc.open(); o > maxOpen {
					t.Errorf("%d real connections open", o)
				}
				for range i % 4 { // hold it a little, let others contend
					runtime.Gosched()
				}
				inUse.Add(-1)
				if (w+i)%37 == 0 {
					c.Destroy()
				} else {
					c.Release()
				}
			}
		}()
	}
	wg.Wait()
	if got := peak.Load(); got > maxOpen || got < 2 {
		t.Errorf("peak in use = %d, want 2..%d", got, maxOpen)
	}
	s := p.Stat()
	if s.Open > maxOpen || s.InUse != 0 || s.Waiting != 0 || s.Open != s.Idle {
		t.Errorf("stat %+v", s)
	}
	if s.AcquireCount != workers*rounds {
		t.Errorf("AcquireCount = %d, want %d", s.AcquireCount, workers*rounds)
	}
	t.Logf("peak in use %d, %+v", peak.Load(), s)
}

func TestHandoffIsFIFO(t *testing.T) {
	p, _ := newTestPool(t, Config{MaxOpen: 1, MaxWaiters: 10})
	held := mustAcquire(t, p)
	const n = 5
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := p.Acquire(context.Background())
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			order <- i
			c.Release()
		}()
		eventually(t, "waiter queued", func() bool { return p.Stat().Waiting == i+1 })
	}
	held.Release()
	wg.Wait()
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Errorf("waiter %d served in position %d", got, want)
		}
		want++
	}
	if s := p.Stat(); s.Open != 1 || s.WaitCount != n {
		t.Errorf("stat %+v", s)
	}
}

func TestReleaseHandsOffBeforeNewAcquire(t *testing.T) {
	p, _ := newTestPool(t, Config{MaxOpen: 1, MaxWaiters: 1})
	held := mustAcquire(t, p)
	res := acquireAsync(t, p, context.Background(), 1)
	held.Release()
	// The waiter owns the connection now, even before it runs.
	if s := p.Stat(); s.Idle != 0 || s.InUse != 1 {
		t.Errorf("after hand-off: %+v", s)
	}
	r := receive(t, res)
	if r.err != nil || r.c != held {
		t.Fatalf("waiter got %v, %v", r.c, r.err)
	}
	r.c.Release()
}

func TestAcquireTimeout(t *testing.T) {
	const timeout = 50 * time.Millisecond
	p, _ := newTestPool(t, Config{Name: "replica1", MaxOpen: 1, MaxWaiters: 1, AcquireTimeout: timeout})
	held := mustAcquire(t, p)
	defer held.Release()
	for range 2 { // the second time reuses the recycled waiter and timer
		start := time.Now()
		c, err := p.Acquire(context.Background())
		took := time.Since(start)
		if c != nil || !errors.Is(err, ErrAcquireTimeout) {
			t.Fatalf("Acquire = %v, %v; want ErrAcquireTimeout", c, err)
		}
		if took < timeout || took > timeout+2*time.Second {
			t.Errorf("timed out after %v, want about %v", took, timeout)
		}
		want := "rwpool: node replica1: acquire timeout after 50ms (in use 1/1, waiting 0)"
		if err.Error() != want {
			t.Errorf("error text\n got %q\nwant %q", err, want)
		}
		var pe *nodeError
		if !errors.As(err, &pe) || pe.node != "replica1" {
			t.Errorf("errors.As(*nodeError) = %v", pe)
		}
	}
	if s := p.Stat(); s.Timeouts != 2 || s.WaitCount != 2 || s.WaitDuration < 2*timeout || s.Waiting != 0 {
		t.Errorf("stat %+v", s)
	}
}

func TestAcquireTimeoutNeverOutlivesContext(t *testing.T) {
	p, _ := newTestPool(t, Config{MaxOpen: 1, MaxWaiters: 1, AcquireTimeout: time.Hour})
	held := mustAcquire(t, p)
	defer held.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := p.Acquire(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrAcquireTimeout) {
		t.Fatalf("Acquire: %v, want context.DeadlineExceeded", err)
	}
	if !strings.HasPrefix(err.Error(), "rwpool: node replica1: acquire: context deadline exceeded after waiting") {
		t.Errorf("error text %q", err)
	}
}

func TestAcquireContextCanceledWhileWaiting(t *testing.T) {
	p, _ := newTestPool(t, Config{MaxOpen: 1, MaxWaiters: 1})
	held := mustAcquire(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	res := acquireAsync(t, p, ctx, 1)
	cancel()
	r := receive(t, res)
	if r.c != nil || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Acquire = %v, %v; want context.Canceled", r.c, r.err)
	}
	if !strings.Contains(r.err.Error(), "node replica1") {
		t.Errorf("error %q does not name the node", r.err)
	}
	if s := p.Stat(); s.Canceled != 1 || s.Waiting != 0 {
		t.Errorf("stat %+v", s)
	}
	// The connection still goes to the idle stack, not to the gone waiter.
	held.Release()
	if s := p.Stat(); s.Idle != 1 {
		t.Errorf("stat %+v", s)
	}
}

func TestAcquireWithDoneContextFails(t *testing.T) {
	p, _ := newTestPool(t, Config{})
	mustAcquire(t, p).Release() // an idle connection is there
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire: %v, want context.Canceled", err)
	}
}

func TestMaxWaiters(t *testing.T) {
	t.Run("zero fails at once when full", func(t *testing.T) {
		p, _ := newTestPool(t, Config{MaxOpen: 1, AcquireTimeout: time.Hour})
		held := mustAcquire(t, p)
		defer held.Release()
		_, err := p.Acquire(context.Background())
		if !errors.Is(err, ErrTooManyWaiters) {
			t.Fatalf("Acquire: %v, want ErrTooManyWaiters", err)
		}
		want := "rwpool: node replica1: too many waiters (limit 0; in use 1/1, waiting 0)"
		if err.Error() != want {
			t.Errorf("error text\n got %q\nwant %q", err, want)
		}
	})
	t.Run("limit", func(t *testing.T) {
		p, _ := newTestPool(t, Config{MaxOpen: 1, MaxWaiters: 2})
		held := mustAcquire(t, p)
		r1 := acquireAsync(t, p, context.Background(), 1)
		r2 := acquireAsync(t, p, context.Background(), 2)
		if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrTooManyWaiters) {
			t.Fatalf("third waiter: %v, want ErrTooManyWaiters", err)
		}
		if s := p.Stat(); s.Rejected != 1 || s.Waiting != 2 {
			t.Errorf("stat %+v", s)
		}
		held.Release()
		c := receive(t, r1).c
		c.Release()
		c = receive(t, r2).c
		c.Release()
	})
}

var errRefused = errors.New("connection refused")

func TestDialFailure(t *testing.T) {
	p, fc := newTestPool(t, Config{Name: "primary", MaxOpen: 1})
	fc.setHook(func(context.Context) error { return errRefused })
	c, err := p.Acquire(context.Background())
	if c != nil || !errors.Is(err, errRefused) {
		t.Fatalf("Acquire = %v, %v; want errRefused", c, err)
	}
	if want := "rwpool: node primary: connect: connection refused"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if s := p.Stat(); s.Open != 0 || s.Dials != 1 || s.DialErrors != 1 {
		t.Errorf("stat %+v", s)
	}
	fc.setHook(nil)
	mustAcquire(t, p).Release() // the slot was freed
}

func TestDialFailureWakesWaiter(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 1, MaxWaiters: 1})
	gate := make(chan error)
	var calls atomic.Int32
	fc.setHook(func(context.Context) error {
		if calls.Add(1) == 1 {
			return <-gate
		}
		return nil
	})
	first := make(chan acquireResult, 1)
	go func() {
		c, err := p.Acquire(context.Background())
		first <- acquireResult{c, err}
	}()
	eventually(t, "first dial in flight", func() bool { return p.Stat().Dialing == 1 })
	second := acquireAsync(t, p, context.Background(), 1)
	gate <- errRefused
	if r := receive(t, first); !errors.Is(r.err, errRefused) {
		t.Fatalf("first Acquire: %v, want errRefused", r.err)
	}
	r := receive(t, second)
	if r.err != nil {
		t.Fatalf("second Acquire: %v", r.err)
	}
	r.c.Release()
	if s := p.Stat(); s.Dials != 2 || s.DialErrors != 1 || s.Open != 1 {
		t.Errorf("stat %+v", s)
	}
}

func TestDialHonoursContext(t *testing.T) {
	p, fc := newTestPool(t, Config{})
	fc.setHook(func(ctx context.Context) error {
		<-ctx.Done()
		return errors.New("driver gave up") // not wrapping ctx.Err()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := p.Acquire(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire: %v, want context.DeadlineExceeded", err)
	}
	if s := p.Stat(); s.Open != 0 || s.DialErrors != 0 {
		t.Errorf("stat %+v", s)
	}
}

func TestDestroyLetsWaiterDial(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 1, MaxWaiters: 1})
	held := mustAcquire(t, p)
	res := acquireAsync(t, p, context.Background(), 1)
	held.Destroy()
	if !fake(held).closed.Load() {
		t.Error("Destroy did not close the real connection")
	}
	r := receive(t, res)
	if r.err != nil || r.c == held {
		t.Fatalf("waiter got %v, %v; want a new connection", r.c, r.err)
	}
	if got := fc.opens.Load(); got != 2 {
		t.Errorf("opens = %d, want 2", got)
	}
	r.c.Release()
}

func TestMaxConcurrentDials(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 10, MaxWaiters: 10, MaxConcurrentDials: 2})
	fc.delay = 20 * time.Millisecond
	const n = 6
	conns := make(chan *Conn, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := p.Acquire(context.Background())
			if err != nil {
				t.Errorf("Acquire: %v", err)
				return
			}
			conns <- c
		}()
	}
	wg.Wait()
	close(conns)
	for c := range conns {
		c.Release()
	}
	if got := fc.maxDials.Load(); got != 2 {
		t.Errorf("max dials in flight = %d, want 2", got)
	}
	if s := p.Stat(); s.Open != n || s.Idle != n {
		t.Errorf("stat %+v", s)
	}
}

func TestIdleTimeoutOnAcquire(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 3, IdleTimeout: time.Minute, noMaintainer: true})
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	a.Release()
	b.Release()
	backdate(p, a, 2*time.Minute, 2*time.Minute) // a: idle too long
	backdate(p, b, 2*time.Minute, 0)             // b: old but recently used
	if got := mustAcquire(t, p); got != b {
		t.Fatalf("got conn %d, want the fresh one %d", fake(got).id, fake(b).id)
	}
	got := mustAcquire(t, p) // a is skipped and closed, a new one dialled
	if got == a || !fake(a).closed.Load() || fc.opens.Load() != 3 {
		t.Errorf("expired idle conn reused or not closed (opens %d)", fc.opens.Load())
	}
	if s := p.Stat(); s.ClosedIdle != 1 || s.ClosedLifetime != 0 || s.Open != 2 {
		t.Errorf("stat %+v", s)
	}
	got.Release()
	b.Release()
}

func TestIdleTimeoutOnAcquireKeepsMinIdle(t *testing.T) {
	p, _ := newTestPool(t, Config{MaxOpen: 3, MinIdle: 1, IdleTimeout: time.Minute, noMaintainer: true})
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	a.Release()
	b.Release()
	backdate(p, a, 0, 2*time.Minute)
	backdate(p, b, 0, 2*time.Minute)
	c := mustAcquire(t, p) // b closed (2 idle > MinIdle), a kept as the last one
	if c != a || !fake(b).closed.Load() {
		t.Errorf("got conn %d, want %d with %d closed", fake(c).id, fake(a).id, fake(b).id)
	}
	c.Release()
}

func TestMaxLifetimeOnAcquireAndRelease(t *testing.T) {
	p, _ := newTestPool(t, Config{MaxOpen: 2, MaxLifetime: time.Minute, noMaintainer: true})
	a := mustAcquire(t, p)
	a.Release()
	backdate(p, a, 2*time.Minute, 0)
	b := mustAcquire(t, p)
	if b == a || !fake(a).closed.Load() {
		t.Fatal("expired conn handed out")
	}
	backdate(p, b, 2*time.Minute, 0)
	b.Release()
	if !fake(b).closed.Load() {
		t.Error("expired conn not closed on release")
	}
	if s := p.Stat(); s.ClosedLifetime != 2 || s.Open != 0 {
		t.Errorf("stat %+v", s)
	}
}

func TestValidatorFalseClosesOnRelease(t *testing.T) {
	p, _ := newTestPool(t, Config{})
	c := mustAcquire(t, p)
	fake(c).valid.Store(false)
	c.Release()
	if !fake(c).closed.Load() {
		t.Error("invalid conn not closed")
	}
	if s := p.Stat(); s.Open != 0 || s.Idle != 0 {
		t.Errorf("stat %+v", s)
	}
}

func TestDiscardIdle(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 3})
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	a.Release()
	p.DiscardIdle()
	if !fake(a).closed.Load() || p.Stat().Idle != 0 {
		t.Fatal("idle conn survived DiscardIdle")
	}
	b.Release()
	if !fake(b).closed.Load() {
		t.Fatal("conn in use during DiscardIdle was reused")
	}
	c := mustAcquire(t, p)
	c.Release()
	if fake(c).closed.Load() || p.Stat().Idle != 1 || fc.opens.Load() != 3 {
		t.Error("conn dialled after DiscardIdle is not pooled normally")
	}
}

func TestDoubleReleaseAndDestroy(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 2})
	a := mustAcquire(t, p)
	a.Release()
	a.Release()
	a.Destroy()
	if s := p.Stat(); s.Open != 1 || s.Idle != 1 || fake(a).closed.Load() {
		t.Fatalf("after double release: %+v", s)
	}
	a = mustAcquire(t, p)
	a.Destroy()
	a.Destroy()
	a.Release()
	if s := p.Stat(); s.Open != 0 || s.Idle != 0 || fc.closes.Load() != 1 {
		t.Fatalf("after double destroy: %+v", s)
	}
}

func TestClose(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 3})
	inUse, idle := mustAcquire(t, p), mustAcquire(t, p)
	idle.Release()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !fake(idle).closed.Load() || fake(inUse).closed.Load() {
		t.Fatal("Close must close idle conns now and in-use ones later")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	_, err := p.Acquire(context.Background())
	if !errors.Is(err, ErrClosed) || err.Error() != "rwpool: node replica1: pool closed" {
		t.Errorf("Acquire after Close: %v", err)
	}
	inUse.Release()
	if !fake(inUse).closed.Load() || fc.open() != 0 {
		t.Error("conn released after Close not closed")
	}
	p.DiscardIdle() // harmless
}

func TestCloseWakesWaiters(t *testing.T) {
	p, _ := newTestPool(t, Config{MaxOpen: 1, MaxWaiters: 3})
	held := mustAcquire(t, p)
	var res []<-chan acquireResult
	for i := range 3 {
		res = append(res, acquireAsync(t, p, context.Background(), i+1))
	}
	p.Close()
	for _, ch := range res {
		if r := receive(t, ch); !errors.Is(r.err, ErrClosed) {
			t.Errorf("waiter: %v, want ErrClosed", r.err)
		}
	}
	held.Release()
}

func TestCloseDuringDial(t *testing.T) {
	p, fc := newTestPool(t, Config{})
	gate := make(chan struct{})
	fc.setHook(func(context.Context) error { <-gate; return nil })
	res := make(chan acquireResult, 1)
	go func() {
		c, err := p.Acquire(context.Background())
		res <- acquireResult{c, err}
	}()
	eventually(t, "dial in flight", func() bool { return p.Stat().Dialing == 1 })
	p.Close()
	close(gate)
	if r := receive(t, res); !errors.Is(r.err, ErrClosed) {
		t.Fatalf("Acquire: %v, want ErrClosed", r.err)
	}
}

// TestHandoffRacesWithGivingUp hammers the window where a waiter times out
// or is cancelled while a connection or dial slot is being handed to it.
// Lost hand-offs would show up as leaked slots (Open stuck) or open conns.
func TestHandoffRacesWithGivingUp(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 2, MaxWaiters: 64, AcquireTimeout: 200 * time.Microsecond})
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 300 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(300))*time.Microsecond)
				c, err := p.Acquire(ctx)
				cancel()
				if err != nil {
					if !errors.Is(err, ErrAcquireTimeout) && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("Acquire: %v", err)
					}
					continue
				}
				if rng.IntN(10) == 0 {
					c.Destroy()
				} else {
					c.Release()
				}
			}
		}()
	}
	wg.Wait()
	s := p.Stat()
	if s.InUse != 0 || s.Waiting != 0 || s.Dialing != 0 || s.Open != s.Idle || int64(s.Open) != fc.open() {
		t.Fatalf("accounting off after races: %+v, real open %d", s, fc.open())
	}
	// Every slot is usable.
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	a.Release()
	b.Release()
	t.Logf("timeouts %d, canceled %d, waits %d", s.Timeouts, s.Canceled, s.WaitCount)
}

type connectorFunc func(context.Context) (driver.Conn, error)

func (f connectorFunc) Connect(ctx context.Context) (driver.Conn, error) { return f(ctx) }
func (f connectorFunc) Driver() driver.Driver                            { return nil }

func TestNilConnFromDriverIsAnError(t *testing.T) {
	p, err := New(Config{Name: "primary", MaxOpen: 1, Connector: connectorFunc(func(context.Context) (driver.Conn, error) {
		return nil, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Acquire(context.Background()); err == nil || !strings.Contains(err.Error(), "nil connection") {
		t.Fatalf("Acquire: %v", err)
	}
	if s := p.Stat(); s.Open != 0 || s.DialErrors != 1 {
		t.Errorf("stat %+v", s)
	}
}

// Waited says how long the borrow that lent a connection out waited: the
// dial of a new one, the queue behind a full pool, nothing for an idle
// one at hand; each borrow says its own.
func TestConnWaited(t *testing.T) {
	fc := &fakeConnector{delay: 20 * time.Millisecond}
	p, _ := newTestPool(t, Config{Connector: fc, MaxOpen: 1, MaxWaiters: 4})
	c := mustAcquire(t, p)
	if w := c.Waited(); w < fc.delay {
		t.Errorf("a borrow that dialled waited %s, want at least the dial's %s", w, fc.delay)
	}
	c.Release()
	c = mustAcquire(t, p)
	if w := c.Waited(); w != 0 {
		t.Errorf("a borrow of an idle connection waited %s, want 0", w)
	}
	ch := acquireAsync(t, p, context.Background(), 1)
	const hold = 30 * time.Millisecond
	time.Sleep(hold) // the queued borrow's wait, measured below
	c.Release()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	if w := r.c.Waited(); w < hold {
		t.Errorf("a borrow queued behind a full pool for %s waited %s", hold, w)
	}
	r.c.Release()
}
