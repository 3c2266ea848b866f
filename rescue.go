package rwpool

import (
	"bytes"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool/pool"
)

// Rescue: a plain read (outside transactions and pinned leases) runs with
// a context of its own, a readCtx, that also ends when its node becomes
// unavailable. The driver then gives up on the read at once (mysql and pgx
// watch the context; for lib/pq the watched call returns), the read's
// connection is destroyed, and read replays the read elsewhere like any
// read that failed before returning a row. The borrow is covered too: a
// dial hung on the node is rescued like a statement. Without it, every
// read in flight on a node that hung waits out its whole deadline
// although rwpool found the node down long before.
//
// The same watch suspects a hang sooner (a read still running after
// probe_timeout asks for a probe of its node: node.suspect, so a hung node
// is found within about twice probe_timeout instead of at the next health
// check) and starts hedges (hedge.go).
//
// Cost: merging the caller's context with the node's trip needs someone
// to wait on both: context.WithCancel plus context.AfterFunc costs five
// allocations, so each virtual connection has a watcher goroutine instead
// (as go-sql-driver/mysql has per connection). A read is not handed to it
// when it starts: that hand-off (a goroutine woken per read, and its
// timer) was most of what rwpool added to a read. The Connector's sweep
// (sweep.go) looks at the reads in flight every millisecond and hands the
// watcher only those that outlive two sweeps; in its first sweeps a read
// is rescued and ended by the sweep itself. The readCtx, which carries the
// read's rows too (queryRows), is the one allocation a read with a
// deadline adds.

// The Done channel a read hands the driver is that of a plain
// context.WithCancel(context.Background()) the watcher keeps, reused read
// after read until one is cancelled, and Value answers the standard
// library's own lookup of it: a driver that ties work to the context with
// context.AfterFunc (pgx) registers with that context as it would with
// the caller's, instead of starting a goroutine per statement, as it must
// for a context type it does not know.
//
// A read whose context can never end and that cannot be hedged is rescued
// only on a driver that ties a statement to its context without a
// goroutine hand-off (pgx: driverinfo.TiesContextCheaply); elsewhere the
// driver gets the caller's context and the read is not rescued, as on the
// bare driver. Handing go-sql-driver/mysql a context that can end makes it
// arm its connection's watcher goroutine for every statement and wait for
// it at the statement's end: at 64 goroutines on 2 cores that wait, one
// more goroutine to schedule per statement, put rwpool's p99 on MariaDB at
// up to twice the bare driver's (benchstat/05-background-reads-unwatched.md).

// readCtx is the context a plain read runs with. Its Done closes when the
// caller's context ends, the read is rescued, or a hedge answered first;
// Deadline and Value are the caller's. A new one is made per read; its
// Done channel is reused by the next read until one is closed, and Err
// stays consistent with it. The rows of a hedge that won carry one made by
// hedgeContext, which no driver sees: like the one of a read whose context
// cannot end (w is nil), it only reports its node's trip (rescued).
type readCtx struct {
	parent context.Context
	inner  context.Context    // the watcher's: its Done is the read's
	cancel context.CancelFunc // inner's, called by whoever ends the read
	n      *node
	w      *watcher
	trip   <-chan struct{} // n's trip channel as of before the read's borrow (readContext)
	state  atomic.Int32
	seen   atomic.Int64 // monoNow of the first sweep that saw it, or of its arming (sweep.go)
	armed  atomic.Bool  // handed to the watcher (sweep.go)

	// hedging (hedge.go); query is empty when the read may not be hedged
	query string
	args  []driver.NamedValue
	won   *rows                              // the hedge's answer, set before the state becomes readHedged
	stop  atomic.Pointer[context.CancelFunc] // cancels the hedge in flight

	// own is the read's rows, if it gets any (queryRows): allocated with
	// the readCtx, a read with a deadline costs one allocation, not two.
	own     rows
	ownUsed bool
}

// readCtx states. A read is running until its call returns (answered) and
// finished when its rows close; the watcher may end it first (ended,
// rescued) and a hedge may answer first (hedged). Done closes on the
// transitions to ended, rescued and hedged, each of which happens at most
// once.
const (
	readRunning int32 = iota
	readAnswered
	readFinished
	readEnded   // the caller's context ended
	readRescued // the node became unavailable
	readHedged  // a hedge answered first
)

