package rwpool

import (
	"context"
	"sync"
	"time"

	"github.com/rwpool/rwpool/internal/replication"
)

// WithMaxStaleness returns a context whose reads see at least everything
// the primary had committed d before the read started (bounded
// staleness), with or without a session: a replica serves such a read
// only once it has applied the primary's position of that moment, else
// it may wait for one (causal_wait) and then causal_fallback decides
// (the primary serves the read, or it fails with ErrTooStale). The bound
// has millisecond granularity; d <= 0 removes a bound ctx had.
//
//	// A dashboard that may be a second behind, but no more.
//	ctx := rwpool.WithMaxStaleness(ctx, time.Second)
//	rows, err := db.QueryContext(ctx, "SELECT count(*) FROM orders WHERE day = $1", day)
//
// How the primary's position of that moment is known, at what cost: the
// health checker reads the primary's position every check_interval, and
// every position rwpool reads on the primary for another reason (a
// session's write, another bounded read) is kept with the moment it was
// asked. A position asked after the bound's moment covers everything
// committed before it, so a read uses the newest one that is recent
// enough and asks the primary (one round trip, shared by every read
// waiting for it) only when none is: under load, one question per bound
// per Connector, not one per read. A replica already known to have
// applied that position costs nothing more; one not known is asked once,
// on the connection that then serves the read.
func WithMaxStaleness(ctx context.Context, d time.Duration) context.Context {
	o := optsOf(ctx)
	o.staleness = max(d, 0).Truncate(time.Millisecond)
	if d > 0 && o.staleness == 0 {
		o.staleness = time.Millisecond
	}
	return context.WithValue(ctx, ctxKey{}, o)
}

// freshPrimary keeps the primary's recent positions, each with the
// moment it was asked for (the question's start: the position covers
// everything committed before then), and the one question to the primary
// in flight, which concurrent reads share.
type freshPrimary struct {
	samples  replication.History // 64 samples: with the health checker's default 2 s interval, and reads asking only when they need to, further back than any useful bound
	mu       sync.Mutex          // guards inflight
	inflight *freshCall
}

type freshCall struct {
	done  chan struct{}
	asked time.Time
	pos   replication.Position
	err   error
}

// note records that the primary was at pos or beyond when asked at asked.
// A sample older than the newest kept is dropped (History.Add).
func (f *freshPrimary) note(asked time.Time, pos replication.Position) {
	if !pos.IsZero() {
		f.samples.Add(asked, pos)
	}
}

// forget drops what is known: after a change of primary (forgetPositions).
func (f *freshPrimary) forget() { f.samples.Reset() }

// primarySince returns a position of the primary asked at since or later:
// it covers everything the primary had committed at since. It is the
// oldest such position known (the weakest, so that the most replicas
// qualify), else the answer of a question asked now (or of the one in
// flight, if it was asked at since or later).
func (c *Connector) primarySince(ctx context.Context, since time.Time) (replication.Position, error) {
	f := &c.fresh
	if p, ok := f.samples.Since(since); ok {
		return p, nil
	}
	f.mu.Lock()
	call := f.inflight
	if call == nil || call.asked.Before(since) {
		call = &freshCall{done: make(chan struct{}), asked: time.Now()}
		f.inflight = call
		if !c.bg.Go(func() { c.askPrimary(call) }) {
			f.inflight = nil
			f.mu.Unlock()
			return replication.Position{}, ErrClosed
		}
	}
	f.mu.Unlock()
	select {
	case <-call.done:
		return call.pos, call.err
	case <-ctx.Done():
		return replication.Position{}, ctx.Err()
	}
}

// askPrimary reads the primary's current position for call, bounded by
// probe_timeout, and records it.
func (c *Connector) askPrimary(call *freshCall) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ProbeTimeout)
	defer cancel()
	call.pos, call.err = c.primaryPosition(ctx)
	if call.err == nil && call.pos.IsZero() {
		call.err = errNoPosition
	}
	f := &c.fresh
	f.mu.Lock()
	if f.inflight == call {
		f.inflight = nil
	}
	f.mu.Unlock()
	if call.err == nil {
		f.note(call.asked, call.pos)
	}
	close(call.done)
}
