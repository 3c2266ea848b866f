package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// initialIdleCap bounds the idle stack's first allocation: an absurd
// pool_size must not cost memory up front.
const initialIdleCap = 64

// Pool is one node's pool of real connections. It is safe for concurrent
// use. Create it with New and stop it with Close.
type Pool struct {
	cfg        Config
	epoch      time.Time // origin of the pool's monotonic clock, see now
	clocked    bool      // IdleTimeout or MaxLifetime set: expiry is tracked
	idleTTL    int64     // IdleTimeout in ns
	lifetime   int64     // MaxLifetime in ns
	dialCtx    context.Context
	cancelDial context.CancelFunc // cancels the maintainer's dials on Close
	stop       chan struct{}      // closed by Close: maintainer exits
	done       chan struct{}      // closed by the maintainer on exit
	kick       chan struct{}      // wakes the maintainer early (capacity 1)

	mu          sync.Mutex
	closed      bool
	gen         uint64  // bumped by DiscardIdle; older connections are stale
	idle        []*Conn // LIFO stack, top = most recently released
	numOpen     int     // idle + in use + dialling + closing
	dialing     int
	closing     int // retired, real connection not yet closed
	waiters     waiterList
	freeWaiters []*waiter
	reapBuf     []*Conn // maintainer's scratch
	clock       int64   // coarse clock: latest reading of now, see observeLocked
	clockOps    uint32  // releases since the hot path last read the clock
	stats       counters
}

// counters are the cumulative Stat fields, guarded by Pool.mu.
type counters struct {
	waitCount      int64
	waitDuration   time.Duration
	acquireCount   int64
	dials          int64
	dialErrors     int64
	timeouts       int64
	canceled       int64
	rejected       int64
	closedIdle     int64
	closedLifetime int64
}

// New validates cfg and returns a pool with no connections open yet. It
// starts the pool's maintainer goroutine, which dials MinIdle connections
// in the background; Close stops it.
func New(cfg Config) (*Pool, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Pool{
		cfg:      cfg,
		epoch:    time.Now(),
		clocked:  cfg.IdleTimeout > 0 || cfg.MaxLifetime > 0,
		idleTTL:  int64(cfg.IdleTimeout),
		lifetime: int64(cfg.MaxLifetime),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		kick:     make(chan struct{}, 1),
		idle:     make([]*Conn, 0, min(cfg.MaxOpen, initialIdleCap)),
	}
	p.dialCtx, p.cancelDial = context.WithCancel(context.Background())
	if cfg.noMaintainer {
		close(p.done)
	} else {
		go p.maintain()
	}
	return p, nil
}

// now reads the monotonic clock as nanoseconds since the pool was created;
// cheaper than time.Now, which also reads the wall clock, but still 20-45ns,
// too much for the hot path. Acquire and Release use the coarse p.clock.
func (p *Pool) now() int64 { return int64(time.Since(p.epoch)) }

// clockSample: every clockSample-th Release reads the real clock, keeping
// p.clock fresh in a busy pool even while the maintainer is stuck in a dial.
const clockSample = 64

// observeLocked advances the coarse clock to reading t. The coarse clock is
// refreshed by every maintainer tick (at most 500ms apart when a timeout is
// set, and at most half the shortest timeout above 100ms), every dial, and
// every clockSample-th Release, so expiry decisions lag by at most about
// one tick: a connection may be handed out up to a tick after it expired,
// or be closed up to a tick before, never worse unless the maintainer is
// blocked in a slow dial.
func (p *Pool) observeLocked(t int64) {
	if t > p.clock {
		p.clock = t
	}
}

