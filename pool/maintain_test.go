package pool

import (
	"context"
	"testing"
	"time"
)

func TestMaintainInterval(t *testing.T) {
	tests := []struct {
		idle, life, want time.Duration
	}{
		{0, 0, time.Second},
		{time.Hour, 0, 500 * time.Millisecond},
		{0, 600 * time.Millisecond, 300 * time.Millisecond},
		{time.Minute, 400 * time.Millisecond, 200 * time.Millisecond},
		{10 * time.Millisecond, 0, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		c := Config{IdleTimeout: tt.idle, MaxLifetime: tt.life}
		if got := c.maintainInterval(); got != tt.want {
			t.Errorf("maintainInterval(idle %v, life %v) = %v, want %v", tt.idle, tt.life, got, tt.want)
		}
	}
}

func TestMaintainerClosesIdleTimedOut(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 3, IdleTimeout: 50 * time.Millisecond})
	a, b, c := mustAcquire(t, p), mustAcquire(t, p), mustAcquire(t, p)
	a.Release()
	b.Release()
	c.Release()
	eventually(t, "idle conns reaped", func() bool { return p.Stat().Open == 0 })
	if got := fc.closes.Load(); got != 3 {
		t.Errorf("closes = %d, want 3", got)
	}
	if s := p.Stat(); s.ClosedIdle != 3 {
		t.Errorf("stat %+v", s)
	}
}

func TestMaintainerKeepsMinIdleAgainstIdleTimeout(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 4, MinIdle: 2, IdleTimeout: 30 * time.Millisecond})
	eventually(t, "MinIdle dialled", func() bool { return p.Stat().Idle == 2 })
	var conns []*Conn
	for range 4 {
		conns = append(conns, mustAcquire(t, p))
	}
	for _, c := range conns {
		c.Release()
	}
	eventually(t, "reaped down to MinIdle", func() bool { return p.Stat().ClosedIdle == 2 })
	// Several more ticks: the last MinIdle stay.
	time.Sleep(300 * time.Millisecond)
	if s := p.Stat(); s.Idle != 2 || s.Open != 2 || s.ClosedIdle != 2 || fc.opens.Load() != 4 {
		t.Errorf("stat %+v, opens %d", s, fc.opens.Load())
	}
}

func TestMaintainerReplacesExpiredLifetime(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 4, MinIdle: 2, MaxLifetime: 100 * time.Millisecond})
	eventually(t, "MinIdle dialled", func() bool { return p.Stat().Idle == 2 })
	eventually(t, "lifetime reaping and refill", func() bool {
		s := p.Stat()
		return s.ClosedLifetime >= 2 && fc.opens.Load() >= 4 && s.Idle == 2
	})
	if s := p.Stat(); s.Open > 2 {
		t.Errorf("stat %+v", s)
	}
}

func TestMinIdleMaintained(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 5, MinIdle: 3})
	eventually(t, "MinIdle dialled", func() bool { return p.Stat().Idle == 3 })
	a, b := mustAcquire(t, p), mustAcquire(t, p)
	eventually(t, "MinIdle refilled", func() bool { return p.Stat().Idle == 3 })
	c, d, e := mustAcquire(t, p), mustAcquire(t, p), mustAcquire(t, p)
	// Full: the maintainer must not exceed MaxOpen.
	time.Sleep(50 * time.Millisecond)
	if s := p.Stat(); s.Open != 5 || s.Idle != 0 || fc.open() != 5 {
		t.Errorf("stat %+v", s)
	}
	for _, x := range []*Conn{a, b, c, d, e} {
		x.Release()
	}
}

func TestMinIdleRefilledAfterDiscardIdle(t *testing.T) {
	p, fc := newTestPool(t, Config{MaxOpen: 5, MinIdle: 2})
	eventually(t, "MinIdle dialled", func() bool { return p.Stat().Idle == 2 })
	p.DiscardIdle()
	// DiscardIdle kicks the maintainer: no need to wait for a 1s tick.
	eventually(t, "MinIdle refilled", func() bool { return p.Stat().Idle == 2 && fc.opens.Load() == 4 })
}

func TestMaintainerBacksOffOnDialErrors(t *testing.T) {
	fc := &fakeConnector{}
	fc.setHook(func(context.Context) error { return errRefused })
	p, _ := newTestPool(t, Config{Connector: fc, MaxOpen: 2, MinIdle: 1, IdleTimeout: 20 * time.Millisecond})
	eventually(t, "dial errors", func() bool { return p.Stat().DialErrors >= 2 })
	time.Sleep(500 * time.Millisecond)
	// Ticks every 100ms, backoff 100ms, 200ms, 400ms...: a handful of dials.
	if s := p.Stat(); s.DialErrors > 6 || s.Open != 0 {
		t.Errorf("stat %+v", s)
	}
	fc.setHook(nil)
	eventually(t, "recovered", func() bool { return p.Stat().Idle == 1 })
}

func TestCloseStopsMaintainerMidDial(t *testing.T) {
	fc := &fakeConnector{}
	fc.setHook(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	p, _ := newTestPool(t, Config{Connector: fc, MaxOpen: 2, MinIdle: 1})
	// The first dial starts right away and blocks until Close cancels it.
	eventually(t, "maintainer dialling", func() bool { return p.Stat().Dialing == 1 })
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if s := p.Stat(); s.DialErrors != 0 || s.Open != 0 {
		t.Errorf("stat %+v", s)
	}
}