func (r *readCtx) Deadline() (time.Time, bool) { return r.parent.Deadline() }
func (r *readCtx) Done() <-chan struct{}       { return r.inner.Done() }

// Value is the caller's, but for the standard library's lookup of the
// cancelable context behind Done, which inner answers (inner's parent,
// context.Background, answers nothing else).
func (r *readCtx) Value(key any) any {
	if v := r.inner.Value(key); v != nil {
		return v
	}
	return r.parent.Value(key)
}

func (r *readCtx) Err() error {
	select {
	case <-r.inner.Done():
	default:
		return nil
	}
	if r.w != nil && r.state.Load() == readEnded {
		return r.parent.Err()
	}
	// Rescued, hedged; or, for a goroutine a driver left watching a read
	// that ended, the next read's end (they share a Done channel until
	// one is closed): Done and Err must agree.
	return context.Canceled
}

// rescued reports whether the read was cancelled because its node became
// unavailable (and not because the caller's context ended).
func (r *readCtx) rescued() bool {
	if r == nil {
		return false
	}
	if r.w == nil { // only a trip ends it
		return r.inner.Err() != nil
	}
	return r.state.Load() == readRescued
}

// answer records that the read's call returned and reports the read's
// state: readAnswered, or how it was ended first. A hedge in flight is
// cancelled.
func (r *readCtx) answer() int32 {
	if r == nil {
		return readAnswered
	}
	if r.w == nil {
		if r.rescued() {
			return readRescued
		}
		return readAnswered
	}
	s := readAnswered
	if !r.state.CompareAndSwap(readRunning, readAnswered) {
		s = r.state.Load()
	}
	// A hedge that lost (to the read, or to the read's rescue or end) is
	// cancelled; the winner's context is its rows'.
	if stop := r.stop.Load(); stop != nil && s != readHedged {
		(*stop)()
	}
	return s
}

// live reports whether the read is still running or being read.
func (r *readCtx) live() bool {
	s := r.state.Load()
	return s == readRunning || s == readAnswered
}

// end ends a running or answered read for why (readEnded, readRescued):
// Done closes and Err says why.
func (r *readCtx) end(why int32) {
	if r.state.CompareAndSwap(readRunning, why) || r.state.CompareAndSwap(readAnswered, why) {
		r.cancel()
	}
}

// finish ends the watch of a read; its rows, if any, are closed.
func (r *readCtx) finish() {
	if r == nil || r.w == nil {
		return
	}
	w := r.w
	if !r.state.CompareAndSwap(readAnswered, readFinished) && !r.state.CompareAndSwap(readRunning, readFinished) {
		w.renew() // the read was ended: the old context is cancelled
	}
	w.vc.cur.CompareAndSwap(r, nil)
	w.busy = false
	// The watcher, if armed, is not told: it learns when its next event
	// finds the read finished, or at the next arm. Waking it here would
	// double what a read costs it.
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
	vc   *conn
	arm  chan *readCtx // a read to watch; unbuffered: the goroutine is waiting
	quit chan struct{} // closed when the virtual connection closes
	ctx  context.Context
	stop context.CancelFunc // ctx's: reads get them, until one is cancelled
	busy bool               // a read is armed (its rows may still be open)
	dead bool               // the goroutine could not start or has stopped
}