// Acquire borrows a connection: the most recently released idle one, else a
// newly dialled one if fewer than MaxOpen are open, else the next one
// released, waiting at most AcquireTimeout and never past ctx. The caller
// must give it back with Release or Destroy exactly once.
//
// A failed Acquire returns an error that names the node (Config.Name) and
// wraps one of ErrClosed, ErrTooManyWaiters, ErrAcquireTimeout, ctx.Err()
// or the Connector's dial error; test it with errors.Is.
func (p *Pool) Acquire(ctx context.Context) (*Conn, error) {
	if done := ctx.Done(); done != nil {
		select {
		case <-done:
			p.mu.Lock()
			err := p.errCtxLocked(ctx.Err(), 0)
			p.mu.Unlock()
			return nil, err
		default:
		}
	}
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, p.errClosed()
		}
		n := len(p.idle)
		if n == 0 {
			break
		}
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		if p.clocked && p.expiredLocked(c, n) {
			p.retireLocked(c)
			p.mu.Unlock()
			p.closeConn(c)
			p.mu.Lock()
			continue
		}
		c.state = stateInUse
		c.waited = 0
		p.stats.acquireCount++
		p.mu.Unlock()
		return c, nil
	}
	if p.canDialLocked() {
		gen := p.reserveDialLocked()
		p.mu.Unlock()
		start := p.now()
		c, err := p.dial(ctx, gen)
		if c != nil {
			c.waited = time.Duration(p.now() - start)
		}
		return c, err
	}
	return p.waitLocked(ctx)
}

// expiredLocked reports whether idle connection c, taken from an idle stack
// of n connections, must be closed rather than used, and counts why.
func (p *Pool) expiredLocked(c *Conn, n int) bool {
	now := p.clock
	if p.lifetime > 0 && now-c.created >= p.lifetime {
		p.stats.closedLifetime++
		return true
	}
	if p.idleTTL > 0 && now-c.lastUsed >= p.idleTTL && n > p.cfg.MinIdle {
		p.stats.closedIdle++
		return true
	}
	return false
}

func (p *Pool) canDialLocked() bool {
	return p.numOpen < p.cfg.MaxOpen &&
		(p.cfg.MaxConcurrentDials == 0 || p.dialing < p.cfg.MaxConcurrentDials)
}

// reserveDialLocked takes a slot for a dial and returns the generation the
// new connection will belong to.
func (p *Pool) reserveDialLocked() uint64 {
	p.numOpen++
	p.dialing++
	return p.gen
}

// connect dials one real connection; the pool's slot is already reserved.
func (p *Pool) connect(ctx context.Context, gen uint64) (*Conn, error) {
	raw, err := p.cfg.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errors.New("driver returned a nil connection")
	}
	return p.newConn(raw, gen), nil
}

// dial fills a reserved slot for Acquire.
func (p *Pool) dial(ctx context.Context, gen uint64) (*Conn, error) {
	c, err := p.connect(ctx, gen)
	p.mu.Lock()
	p.dialing--
	p.stats.dials++
	if err != nil {
		if ctx.Err() == nil {
			p.stats.dialErrors++
		}
		p.numOpen--
		p.grantLocked()
		p.mu.Unlock()
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (%w)", cerr, err)
		}
		return nil, p.errConnect(err)
	}
	if p.closed {
		p.retireLocked(c)
		p.mu.Unlock()
		p.closeConn(c)
		return nil, p.errClosed()
	}
	p.stats.acquireCount++
	p.observeLocked(c.created)
	p.grantLocked() // a dial slot is free again (MaxConcurrentDials)
	p.mu.Unlock()
	return c, nil
}

