package pool

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fakeConnector is a driver.Connector that counts what it does. dialHook,
// if set, runs at the start of every Connect and may block or fail it.
type fakeConnector struct {
	opens, closes, doubleCloses atomic.Int64
	dials, maxDials             atomic.Int64 // in flight, high-water mark
	delay                       time.Duration
	ids                         atomic.Int64

	mu       sync.Mutex
	dialHook func(ctx context.Context) error
}

func (fc *fakeConnector) setHook(h func(ctx context.Context) error) {
	fc.mu.Lock()
	fc.dialHook = h
	fc.mu.Unlock()
}

func (fc *fakeConnector) Connect(ctx context.Context) (driver.Conn, error) {
	n := fc.dials.Add(1)
	defer fc.dials.Add(-1)
	for {
		m := fc.maxDials.Load()
		if n <= m || fc.maxDials.CompareAndSwap(m, n) {
			break
		}
	}
	fc.mu.Lock()
	hook := fc.dialHook
	fc.mu.Unlock()
	if hook != nil {
		if err := hook(ctx); err != nil {
			return nil, err
		}
	}
	if fc.delay > 0 {
		t := time.NewTimer(fc.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	fc.opens.Add(1)
	c := &fakeConn{fc: fc, id: fc.ids.Add(1)}
	c.valid.Store(true)
	return c, nil
}

func (fc *fakeConnector) Driver() driver.Driver { return nil }

// open is the number of real connections open right now.
func (fc *fakeConnector) open() int64 { return fc.opens.Load() - fc.closes.Load() }

type fakeConn struct {
	fc     *fakeConnector
	id     int64
	closed atomic.Bool
	valid  atomic.Bool
}

func (c *fakeConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("fake: no statements")
}
func (c *fakeConn) Begin() (driver.Tx, error) { return nil, errors.New("fake: no transactions") }
func (c *fakeConn) IsValid() bool             { return c.valid.Load() }

func (c *fakeConn) Close() error {
	if c.closed.Swap(true) {
		c.fc.doubleCloses.Add(1)
		return errors.New("fake: closed twice")
	}
	c.fc.closes.Add(1)
	return nil
}

var (
	_ driver.Connector = (*fakeConnector)(nil)
	_ driver.Validator = (*fakeConn)(nil)
)

func fake(c *Conn) *fakeConn { return c.Raw().(*fakeConn) }

// newTestPool builds a pool over a fresh fakeConnector (unless cfg has
// one). Cleanup closes the pool and checks that every real connection was
// closed exactly once and no goroutine leaked.
func newTestPool(t *testing.T, cfg Config) (*Pool, *fakeConnector) {
	t.Helper()
	fc, _ := cfg.Connector.(*fakeConnector)
	if fc == nil {
		fc = &fakeConnector{}
		cfg.Connector = fc
	}
	if cfg.Name == "" {
		cfg.Name = "replica1"
	}
	if cfg.MaxOpen == 0 {
		cfg.MaxOpen = 4
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		eventually(t, "all real connections closed", func() bool { return fc.open() == 0 })
		if n := fc.doubleCloses.Load(); n != 0 {
			t.Errorf("%d connections closed twice", n)
		}
		if s := p.Stat(); s.Open != 0 || s.Idle != 0 || s.InUse != 0 || s.Waiting != 0 || s.Dialing != 0 || s.Closing != 0 {
			t.Errorf("after Close and all releases: %+v", s)
		}
		goleak.VerifyNone(t)
	})
	return p, fc
}

// eventually polls cond until it holds or 5s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func mustAcquire(t *testing.T, p *Pool) *Conn {
	t.Helper()
	c, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return c
}

// acquireAsync starts an Acquire in a goroutine and waits until it is
// queued (Stat.Waiting reaches wantWaiting).
func acquireAsync(t *testing.T, p *Pool, ctx context.Context, wantWaiting int) <-chan acquireResult {
	t.Helper()
	ch := make(chan acquireResult, 1)
	go func() {
		c, err := p.Acquire(ctx)
		ch <- acquireResult{c, err}
	}()
	eventually(t, "waiter queued", func() bool { return p.Stat().Waiting == wantWaiting })
	return ch
}

type acquireResult struct {
	c   *Conn
	err error
}

func receive(t *testing.T, ch <-chan acquireResult) acquireResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire did not return")
		return acquireResult{}
	}
}

// backdate makes c look older (created) and idle for longer (lastUsed) by d.
func backdate(p *Pool, c *Conn, created, lastUsed time.Duration) {
	p.mu.Lock()
	c.created -= int64(created)
	c.lastUsed -= int64(lastUsed)
	p.mu.Unlock()
}