// readContext returns the context for a plain read on n and the readCtx to
// answer and finish (nil when the read needs none). query and args are the
// read's, if it may be hedged.
func (vc *conn) readContext(ctx context.Context, n *node, query string, args []driver.NamedValue) (context.Context, *readCtx) {
	c := vc.c
	hedge := query != "" && c.cfg.HedgeAfter > 0
	if !c.cfg.Breaker && !hedge {
		return ctx, nil
	}
	if ctx.Done() == nil && !hedge {
		if c.watch || !c.cheapCtx || !c.cfg.Breaker {
			// Watching every read that never times out costs more than
			// rescuing such reads saves: lib/pq's must run in a
			// goroutine, go-sql-driver/mysql's wait for its watcher.
			return ctx, nil
		}
		// Nothing to merge: the read's context is the connection's own
		// child of the node's trip context, cancelled by the trip. No
		// watcher is woken, and there is no suspicion timer.
		r := &readCtx{parent: ctx, inner: vc.tripChild(n), n: n}
		return r, r
	}
	w := vc.watcher()
	if w == nil || w.busy {
		return ctx, nil // two reads at once on one *sql.Conn: the second is not watched
	}
	// The trip channel is taken here, before the borrow and the call, not
	// by the sweep or the watcher: they may look only after the read is in
	// the driver, and a trip meanwhile swaps in the next channel
	// (onEvent), which they would wait on while the read they should
	// rescue runs on. Taken here, a trip before it fails the borrow
	// (acquire tests Tripped), and any later one closes it.
	r := &readCtx{parent: ctx, inner: w.ctx, cancel: w.stop, n: n, w: w, trip: n.tripped()}
	if hedge {
		r.query, r.args = query, hedgeArgs(args)
		c.hedges.read(slotNow())
	}
	w.busy = true
	soon := c.sweep.soon(ctx)
	vc.cur.Store(r) // published, then the sweeper's state read (sweeper.run)
	if !soon && c.sweep.awake.Load() {
		return r, r // the sweep arms it if it outlives its first sweeps (sweep.go)
	}
	// Its deadline may come before the sweep would arm it, or the sweeper
	// sleeps (and is woken): armed now, so that its end comes at once.
	c.sweep.nudge()
	if !r.armed.CompareAndSwap(false, true) {
		return r, r // a last sweep before sleeping armed it
	}
	r.seen.Store(monoNow())
	select {
	case w.arm <- r:
		return r, r
	case <-c.stop:
		w.dead = true
		w.busy = false
		vc.cur.Store(nil)
		return ctx, nil
	}
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
	w = &watcher{vc: vc, arm: make(chan *readCtx), quit: make(chan struct{})}
	w.renew()
	vc.w = w
	if !vc.c.bg.Go(w.run) {
		w.dead = true
		return nil
	}
	vc.c.sweep.add(vc.c, vc)
	return w
}

// renew gives the reads to come a new context: the last one was
// cancelled.
func (w *watcher) renew() { w.ctx, w.stop = context.WithCancel(context.Background()) }

// close ends the watcher goroutine; the connection is closing.
func (w *watcher) close() {
	if w != nil && !w.dead {
		w.dead = true
		close(w.quit)
		w.vc.c.sweep.remove(w.vc)
	}
}

func (w *watcher) run() {
	c := w.vc.c
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var (
		r                  *readCtx // the read watched, until it is found over
		parent, trip       <-chan struct{}
		tick               <-chan time.Time
		start              time.Time
		hedgeAt, suspectAt time.Duration // since start; -1 once done
		refused            bool          // r's hedge was refused by the budget (asked again each slot)
	)
	// schedule sets the timer for r's next deadline, if any.
	schedule := func() {
		d := suspectAt
		if hedgeAt >= 0 && (d < 0 || hedgeAt < d) {
			d = hedgeAt
		}
		tick = nil
		if d >= 0 {
			timer.Reset(d - time.Since(start))
			tick = timer.C
		}
	}
	// over reports whether r no longer needs watching, and if so forgets it.
	over := func() bool {
		if r != nil && r.live() {
			return false
		}
		r, parent, trip, tick = nil, nil, nil, nil
		timer.Stop()
		return true
	}
	arm, stop := w.arm, c.stop
	for {
		select {
		case a := <-arm:
			if !a.live() {
				// Armed by a sweep that found it before it finished: the
				// read watched now, if any, is a later one.
				continue
			}
			r = a
			start = time.Now().Add(-time.Duration(monoNow() - r.seen.Load()))
			parent, trip = r.parent.Done(), r.trip
			hedgeAt, suspectAt, refused = -1, c.cfg.ProbeTimeout, false
			if r.query != "" {
				hedgeAt = c.cfg.HedgeAfter
			}
			schedule()
		case <-tick:
			if over() {
				continue
			}
			since := time.Since(start)
			if hedgeAt >= 0 && since >= hedgeAt {
				hedgeAt = -1
				if w.hedge(r, refused) {
					refused, hedgeAt = true, since+hedgeSlot
				}
			}
			if suspectAt >= 0 && since >= suspectAt {
				suspectAt = -1
				r.n.suspect()
			}
			schedule()
		case <-parent:
			if !over() {
				r.end(readEnded)
				over()
			}
			if stop == nil {
				return
			}
		case <-trip:
			if !over() {
				r.end(readRescued)
				over()
			}
		case <-w.quit:
			return
		case <-stop:
			if over() || parent == nil {
				return
			}
			// The Connector closes: no more rescue or hedge, but the read
			// in flight keeps its caller's deadline (its Done is ours).
			arm, stop, trip, tick = nil, nil, nil, nil
			timer.Stop()
		}
	}
}