// waitLocked queues the caller and waits for a hand-off. p.mu is held on
// entry and released on return.
func (p *Pool) waitLocked(ctx context.Context) (*Conn, error) {
	if p.waiters.len >= p.cfg.MaxWaiters {
		p.stats.rejected++
		err := p.errWaitersLocked()
		p.mu.Unlock()
		return nil, err
	}
	w := p.getWaiterLocked()
	p.waiters.pushBack(w)
	p.stats.waitCount++
	p.mu.Unlock()

	start := p.now()
	var timeout <-chan time.Time
	if w.timer != nil {
		w.timer.Reset(p.cfg.AcquireTimeout)
		timeout = w.timer.C
	}
	var (
		h     handoff
		cause error
	)
	select {
	case h = <-w.ch:
	case <-ctx.Done():
		cause = ctx.Err()
	case <-timeout:
		cause = ErrAcquireTimeout
	}
	if w.timer != nil && !w.timer.Stop() && cause != ErrAcquireTimeout {
		// Only under GODEBUG asynctimerchan=1 can a fired timer have left a
		// value behind; with Go 1.23+ timers this finds nothing.
		select {
		case <-w.timer.C:
		default:
		}
	}
	waited := time.Duration(p.now() - start)

	p.mu.Lock()
	p.stats.waitDuration += waited
	if cause != nil {
		var toClose *Conn
		if w.queued {
			p.waiters.remove(w)
		} else {
			// A hand-off raced with giving up; it is already in w.ch.
			toClose = p.passOnLocked(<-w.ch)
		}
		p.putWaiterLocked(w)
		var err error
		if cause == ErrAcquireTimeout {
			p.stats.timeouts++
			err = p.errTimeoutLocked()
		} else {
			p.stats.canceled++
			err = p.errCtxLocked(cause, waited)
		}
		p.mu.Unlock()
		if toClose != nil {
			p.closeConn(toClose)
		}
		return nil, err
	}
	p.putWaiterLocked(w)
	switch {
	case h.err != nil:
		p.mu.Unlock()
		return nil, h.err
	case h.dial:
		p.mu.Unlock()
		c, err := p.dial(ctx, h.gen)
		if c != nil {
			c.waited = time.Duration(p.now() - start)
		}
		return c, err
	}
	p.stats.acquireCount++
	p.mu.Unlock()
	h.c.waited = waited
	return h.c, nil
}

// passOnLocked gives a hand-off that its waiter no longer wants to the next
// waiter (or the idle stack, or frees the slot). It returns a connection
// the caller must close after unlocking.
func (p *Pool) passOnLocked(h handoff) *Conn {
	switch {
	case h.c != nil:
		if p.closed || h.c.gen != p.gen {
			p.retireLocked(h.c)
			return h.c
		}
		p.putLocked(h.c)
	case h.dial:
		p.numOpen--
		p.dialing--
		p.grantLocked()
	}
	return nil
}

// putLocked gives in-use connection c to the oldest waiter, or pushes it
// onto the idle stack. The pool must not be closed.
func (p *Pool) putLocked(c *Conn) {
	if w := p.waiters.popFront(); w != nil {
		w.ch <- handoff{c: c}
		return
	}
	c.state = stateIdle
	p.idle = append(p.idle, c)
}

// grantLocked hands free dial slots to the oldest waiters, who then dial.
func (p *Pool) grantLocked() {
	for p.waiters.len > 0 && p.canDialLocked() {
		w := p.waiters.popFront()
		w.ch <- handoff{dial: true, gen: p.reserveDialLocked()}
	}
}

// Close closes the pool: idle connections are closed now, connections in
// use when they are released or destroyed, waiting Acquire calls fail with
// ErrClosed and so do later ones. It stops the maintainer and waits for it
// (cancelling any dial it has in flight). It returns the errors from closing
// idle connections. Further calls return nil.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.done
		return nil
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	for _, c := range idle {
		p.retireLocked(c)
	}
	for w := p.waiters.popFront(); w != nil; w = p.waiters.popFront() {
		w.ch <- handoff{err: p.errClosed()}
	}
	p.freeWaiters = nil
	p.mu.Unlock()

	p.cancelDial()
	close(p.stop)
	<-p.done
	var errs []error
	for _, c := range idle {
		if err := c.raw.Close(); err != nil {
			errs = append(errs, &nodeError{node: p.cfg.Name, err: err, msg: "close: " + err.Error()})
		}
	}
	p.freeSlots(len(idle))
	return errors.Join(errs...)
}

// DiscardIdle closes every idle connection and marks every connection now
// in use (or being dialled) stale, so it is closed instead of reused when
// released. Use it when a node comes back from an outage: connections from
// before it are suspect. The maintainer then refills MinIdle.
func (p *Pool) DiscardIdle() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.gen++
	idle := p.idle
	p.idle = make([]*Conn, 0, min(p.cfg.MaxOpen, initialIdleCap))
	for _, c := range idle {
		p.retireLocked(c)
	}
	p.mu.Unlock()
	p.closeConns(idle)
	select {
	case p.kick <- struct{}{}:
	default:
	}
}
