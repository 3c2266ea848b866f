package rwpool

import (
	"context"
	"database/sql/driver"
	"sync"
	"sync/atomic"
	"time"
)

// Hedged reads (hedge_after): a plain query with no answer after
// hedge_after is also started on another available node, chosen as a
// replay would be (other replicas, then the primary unless
// fallback=error); the first answer wins and the other read is cancelled,
// its connection discarded (the loser's call is cut short, so its
// protocol state is unknown). The watcher (rescue.go) times the read and
// starts the hedge in a goroutine of the Connector's; the read's caller
// adopts the hedge's rows when the hedge answered first. A hedge is
// rescued like a plain read (hedgeContext): cancelled if its node becomes
// unavailable while it runs, and once it won, its rows then fail fast with
// ErrUnavailable (rows already handed over are not replayed).
//
// Only queries are hedged, and only outside sessions that have written
// (whose reads must prove they see the session's writes) and WithPrimary:
// the rest has nowhere equivalent to go.
//
// hedge_budget bounds the hedges started to a share of the reads issued
// over the last 10 s (hedgeBudget), so that hedging never multiplies the
// load a slow node already causes: a read over budget is not hedged (a
// node that hung still has its reads rescued).

// The budget's sliding window: hedgeSlots slots of hedgeSlot each.
const (
	hedgeSlot     = 100 * time.Millisecond
	hedgeSlots    = 100 // 10 s
	hedgeMinSlots = 10  // the shortest window a hedge is checked against: 1 s
)

// hedgeBudget counts reads issued and hedges started per slot over the
// last hedgeSlots slots. A hedge is allowed only if, with it, the window of
// the last 10 s stays within the share, and every shorter one ending now
// (from 1 s) within the share plus one hedge: so a burst of hedges cannot
// use up in one second what ten seconds of reads allow, a window of 10 s
// anywhere in a steady load holds the share, and a low read rate still
// gets its share.
type hedgeBudget struct {
	share float64    // hedges allowed per read issued
	mu    sync.Mutex // serialises hedges (rare) and slot turnover (ten a second)
	slots [hedgeSlots]hedgeCount
}

type hedgeCount struct {
	slot   atomic.Int64 // the slot number it counts (time / hedgeSlot)
	reads  atomic.Int64
	hedges atomic.Int64
}

// slotNow is the slot number of now.
func slotNow() int64 { return monoNow() / int64(hedgeSlot) }

// count returns the counters of slot now, emptied if they last counted an
// older slot.
func (b *hedgeBudget) count(now int64) *hedgeCount {
	k := &b.slots[now%hedgeSlots]
	if k.slot.Load() != now {
		b.mu.Lock()
		if k.slot.Load() != now {
			k.reads.Store(0)
			k.hedges.Store(0)
			k.slot.Store(now)
		}
		b.mu.Unlock()
	}
	return k
}

// read counts a read that may be hedged, issued in slot now.
func (b *hedgeBudget) read(now int64) { b.count(now).reads.Add(1) }

