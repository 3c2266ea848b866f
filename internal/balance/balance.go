// Package balance measures what each replica delivers, for balance=adaptive:
// a latency estimate and the reads in flight, from which the picker
// (internal/pick) derives a cost.
//
// The decisions, and why:
//
//   - Latency is time to first response: from just before the driver's
//     statement call to its return (for a query, when the first result
//     arrives, not when the rows close). Rows read slowly by the caller are
//     the caller's time, not the node's.
//   - The estimate is an EWMA whose weight grows with the time since the
//     node's last observation: alpha = max(MinAlpha, (gap/ProbeEvery)²),
//     at most 1. A node read hundreds of times a second moves by MinAlpha
//     per read, so one slow read (a GC pause, a scheduler hiccup) barely
//     moves it, and the short gaps a client's own stalls leave (longer on
//     a node with less weight, which gets fewer reads) count no more; a
//     read after a quiet spell of ProbeEvery (the probe of a node that was
//     avoided, or the reads of a quiet client) replaces it, so a recovery
//     shows at the first probe that sees it. Turning slow shows within a
//     few reads: 200 ms slower, one read moves the estimate by 4 ms.
//   - Reads in flight are evidence before they come back: while a node
//     owes answers, the time since it last gave one (or since it was
//     given work, if later) is a lower bound on its latency now, so a
//     node that stalls (silent for 4 × its estimate + Stall) is avoided
//     then, not after its first slow read returns (if ever). The number
//     in flight is left out of the cost on purpose: it fluctuates with every burst of
//     the client's, more on a node with more weight, and each of those
//     fluctuations moved reads against the weights (tried first: with
//     latency × (1 + in flight) weights 3:1 came out 58:42 on a loaded
//     host, and 80:20 with a penalty on silences of a few milliseconds).
//   - A node avoided by the picker gets no reads, hence no measurement. So
//     a node not observed for ProbeEvery is chosen for one read (Claim):
//     it keeps being measured at a fixed rate of about one read per
//     ProbeEvery, whatever the traffic, so a recovery shows within
//     ProbeEvery and a slow node costs only that read's latency, not a
//     share of all reads (which would be what p99 sees).
//
// Every method is lock-free and allocation-free: atomics only.
package balance

import (
	"sync/atomic"
	"time"
)

// Tuning, fixed: DSN keys would expose internals few could set well.
const (
	// MinAlpha is the least weight an observation gets: the estimate of a
	// busy node averages over about its last 1/MinAlpha reads.
	MinAlpha = 0.02
	// ProbeEvery is how long a node may go unobserved before a read is
	// sent to it whatever its cost.
	ProbeEvery = 500 * time.Millisecond
	// Floor is added to every estimate in a cost: differences of a
	// millisecond or two are what a loaded client, a proxy hop or a
	// scheduler adds, not what a replica delivers, and replicas that
	// answer in a fraction of a millisecond must not shed reads over
	// them. A replica 200 ms slower than another is as plain with it.
	Floor = 2 * time.Millisecond
	// Stall is how long beyond 4 × its estimate a node that owes answers
	// must have been silent to be taken as stalled. It is well above what
	// a loaded client host stalls on its own (p99 of 10 to 50 ms with
	// -race on two busy cores): every replica is seen silent then, the
	// one with less weight (fewer reads) first, and judging on it moved
	// reads against the weights.
	Stall = 150 * time.Millisecond
)

// Meter measures one node. The zero value is ready: no estimate yet. Times
// are nanoseconds on the caller's monotonic clock (see Clock).
type Meter struct {
	inflight atomic.Int64
	est      atomic.Int64 // latency estimate, ns; 0 before the first observation
	at       atomic.Int64 // clock of the last observation
	busy     atomic.Int64 // clock of the last Start that found nothing in flight
	probed   atomic.Int64 // clock of the last Claim
}

// Clock returns a monotonic clock in nanoseconds since start.
func Clock(start time.Time) func() int64 {
	return func() int64 { return int64(time.Since(start)) }
}

// Start counts a read in flight on the node, started at now.
func (m *Meter) Start(now int64) {
	if m.inflight.Add(1) == 1 {
		m.busy.Store(now)
	}
}

// Done ends a read Start counted. It took d, measured at now; a read that
// failed before its node answered (its connection broke) passes ok=false
// and is not measured.
func (m *Meter) Done(now int64, d time.Duration, ok bool) {
	m.inflight.Add(-1)
	if ok {
		m.Observe(now, d)
	}
}

// Observe folds one latency d, measured at now, into the estimate.
// Concurrent observations may retry, never lose an update.
func (m *Meter) Observe(now int64, d time.Duration) {
	obs := max(int64(d), 1) // 0 means "no estimate"
	gap := now - m.at.Swap(now)
	q := float64(gap) / float64(ProbeEvery)
	alpha := min(1, max(MinAlpha, q*q))
	for {
		old := m.est.Load()
		next := obs
		if old != 0 {
			next = old + int64(alpha*float64(obs-old))
		}
		if m.est.CompareAndSwap(old, max(next, 1)) {
			return
		}
	}
}

// Estimate returns the latency estimate, 0 before the first observation.
func (m *Meter) Estimate() time.Duration { return time.Duration(m.est.Load()) }

// InFlight returns the reads in flight on the node now.
func (m *Meter) InFlight() int64 { return m.inflight.Load() }

// Stale reports whether the node has gone unobserved and unprobed for
// ProbeEvery at now.
func (m *Meter) Stale(now int64) bool {
	return now-m.at.Load() >= int64(ProbeEvery) && now-m.probed.Load() >= int64(ProbeEvery)
}

// Claim reports whether the caller may send the stale node one read to
// measure it: true for one caller per ProbeEvery.
func (m *Meter) Claim(now int64) bool {
	p := m.probed.Load()
	return m.Stale(now) && m.probed.CompareAndSwap(p, now)
}

// Cost is the node's cost for a read at now: its latency estimate plus
// Floor, or, while it owes answers and has been silent for longer than
// 4 × its estimate plus Stall (stalled), that silence plus Floor. A node
// without an estimate costs the least.
func (m *Meter) Cost(now int64) float64 {
	est := m.est.Load()
	if m.inflight.Load() <= 0 {
		return float64(est + int64(Floor))
	}
	if silent := now - max(m.at.Load(), m.busy.Load()); silent > 4*est+int64(Stall) {
		return float64(silent + int64(Floor))
	}
	// Shorter silences are what a busy node's spread of latencies and
	// the client host's own stalls explain.
	return float64(est + int64(Floor))
}
