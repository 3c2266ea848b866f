package rwpool

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool/pool"
)

// Rescue: a plain read (outside transactions and pinned leases) runs with
// a context of its own, a readCtx, that also ends when its node becomes
// unavailable. The driver then gives up on the read at once (mysql and pgx
// watch the context; for lib/pq the watched call returns), the read's
// connection is destroyed, and read replays the read elsewhere like any
// read that failed before returning a row. Without it, every read in
// flight on a node that hung waits out its whole deadline although rwpool
// found the node down long before.
//
// The same watch suspects a hang sooner: a read still running after
// probe_timeout asks for a probe of its node (node.suspect), so a hung
// node is found within about twice probe_timeout instead of at the next
// health check.
//
// Cost: the readCtx is the one allocation a read adds. Merging the
// caller's context with the node's trip needs someone to wait on both:
// context.WithCancel plus context.AfterFunc costs five allocations, so
// each virtual connection has a watcher goroutine instead (as
// go-sql-driver/mysql has per connection), handed each read over a
// channel: two channel operations per read and no allocation. A caller
// context that can never end needs no watcher: the read's Done is its
// node's trip channel.

// readCtx is the context a plain read runs with. Its Done closes when the
// caller's context ends or the read is rescued; Deadline and Value are the
// caller's. A new one is made per read, so a driver goroutine that
// lingers after the read sees this read's context, never the next one's.
type readCtx struct {
	parent context.Context
	done   <-chan struct{}
	cancel chan struct{} // done, closed by the watcher; nil without one
	n      *node
	w      *watcher // nil when parent can never end
	state  atomic.Int32
}

// readCtx states.
const (
	readRunning  int32 = iota
	readFinished       // the read ended; the watcher lets it be
	readEnded          // the caller's context ended first
	readRescued        // the node became unavailable first
)

func (r *readCtx) Deadline() (time.Time, bool) { return r.parent.Deadline() }
func (r *readCtx) Done() <-chan struct{}       { return r.done }
func (r *readCtx) Value(key any) any           { return r.parent.Value(key) }

func (r *readCtx) Err() error {
	if r.w == nil { // done is the node's trip channel
		select {
		case <-r.done:
			return context.Canceled
		default:
			return nil
		}
	}
	switch r.state.Load() {
	case readEnded:
		return r.parent.Err()
	case readRescued:
		return context.Canceled
	}
	return nil
}

// rescued reports whether the read was cancelled because its node became
// unavailable (and not because the caller's context ended).
func (r *readCtx) rescued() bool {
	if r == nil {
		return false
	}
	if r.w == nil {
		return r.parent.Err() == nil && r.Err() != nil
	}
	return r.state.Load() == readRescued
}

// errRescued marks a read cancelled because its node became unavailable;
// it is replayed elsewhere like any read whose node failed.
var errRescued = errors.New("read cancelled: its node became unavailable")

// rescuedError is what a rescued read fails with if it cannot be replayed.
func rescuedError(n *node) error {
	return newUnavailableError(n.cfg.Name, n.health.Since(), fmt.Errorf("%w: %v", errRescued, n.health.LastError()))
}

// watcher is a virtual connection's rescue goroutine (see the top of this
// file). Its fields are used by the connection's goroutine of the moment;
// database/sql serialises them.
type watcher struct {
	arm  chan *readCtx // a read to watch; unbuffered: the goroutine is waiting
	fin  chan struct{} // the read ended; one per arm
	quit chan struct{} // closed when the virtual connection closes
	done chan struct{} // the Done channel reads get; replaced once closed
	busy bool          // a read is armed (its rows may still be open)
	dead bool          // the goroutine could not start or has stopped
}

// readContext returns the context for a plain read on n and the readCtx to
// finish when the read ends (nil when it needs none). A read waits on its
// node only when rescue can help it: a breaker watches the node.
func (vc *conn) readContext(ctx context.Context, n *node) (context.Context, *readCtx) {
	if !vc.c.cfg.Breaker {
		return ctx, nil
	}
	if ctx.Done() == nil {
		if vc.c.watch {
			// Moving every read of a driver that blocks into a goroutine
			// costs more than rescuing reads that never time out saves.
			return ctx, nil
		}
		r := &readCtx{parent: ctx, done: n.tripped(), n: n}
		return r, r
	}
	w := vc.watcher()
	if w == nil || w.busy {
		return ctx, nil // two reads at once on one *sql.Conn: the second is not rescued
	}
	r := &readCtx{parent: ctx, done: w.done, cancel: w.done, n: n, w: w}
	select {
	case w.arm <- r:
		w.busy = true
		return r, r
	case <-vc.c.stop:
		w.dead = true
		return ctx, nil
	}
}