// allow reports whether one more hedge, in slot now, stays within the
// budget, and if so counts it.
func (b *hedgeBudget) allow(now int64) bool {
	cur := b.count(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.fitsLocked(now) {
		return false
	}
	cur.hedges.Add(1)
	return true
}

// fits reports whether one more hedge, in slot now, would stay within the
// budget, without counting it.
func (b *hedgeBudget) fits(now int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fitsLocked(now)
}

// fitsLocked is fits with b.mu held. Slots that last counted an older
// slot number are left out, so it needs no turnover (count) first.
func (b *hedgeBudget) fitsLocked(now int64) bool {
	var reads, hedges int64
	for i := range int64(hedgeSlots) {
		if k := &b.slots[(now-i)%hedgeSlots]; k.slot.Load() == now-i {
			reads += k.reads.Load()
			hedges += k.hedges.Load()
		}
		if i+1 < hedgeMinSlots {
			continue
		}
		// The whole window holds the share exactly; the shorter ones
		// allow one hedge beyond it, so that a low read rate (fewer
		// reads a second than one over the share) can hedge at all.
		slack := 1.0
		if i+1 == hedgeSlots {
			slack = 0
		}
		if float64(hedges+1) > b.share*float64(reads)+slack {
			return false
		}
	}
	return true
}

// hedge starts a hedge of read r if it is still running, another node can
// serve it and the budget allows. It reports whether the budget refused
// it: the watcher then asks again a slot later (hedgeSlot), since a burst
// that filled the short windows (a node hanging under load makes every
// read on it want a hedge at once) leaves room again within a few slots,
// and the read would otherwise wait for its node's trip. refused says
// whether this read was refused before, so that it is counted once.
func (w *watcher) hedge(r *readCtx, refused bool) (retry bool) {
	c := w.vc.c
	if r.state.Load() != readRunning {
		return false
	}
	if refused && !c.hedges.fits(slotNow()) {
		// Still over budget: ask again later, without a pick, which
		// with balance=adaptive may spend a slow replica's probe claim.
		return true
	}
	n, _, err := c.pickRead(false, []*node{r.n}, false, false)
	if err != nil {
		return false // nowhere else to go
	}
	if !c.hedges.allow(slotNow()) {
		if !refused {
			r.n.hedgesRefused.Add(1)
		}
		return true
	}
	r.n.hedges.Add(1)
	ctx, rc, cancel := hedgeContext(r.parent, n)
	r.stop.Store(&cancel)
	if r.state.Load() != readRunning { // answered meanwhile: answer may have missed stop
		cancel()
		return
	}
	if !c.bg.Go(func() { w.runHedge(ctx, cancel, rc, r, n, r.args) }) {
		cancel()
	}
	return false
}

// hedgeContext returns the context a hedge on n runs with, for a read
// whose caller's context is parent, and cancel, which ends it and must be
// called once the hedge is over. The context ends with parent, at cancel
// (the hedge lost, or its rows closed), and when n becomes unavailable, as
// a plain read's would (rescue.go): a hedge on a node that hung does not
// wait for the caller's deadline, whether it is still running or won and
// its rows are being read. rc, for the hedge's rows, reports that last
// case (rescued: its Done is n's trip channel), so that they fail fast
// with ErrUnavailable and close without reading from n. Hedges are rare
// (hedge_budget): what this allocates is not on every read's path.
func hedgeContext(parent context.Context, n *node) (ctx context.Context, rc *readCtx, cancel context.CancelFunc) {
	trip := n.trip.Load().ctx
	ctx, stop := context.WithCancel(parent)
	unwatch := context.AfterFunc(trip, stop)
	rc = &readCtx{parent: parent, inner: trip, n: n}
	return ctx, rc, func() {
		unwatch()
		stop()
	}
}

// runHedge runs read r's query on n with ctx (hedgeContext). If it
// answers before r, r is ended (readHedged) and its caller adopts the
// rows, watched by rc; otherwise the hedge's work is undone here.
func (w *watcher) runHedge(ctx context.Context, cancel context.CancelFunc, rc, r *readCtx, n *node, args []driver.NamedValue) {
	pc, err := n.acquire(ctx)
	if err != nil {
		cancel()
		return
	}
	start := stmtStart{at: monoNow(), waited: pc.Waited(), ctx: ctx}
	rs, err := queryWatched(w.vc.c, ctx, pc, r.query, args)
	if err != nil {
		n.settle(ctx, pc, err)
		if ctx.Err() != nil && r.state.Load() != readRunning {
			// Cut short by the read it hedged, which answered first.
			w.vc.c.statementEnds(n, kindRead, outHedged, start, reasonHedged, nil)
		} else {
			w.vc.c.statementEnds(n, kindRead, outError, start, reasonHedged, err)
		}
		cancel()
		return
	}
	rs.pc, rs.n, rs.vc, rs.rc, rs.stop = pc, n, w.vc, rc, cancel
	rs.startAt, rs.kind = start.at, kindRead
	r.won = rs
	if r.state.CompareAndSwap(readRunning, readHedged) {
		w.vc.c.rowsAnswered(n, kindRead, start, reasonHedged) // the read adopts the rows
		r.n.hedgeWins.Add(1)
		r.cancel()
		// Another node answered first: the slow one may have hung.
		// Probing it now rather than at probe_timeout finds a hang within
		// about hedge_after + probe_timeout, so the reads the budget does
		// not hedge are rescued sooner (a slow but healthy node costs one
		// successful probe per probe_timeout).
		r.n.suspect()
		return
	}
	// The read answered first, and cancelled ctx: the hedge's connection
	// may be cut mid-protocol, so it is not reused, and its rows are closed
	// unread. (Not through rs.Close, which would park pc in the caller's
	// lease, and whose lib/pq Close may block.)
	cancel()
	n.discard(pc, rs, nil)
	w.vc.c.statementEnds(n, kindRead, outHedged, start, reasonHedged, nil) // overtaken by the read it hedged
	rs.startAt = 0
}
