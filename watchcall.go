package rwpool

import (
	"context"
	"database/sql/driver"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rwpool/rwpool/pool"
)

// Statements on a driver that may block past its context's end (lib/pq:
// needsWatch) run on a goroutine the caller can abandon. await starts one
// per call, which costs a goroutine's start and about seven allocations
// (its closures, its result channel, its state): on lib/pq a read with a
// deadline cost eight allocations more than bare (benchstat/09). Queries
// and execs, the statements every request makes, are handed instead to a
// parked worker goroutine of the Connector's, in the call record the
// worker owns: no allocation when a worker is idle. Rarer calls
// (prepares, probes, resets, closes) keep await.
//
// A worker belongs to one party at a time: the idle list, the caller that
// took it, or itself. The caller hands it a call and waits; if the call
// finishes first, the caller reads the result and puts the worker back
// (so the record is not reused before it is read); if the caller's
// context ends first, one compare-and-swap gives the call to the worker,
// which cleans up what the driver returns (destroys the connection, then
// closes the rows unread) and puts itself back.

// watchedCall is one query or exec handed to a callWorker.
type watchedCall struct {
	// Set by the caller before the hand-off.
	ctx   context.Context
	pc    *pool.Conn
	query string
	exec  bool
	// args is a copy the call owns, in room the record keeps: convertArgs
	// converts in place, and a read replayed elsewhere after its node
	// tripped converts the caller's args again while the abandoned call
	// may still be converting them (a data race TestSimulation found
	// under -race).
	args []driver.NamedValue

	// Set by the worker before it signals done.
	rows *rows
	res  driver.Result
	err  error

	state atomic.Int32  // callRunning, callFinished, callAbandoned: one CAS decides who owns the result
	done  chan struct{} // buffered 1: the worker's signal that the result is the caller's
}

const (
	callRunning int32 = iota
	callFinished
	callAbandoned
)

// reset empties wc for its worker's next call, keeping its args' room.
func (wc *watchedCall) reset() {
	clear(wc.args)
	wc.ctx, wc.pc, wc.query, wc.args = nil, nil, "", wc.args[:0]
	wc.rows, wc.res, wc.err = nil, nil, nil
}

// callWorker runs the calls handed to it, one at a time, in its record.
type callWorker struct {
	in   chan *watchedCall // buffered 1; nil tells the worker to leave
	call watchedCall
}

// callWorkers are a Connector's idle workers.
type callWorkers struct {
	mu     sync.Mutex
	idle   []*callWorker
	max    int          // idle workers kept; more leave after their call
	closed *atomic.Bool // the Connector's: read under mu (park)
}

// callWatched runs a query (exec false) or an exec on pc on a worker,
// bounded by ctx: when ctx ends first it returns errAbandoned at once, and
// the worker cleans up what the driver returns (pc is destroyed).
func (c *Connector) callWatched(ctx context.Context, pc *pool.Conn, query string, args []driver.NamedValue, exec bool) (*rows, driver.Result, error) {
	// No test of c.closed here: a statement of a transaction still open
	// while Close runs goes on as on a driver rwpool does not watch. An
	// idle worker is alive (one leaving takes itself out first: serve), and
	// a new one is refused by bg once Close is waiting for it.
	w := c.workers.take()
	if w == nil {
		w = &callWorker{in: make(chan *watchedCall, 1)}
		w.call.done = make(chan struct{}, 1)
		if !c.bg.Go(func() { c.serve(w) }) {
			return nil, nil, ErrClosed
		}
	}
	wc := &w.call
	wc.ctx, wc.pc, wc.query, wc.exec = ctx, pc, query, exec
	wc.args = append(wc.args[:0], args...)
	wc.state.Store(callRunning)
	w.in <- wc
	select {
	case <-wc.done:
	case <-ctx.Done():
		if wc.state.CompareAndSwap(callRunning, callAbandoned) {
			return nil, nil, errAbandoned // the worker owns itself now
		}
		<-wc.done // the worker finished first: the result is ours
	}
	rs, res, err := wc.rows, wc.res, wc.err
	wc.reset()
	c.workers.giveBack(w)
	return rs, res, err
}

// serve runs w's calls until the Connector closes, or until w finds
// enough workers idle already.
func (c *Connector) serve(w *callWorker) {
	for {
		select {
		case wc := <-w.in:
			if wc == nil {
				return
			}
			if wc.finish() {
				continue // its caller puts w back
			}
			if !c.workers.park(w) {
				return
			}
		case <-c.stop:
			if c.workers.remove(w) {
				return // idle: nobody can hand it a call any more
			}
			// A caller holds w: it is about to hand it a call, or
			// reading a result before it puts w back, which a closing
			// Connector refuses (giveBack tells w to leave).
			for {
				wc := <-w.in
				if wc == nil || !wc.finish() {
					return
				}
			}
		}
	}
}

// finish runs wc and reports whether its caller takes the result; if the
// caller abandoned it meanwhile, finish cleans up instead.
func (wc *watchedCall) finish() bool {
	if wc.exec {
		wc.res, wc.err = execReal(wc.ctx, wc.pc.Raw(), wc.query, wc.args)
	} else {
		wc.rows, wc.err = queryRows(wc.ctx, wc.pc, wc.query, wc.args)
	}
	if wc.state.CompareAndSwap(callRunning, callFinished) {
		wc.done <- struct{}{}
		return true
	}
	// Abandoned: nobody reads the result. pc, which the driver has let go
	// of, is destroyed first, then the rows are closed unread, as
	// node.discard does: lib/pq's rows Close reads the rest of the result,
	// and would wait on a server that may never answer for as long as pc
	// stays open (the worker stuck, the pool's slot taken).
	wc.pc.Destroy()
	if wc.rows != nil {
		wc.rows.closeUnread()
	}
	wc.reset()
	return false
}

// take returns an idle worker, or nil if there is none.
func (ws *callWorkers) take() *callWorker {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	n := len(ws.idle)
	if n == 0 {
		return nil
	}
	w := ws.idle[n-1]
	ws.idle[n-1] = nil
	ws.idle = ws.idle[:n-1]
	return w
}

// remove takes w out of the idle workers; it reports whether w was idle.
func (ws *callWorkers) remove(w *callWorker) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	i := slices.Index(ws.idle, w)
	if i < 0 {
		return false
	}
	ws.idle = slices.Delete(ws.idle, i, i+1)
	return true
}

// park makes w idle, unless enough workers are idle or the Connector is
// closing; it reports whether w is to wait for another call. closed is
// read under ws.mu: a worker that saw Close's stop and then found itself
// held (remove, under ws.mu too) is then sure to be refused here, and told
// to leave (serve, giveBack).
func (ws *callWorkers) park(w *callWorker) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed.Load() || len(ws.idle) >= ws.max {
		return false
	}
	ws.idle = append(ws.idle, w)
	return true
}

// giveBack is the caller's park of the worker whose result it read: a
// worker not parked is told to leave.
func (ws *callWorkers) giveBack(w *callWorker) {
	if !ws.park(w) {
		w.in <- nil
	}
}
