package replication

import (
	"sync"
	"time"
)

// historySize bounds the primary positions kept: with the default 2s check
// interval, about two minutes. A replica further behind reads as at least
// that far behind.
const historySize = 64

// History keeps a primary's recent positions, each with the time it was
// read, so that a replica's applied position can be turned into a lag: how
// long ago the primary was where the replica is now. It is safe for
// concurrent use.
type History struct {
	mu      sync.Mutex
	samples [historySize]sample
	next, n int
}

type sample struct {
	at  time.Time
	pos Position
}

// Add records that the primary was at pos at time at. Samples must be
// added in time order; one that does not move forward in time is ignored.
// A sample on another PostgreSQL timeline than the newest one starts the
// history anew: the older samples name points of another history, which
// no node on the new one covers (Position.Covers), and every replica
// would read as far behind as the oldest of them.
func (h *History) Add(at time.Time, pos Position) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n > 0 && !at.After(h.at(h.n-1).at) {
		return
	}
	if h.n > 0 {
		if last := h.at(h.n - 1).pos.Timeline(); last != 0 && pos.Timeline() != 0 && last != pos.Timeline() {
			h.n = 0
		}
	}
	h.samples[h.next] = sample{at, pos}
	h.next = (h.next + 1) % historySize
	h.n = min(h.n+1, historySize)
}

// at returns the i-th sample, oldest first.
func (h *History) at(i int) sample {
	return h.samples[(h.next-h.n+i+historySize)%historySize]
}

// Latest returns the newest recorded primary position, if any.
func (h *History) Latest() (Position, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return Position{}, false
	}
	return h.at(h.n - 1).pos, true
}

// Since returns the oldest recorded position taken at since or later, if
// any: when samples are taken at the moment a position is asked for, the
// weakest position known to cover everything the primary had at since.
func (h *History) Since(since time.Time) (Position, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.n {
		if s := h.at(i); !s.at.Before(since) {
			return s.pos, true
		}
	}
	return Position{}, false
}

// Reset forgets every sample.
func (h *History) Reset() {
	h.mu.Lock()
	h.n = 0
	h.mu.Unlock()
}

// Lag estimates how far behind the primary a replica that has applied
// applied is, at time now:
//
//   - 0 if it has applied the newest primary position recorded (the
//     primary may have moved on since, by at most one check interval);
//   - otherwise now minus the moment the primary passed applied, found
//     between the newest sample the replica has and the next one by
//     interpolating on Position.Count (WAL bytes, transactions);
//   - if it has none of the samples, at least as old as the oldest:
//     atLeast is then set, the lag is only a lower bound.
//
// ok is false when nothing is recorded.
func (h *History) Lag(now time.Time, applied Position) (lag time.Duration, atLeast, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return 0, false, false
	}
	newest := h.at(h.n - 1)
	if applied.Covers(newest.pos) {
		return 0, false, true
	}
	for i := h.n - 2; i >= 0; i-- {
		had := h.at(i)
		if !applied.Covers(had.pos) {
			continue
		}
		next := h.at(i + 1)
		frac := 0.0
		c0, c1, c := had.pos.Count(), next.pos.Count(), applied.Count()
		if c1 > c0 && c > c0 {
			frac = min(float64(c-c0)/float64(c1-c0), 1)
		}
		passed := had.at.Add(time.Duration(frac * float64(next.at.Sub(had.at))))
		return max(now.Sub(passed), 0), false, true
	}
	return max(now.Sub(h.at(0).at), 0), true, true
}