// discard settles pc, whose read on n was cancelled (its node became
// unavailable, or another answered first): pc is destroyed (or, abandoned
// by a watched call, closed by its goroutine). The rows rs the read got,
// if any, are closed unread: their driver rows must be closed whoever
// lost, but only once pc is, so that their Close cannot wait on a server
// that may not answer (lib/pq's reads the rest of the result first; on a
// closed connection every driver's returns at once).
func (n *node) discard(pc *pool.Conn, rs *rows, err error) {
	if err != errAbandoned {
		pc.Destroy()
	}
	if rs != nil {
		rs.closeUnread()
	}
	n.closedBroken.Add(1)
}

// closeUnread closes r's driver rows, and its statement if it has one,
// once their connection was destroyed (discard). Their errors are of no
// use: the connection is gone.
func (r *rows) closeUnread() {
	_ = r.rs.Close()
	if r.st != nil {
		_ = r.st.Close()
		r.st = nil
	}
}

// tripCtx is cancelled when its node next becomes unavailable.
type tripCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// newTrip installs a new trip context in n and returns the old one.
func (n *node) newTrip() *tripCtx {
	ctx, cancel := context.WithCancel(context.Background())
	return n.trip.Swap(&tripCtx{ctx, cancel})
}

// tripped returns a channel closed when n next becomes unavailable.
func (n *node) tripped() <-chan struct{} { return n.trip.Load().ctx.Done() }

// onEvent keeps n's trip channel in step with its breaker. The breaker
// delivers events in order, under its lock.
func (n *node) onEvent(e Event) {
	if e.Kind != StateChanged {
		return
	}
	switch {
	case e.To == Unavailable:
		// The next context is in place before the breaker lets reads in
		// again (it flips its state before the recovery's event): a read
		// routed in that gap must not find a cancelled one and be rescued
		// at once.
		n.newTrip().cancel()
		n.endpoint.reset() // a server back from an outage may be a new one (endpoint.go)
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
	now, every := monoNow(), int64(n.c.cfg.ProbeTimeout)
	last := n.suspected.Load()
	if now-last < every && !n.confirming.Load() || !n.suspected.CompareAndSwap(last, now) {
		// At most one probe per probe_timeout; while one runs, the
		// request is passed on (confirm: it may predate the cause).
		return
	}
	n.doubted.Store(true)
	n.confirm(func(perr error) error {
		return fmt.Errorf("a statement ran longer than probe_timeout (%s), and then %w", n.c.cfg.ProbeTimeout, perr)
	})
}

// hedgeArgs copies a hedgeable read's arguments for its hedge, which may
// run after the read's own call converted them in place (args.go) or
// returned (the caller may then reuse its []byte buffers). Values of
// other types are shared: database/sql hands drivers immutable values
// unless a driver's NamedValueChecker accepts types of its own.
func hedgeArgs(args []driver.NamedValue) []driver.NamedValue {
	if len(args) == 0 {
		return nil
	}
	cp := slices.Clone(args)
	for i, a := range cp {
		if b, ok := a.Value.([]byte); ok {
			cp[i].Value = bytes.Clone(b)
		}
	}
	return cp
}

// tripChild is the connection's child context of n's trip context, made
// anew once the node tripped (or on first use): a read whose context
// cannot end runs with it.
func (vc *conn) tripChild(n *node) context.Context {
	for i := range vc.trips {
		if t := &vc.trips[i]; t.n == n {
			if t.ctx.Err() == nil {
				return t.ctx
			}
			t.ctx, t.cancel = context.WithCancel(n.trip.Load().ctx)
			return t.ctx
		}
	}
	ctx, cancel := context.WithCancel(n.trip.Load().ctx)
	vc.trips = append(vc.trips, connTrip{n, ctx, cancel})
	return ctx
}

// connTrip is a connection's child context of one node's trip context.
type connTrip struct {
	n      *node
	ctx    context.Context
	cancel context.CancelFunc
}

// closeTrips releases the connection's trip contexts from their nodes'.
func (vc *conn) closeTrips() {
	for _, t := range vc.trips {
		t.cancel()
	}
	vc.trips = nil
}
