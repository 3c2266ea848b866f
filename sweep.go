package rwpool

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The sweep: a plain read is not handed to its connection's watcher
// (rescue.go) when it starts. It is published in its virtual connection's
// slot (conn.cur), and one goroutine per Connector, the sweeper, looks at
// every slot each sweepEvery. A read it finds over is forgotten; one it
// finds running after its node tripped is rescued, and one whose caller's
// context ended is ended, as the watcher would have; one still running at
// its second sweep is armed: handed to its watcher, which from then on
// reacts at once and times its hedge and its suspicion.
//
// Why: the hand-off to the watcher (a channel send that wakes a goroutine,
// and the timer it sets) was most of what rwpool added to a read with a
// deadline, about a microsecond (issue #25). Almost every read is over
// before a millisecond; now only the reads that outlive the sweep pay for
// the hand-off, which next to their own duration costs nothing. A read
// pays a slot store and a clear instead.
//
// What it costs in behaviour: in its first sweepEvery, a read learns of
// its node's trip, and of its caller's cancel, up to sweepEvery late (then
// at most twice sweepEvery). A caller's deadline is not late: a read whose
// deadline falls within its first two sweeps is armed at once
// (readContext). Hedges and suspicion fire at hedge_after and
// probe_timeout as before: sweepEvery is at most half of either.
//
// The sweeper sleeps once it found no read in flight for sweepIdle, and
// the next read wakes it (one channel send then): an idle Connector costs
// no wake-up.

// sweepEvery bounds how long a read goes unwatched.
const sweepEvery = time.Millisecond

// sweepIdle is how many empty sweeps in a row put the sweeper to sleep.
const sweepIdle = 1000

// sweeper is a Connector's sweep of the reads in flight.
type sweeper struct {
	every   time.Duration // set by init
	started atomic.Bool
	awake   atomic.Bool   // the sweeper is ticking; a read need not wake it
	clock   atomic.Int64  // the wall clock of the last sweep (UnixNano)
	wake    chan struct{} // buffered (1): wakes a sleeping sweeper

	mu    sync.Mutex
	conns map[*conn]struct{} // the virtual connections whose slots it sweeps
}

// sweepInterval returns the sweep period of a Connector with cfg's
// hedge_after and probe_timeout: sweepEvery, or less so that arming
// precedes a hedge or a suspicion.
func sweepInterval(hedgeAfter, probeTimeout time.Duration) time.Duration {
	d := sweepEvery
	if hedgeAfter > 0 {
		d = min(d, hedgeAfter/2)
	}
	if probeTimeout > 0 {
		d = min(d, probeTimeout/2)
	}
	return max(d, 50*time.Microsecond)
}

// init prepares the sweep of a Connector with hedge_after and
// probe_timeout as given, before any read.
func (s *sweeper) init(hedgeAfter, probeTimeout time.Duration) {
	s.every = sweepInterval(hedgeAfter, probeTimeout)
	s.wake = make(chan struct{}, 1)
}

// add registers vc, whose watcher just started, and starts the sweeper on
// first use.
func (s *sweeper) add(c *Connector, vc *conn) {
	s.mu.Lock()
	if s.conns == nil {
		s.conns = make(map[*conn]struct{})
	}
	s.conns[vc] = struct{}{}
	s.mu.Unlock()
	if !s.started.Load() && s.started.CompareAndSwap(false, true) {
		s.clock.Store(time.Now().UnixNano())
		s.awake.Store(true)
		if !c.bg.Go(func() { s.run(c) }) {
			s.awake.Store(false) // closing: no sweeper, reads arm themselves
		}
	}
}

// remove forgets vc, which is closing.
func (s *sweeper) remove(vc *conn) {
	s.mu.Lock()
	delete(s.conns, vc)
	s.mu.Unlock()
}

// soon reports whether ctx's deadline may come before the sweep arms a
// read published now (two sweeps), even by a sweep that runs late: it is
// within three sweeps. The deadline is compared with the last sweep's
// wall clock, not with a clock read per read: a clock read costs what
// the sweep saves.
func (s *sweeper) soon(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && d.UnixNano()-s.clock.Load() <= 3*int64(s.every)
}

// nudge wakes the sweeper if it sleeps.
func (s *sweeper) nudge() {
	if s.awake.Load() {
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *sweeper) run(c *Connector) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	idle := 0
	for {
		select {
		case <-c.stop:
			s.drain(t)
			return
		case <-t.C:
		}
		if s.sweep() > 0 {
			idle = 0
			continue
		}
		if idle++; idle < sweepIdle {
			continue
		}
		// Going to sleep: a read published before the flag drops is found
		// by the last sweep; one published after it sees the flag down
		// and is armed by its own goroutine, which wakes the sweeper
		// (both sides store, then load: readContext).
		s.awake.Store(false)
		if s.sweep() > 0 {
			s.awake.Store(true)
			idle = 0
			continue
		}
		t.Stop()
		select {
		case <-c.stop:
			return // nothing in flight to drain
		case <-s.wake:
		}
		s.clock.Store(time.Now().UnixNano())
		s.awake.Store(true)
		t.Reset(s.every)
		idle = 0
	}
}

// drain keeps ending the reads still unarmed when the Connector closed
// at their callers' deadlines, as their watchers would have (a watcher
// keeps watching its read past Close), until none is left: no more
// rescue, arming or hedging.
//
// The flag drops first, as when going to sleep: a read published after it
// arms itself, finds the Connector closed and runs with its caller's
// context (readContext); one published before is found here. Without it,
// a read started while Close was still closing the pools (on a *sql.Conn
// held through it) was published for a sweeper that had already left,
// and ran past its deadline.
func (s *sweeper) drain(t *time.Ticker) {
	s.awake.Store(false)
	for {
		left := 0
		s.mu.Lock()
		for vc := range s.conns {
			r := vc.cur.Load()
			if r == nil || r.armed.Load() || !r.live() || r.parent.Done() == nil {
				continue
			}
			select {
			case <-r.parent.Done():
				r.end(readEnded)
			default:
				left++
			}
		}
		s.mu.Unlock()
		if left == 0 {
			return
		}
		<-t.C
	}
}

// sweep looks at every slot once and returns how many held a read.
func (s *sweeper) sweep() int {
	now := monoNow()
	n := 0
	s.clock.Store(time.Now().UnixNano())
	s.mu.Lock()
	defer s.mu.Unlock()
	for vc := range s.conns {
		r := vc.cur.Load()
		if r == nil {
			continue
		}
		n++
		if r.armed.Load() || !r.live() {
			continue
		}
		select {
		case <-r.trip:
			r.end(readRescued)
			continue
		case <-r.parent.Done():
			r.end(readEnded)
			continue
		default:
		}
		if r.seen.Load() == 0 {
			r.seen.Store(now) // published since the last sweep: armed at the next
			continue
		}
		if r.armed.CompareAndSwap(false, true) {
			select {
			case r.w.arm <- r:
			default:
				// The watcher is busy with an event (or gone with its
				// connection): next sweep.
				r.armed.Store(false)
			}
		}
	}
	return n
}