// finish ends the watch of a read.
func (r *readCtx) finish() {
	if r == nil || r.w == nil {
		return
	}
	w := r.w
	if !r.state.CompareAndSwap(readRunning, readFinished) {
		w.done = make(chan struct{}) // the watcher closed the old one
	}
	w.busy = false
	w.fin <- struct{}{} // buffered: the watcher takes it when it can
}

// watcher returns the connection's watcher, starting it on first use.
func (vc *conn) watcher() *watcher {
	w := vc.w
	if w != nil {
		if w.dead {
			return nil
		}
		return w
	}
	w = &watcher{arm: make(chan *readCtx), fin: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	vc.w = w
	if !vc.c.bg.Go(func() { w.run(vc.c) }) {
		w.dead = true
		return nil
	}
	return w
}

// stop ends the watcher goroutine; the connection is closing.
func (w *watcher) stop() {
	if w != nil && !w.dead {
		w.dead = true
		close(w.quit)
	}
}

func (w *watcher) run(c *Connector) {
	suspect := time.NewTimer(time.Hour)
	suspect.Stop()
	defer suspect.Stop()
	for {
		var r *readCtx
		select {
		case r = <-w.arm:
		case <-w.quit:
			return
		case <-c.stop:
			return
		}
		suspect.Reset(c.cfg.ProbeTimeout)
		timer := suspect.C
		parent, trip := r.parent.Done(), r.n.tripped()
		if !w.watch(r, timer, parent, trip, c.stop) {
			return
		}
		suspect.Stop()
	}
}

// watch waits for the end of read r, cancelling it if its caller's
// context ends or its node trips first, and asking for a probe of the node
// if it runs longer than probe_timeout. It takes exactly one fin, whatever
// ended the read, and reports false when the Connector closes.
func (w *watcher) watch(r *readCtx, timer <-chan time.Time, parent, trip, stop <-chan struct{}) bool {
	for {
		select {
		case <-w.fin:
			return true
		case <-timer:
			timer = nil
			r.n.suspect()
			continue
		case <-parent:
			r.end(readEnded)
		case <-trip:
			r.end(readRescued)
		case <-stop:
			return false
		}
		select {
		case <-w.fin:
			return true
		case <-stop:
			return false
		}
	}
}

// end cancels a running read: Done closes and Err says why.
func (r *readCtx) end(why int32) {
	if r.state.CompareAndSwap(readRunning, why) {
		close(r.cancel)
	}
}

// rescued settles pc, whose read on n was cancelled because n became
// unavailable, and returns the error to replay it with: pc is destroyed
// (or, abandoned by a watched call, closed by its goroutine).
func (n *node) rescued(pc *pool.Conn, err error) error {
	if err != errAbandoned {
		pc.Destroy()
	}
	n.closedBroken.Add(1)
	n.errors.Add(1)
	return rescuedError(n)
}

// tripped returns a channel closed when n becomes unavailable: the
// current one while n is available, a closed one while it is not.
func (n *node) tripped() <-chan struct{} { return *n.trip.Load() }

// onEvent keeps n's trip channel in step with its breaker. The breaker
// delivers events in order, under its lock.
func (n *node) onEvent(e Event) {
	if e.Kind != StateChanged {
		return
	}
	switch {
	case e.To == Unavailable:
		close(*n.trip.Load())
	case e.From == Unavailable:
		c := make(chan struct{})
		n.trip.Store(&c)
	}
}

// suspect asks for a probe of n now: a statement has run on it for longer
// than probe_timeout. A hung node is found within about twice
// probe_timeout of the statement's start; a healthy one running a long
// query costs one successful probe, at most one per probe_timeout.
func (n *node) suspect() {
	if !n.c.cfg.Breaker || n.health.Tripped() {
		return
	}
	now, every := time.Now().UnixNano(), int64(n.c.cfg.ProbeTimeout)
	last := n.suspected.Load()
	if now-last < every || !n.suspected.CompareAndSwap(last, now) {
		return
	}
	n.confirm(func(perr error) error {
		return fmt.Errorf("a statement ran longer than probe_timeout (%s), and then %w", n.c.cfg.ProbeTimeout, perr)
	})
}
