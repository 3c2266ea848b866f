package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/health"
	"github.com/rwpool/rwpool/internal/balance"
	"github.com/rwpool/rwpool/internal/breaker"
	"github.com/rwpool/rwpool/internal/latency"
	"github.com/rwpool/rwpool/pool"
)

// node is one database server: its configuration, pool, breaker and
// counters.
type node struct {
	c      *Connector
	cfg    dsn.Node
	pool   *pool.Pool
	health *breaker.Node
	conn   nodeConnector // the real driver's connector, redacting and bounding dials

	// Discovered replicas (discover.go); zero for the DSN's nodes.
	src         *discoverer   // the source that found it
	member      string        // its Member.Name there
	memberAddr  string        // and the address it was listed at, host:port
	absentSince time.Time     // when its source first stopped listing it; zero while listed (its discoverer's goroutine only)
	unlisted    atomic.Bool   // its source no longer lists it (at this address): it serves no read while it waits to leave (discover.go)
	stop        chan struct{} // stops its health checker: closed when it leaves, or by Close
	gone        atomic.Bool   // it left the topology and drains

	confirming   atomic.Bool                       // a confirming probe is running
	doubted      atomic.Bool                       // a statement failed here as a dead or hung node fails, or ran past probe_timeout, and no confirming probe has answered since (isBehind)
	reconfirm    atomic.Pointer[func(error) error] // the cause of a confirm asked for while one ran (confirm)
	suspected    atomic.Int64                      // monoNow of the last probe a long statement asked for
	trip         atomic.Pointer[tripCtx]           // cancelled when the node trips (rescue.go)
	nudged       atomic.Int64                      // monoNow of the last probe statements asked of this unavailable node
	refreshProbe atomic.Bool                       // the health checker's next probe dials anew (retire)
	probes       atomic.Int64                      // probes of a replica, for endpointCheckEvery
	stuckProbes  atomic.Int64                      // probes abandoned on a hung server still in the driver (probe)
	stuckAt      atomic.Int64                      // monoNow of the last probe abandoned (probe)
	identDialing atomic.Bool                       // a pool dial is reading the server's identity (nodeConnector.dial)
	dropped      atomic.Int64                      // monoNow of the last dropIdle
	endpoint     endpointSeen                      // the servers a replica's endpoint led to (endpoint.go)
	fencer       fencer                            // fresh checks after read-only answers (fence.go)

	// follow_promotion (promote.go)
	unfollowed atomic.Bool               // a demoted primary not yet seen read-only since: it claims no promotion (checkFollowing)
	rejoin     atomic.Pointer[followBar] // set at a followed promotion until the node is seen following: no reads
	viaBarred  atomic.Bool               // a balancing endpoint known to lead to the server of a node with a rejoin bar: no reads (balancerbar.go)
	statusAt   atomic.Int64              // UnixNano of the last status read that succeeded (downSinceTrip)
	roleSince  atomic.Int64              // UnixNano of the last role change; 0: the DSN's role
	repl       replState                 // role, position and lag as last read

	// Without follow_promotion (writable.go)
	seenReadOnly atomic.Bool // the replica reported itself read-only once
	wentWritable atomic.Bool // and writable since: out of reads until read-only again

	latency            [numKinds][numOutcomes]latency.Histogram // statement times by kind and outcome (observe.go)
	addrHost, addrPort string                                   // where the DSN says the server is (StatementInfo)
	failoverWaits      atomic.Int64                             // writes sent here after waiting for a writable primary (failover_wait)
	failoverWaitNanos  atomic.Int64                             // the time they waited

	served    atomic.Int64 // statements and transactions routed here
	errors    atomic.Int64 // statements that failed here
	replays   atomic.Int64 // reads that failed here and were replayed elsewhere
	fallbacks atomic.Int64 // reads served here because no replica was available

	// Causal reads (session.go, staleness.go): reads that had to see a
	// position.
	causalReads     atomic.Int64 // served here
	causalWaits     atomic.Int64 // checks here allowed to wait for a position (causal_wait)
	causalWaitNanos atomic.Int64 // time those checks took
	causalFallbacks atomic.Int64 // served here (the primary) because no replica had the position, or it was unknown
	tooStale        atomic.Int64 // failed with ErrTooStale instead of coming here (the primary)

	// Hedged reads (hedge.go), counted on the node the read was slow on.
	hedges        atomic.Int64 // reads here that were hedged
	hedgeWins     atomic.Int64 // of them, those whose hedge answered first
	hedgesRefused atomic.Int64 // reads here that hedge_budget refused a hedge

	// Real connections closed by rwpool, by cause (see NodeStats).
	closedSession atomic.Int64
	closedBroken  atomic.Int64
	resets        atomic.Int64 // connections reset with reset_query instead of closed
	dials         atomic.Int64 // connections the pool opened

	meter balance.Meter // balance=adaptive's measure of its reads (balance.go)
}

// acquire borrows a real connection from the node's pool; from a tripped
// node it fails at once with an error wrapping ErrUnavailable.
func (n *node) acquire(ctx context.Context) (*pool.Conn, error) {
	if n.health.Tripped() {
		n.errors.Add(1)
		n.nudge()
		return nil, newUnavailableError(n.cfg.Name, n.health.Since(), n.health.LastError())
	}
	pc, err := n.pool.Acquire(ctx)
	if err != nil {
		n.errors.Add(1)
		if n.gone.Load() && errors.Is(err, pool.ErrClosed) {
			// A statement routed here just before the node left
			// discovery and drained: it is replayed elsewhere.
			return nil, newUnavailableError(n.cfg.Name, time.Now(), errors.New("it left discovery"))
		}
		n.failed(err)
		return nil, err
	}
	n.served.Add(1)
	return pc, nil
}

// noteErr counts a statement error on the node and, for a connection-level
// error, asks the breaker to confirm it.
func (n *node) noteErr(err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	n.errors.Add(1)
	n.failed(err)
}

// failed starts a confirming probe when err may mean the node is down: a
// connection-level error, or a statement deadline that passed (a hung node
// shows itself that way). The probe, on a fresh connection with
// probe_timeout, decides; an error alone never trips a node. Only one probe
// per node runs at a time, so an error storm costs one probe.
func (n *node) failed(err error) {
	if !n.c.cfg.Breaker || n.health.Tripped() {
		return
	}
	if !health.IsConnError(err) && !errors.Is(err, context.DeadlineExceeded) {
		return
	}
	if health.IsConnError(err) {
		n.dropIdle()
	}
	// Both wrapped: a probe that timed out (health.ErrProbeTimeout) marks
	// a hung node, which nudge leaves to the health checker.
	n.doubted.Store(true)
	n.confirm(func(perr error) error { return fmt.Errorf("%w (confirmed by probe: %w)", err, perr) })
}

// dropIdle discards the node's idle connections, at most once per
// probe_timeout, before the failed statement returns: a connection that
// broke says the others,
// to the same server, likely did too (it died, or restarted). Until the
// probe confirms, writes keep coming; one sent on a dead idle connection
// fails after the driver wrote it, and lib/pq and pgx cannot say whether
// it reached the server (ErrOutcomeUnknown), while a fresh dial to a dead
// server fails before anything is sent, and with failover_wait the write
// waits (TestIntegrationKillPromoteMove: 2 writes issued after the kill
// failed "may have been applied" on stale idle connections). On a healthy
// server whose one connection broke, the price is the pool's connections
// dialled anew, MaxConcurrentDials at a time.
//
// It runs in the failing statement's goroutine, not in the background: a
// write begun just after that failure returned, and leased before a
// background discard ran, was sent on a dead idle connection and failed
// with its outcome unknown (TestPatroniLeaderCrash, 1 of 5 local runs: a
// write begun under 1 ms after the first failure ended). Closing idle
// connections costs this error path a write and a close per connection;
// their sockets are idle, so neither waits on the server.
func (n *node) dropIdle() {
	if once(&n.dropped, n.c.cfg.ProbeTimeout) {
		n.pool.DiscardIdle()
	}
}

// confirm probes n on a fresh connection in the background, unless a
// probe asked for this way is running already, and trips n with
// cause(probe's error) if the probe fails.
//
// A request that finds a probe running is not dropped: that probe may
// have reached the server before what raised the request (a dial made
// just before the server hung answers, late, that all is well), so once
// it succeeded, one more probe follows at once, with the last such
// request's cause. Only one: the requests that arrive during the second
// start a new round afterwards, so a node whose statements keep failing
// while its probes succeed is probed back to back, as it would be
// without this, never more. Seen on a loaded machine: a hedge won on a
// healthy node, its probe answered 1.2 s later, after the node had hung,
// and the hedges that won meanwhile asked for nothing; the node tripped at
// the next health check, 2 s after it hung instead of 1 s.
func (n *node) confirm(cause func(error) error) {
	if !n.confirming.CompareAndSwap(false, true) {
		n.reconfirm.Store(&cause)
		if !n.confirming.CompareAndSwap(false, true) {
			return
		}
		// The probe ended meanwhile, maybe before seeing the request:
		// this one runs it.
	}
	n.reconfirm.Store(nil) // what asked before this probe began, it answers
	if !n.c.bg.Go(func() {
		defer n.confirming.Store(false)
		defer n.doubted.Store(false) // answered: tripped, or alive
		for again := true; ; again = false {
			var conn driver.Conn
			_, perr := n.probe(&conn, true)
			if conn != nil {
				conn.Close()
			}
			if perr != nil {
				n.health.Trip(cause(perr))
				return
			}
			next := n.reconfirm.Swap(nil)
			if !again || next == nil || n.health.Tripped() {
				return
			}
			cause = *next
		}
	}) {
		n.confirming.Store(false)
	}
}

// nodeConnector dials a node's real connections. It hides the node DSN's
// secrets in dial errors (drivers may echo the DSN they were given) and,
// for drivers that may block past a context's end (needsWatch: lib/pq
// bounds its startup handshake by connect_timeout, not by the context),
// returns at the context's end and closes the late connection itself.
//
// The pool's connector (pool set) also reads which server each new
// connection of a replica reached, once the health checker has learnt
// what its endpoint leads to: positions are read on the checker's own
// connection, which keeps reaching the server it was dialled to when a
// DNS name or proxy behind the endpoint turns to another one, while the
// reads then go to new connections. One such connection reaching a server
// not known behind the endpoint makes it no longer known to lead to one
// server (a session's read then checks its position on its own
// connection, session.go) and has the next probe dial afresh, which
// confirms the move (endpoint.go) within that probe instead of after
// endpointMoveDials probes. The cost: one identity query per new
// connection of a replica, next to the handshake it follows.
type nodeConnector struct {
	driver.Connector
	dsn  string
	c    *Connector
	pool *node // the node whose pool dials with it; nil for the health checker's
	// probeOf is the node whose probes dial with it (the health checker's):
	// a dial abandoned in the driver counts as a stuck probe (probeStuck),
	// so that a node whose dials hang collects one stuck dial, not one per
	// probe.
	probeOf *node
}

// dialled is what one dial of nodeConnector returns.
type dialled struct {
	conn  driver.Conn
	ident string // the server reached (replication.IdentityQuery); "" if not read
	seq   uint64 // the endpoint's dialSeq when the dial began
}

func (r nodeConnector) Connect(ctx context.Context) (driver.Conn, error) {
	var d dialled
	var err error
	if r.c.watch && ctx.Done() != nil {
		d, err = await(&r.c.bg, ctx, func() (dialled, error) {
			return r.dial(ctx)
		}, func(d dialled, err error) {
			if n := r.probeOf; n != nil {
				n.stuckProbes.Add(-1) // the driver let go of the dial
			}
			if err == nil { // drivers may return a typed nil with an error
				d.conn.Close()
			}
		})
		if err == errAbandoned {
			if n := r.probeOf; n != nil {
				// Counted until the driver lets go; the cleanup may have
				// run already, which leaves the count at zero.
				n.stuckProbes.Add(1)
				n.stuckAt.Store(monoNow())
			}
			err = ctx.Err()
		}
	} else {
		d, err = r.dial(ctx)
	}
	if err != nil {
		return nil, redactErr(err, r.dsn)
	}
	if n := r.pool; n != nil {
		n.dials.Add(1)
		if d.ident != "" {
			n.sameServerDialled(d.ident, d.seq)
		}
	}
	return d.conn, nil
}

// dial connects, and on a replica's pool whose endpoint is known, reads
// the identity of the server reached. An identity that cannot be read
// leaves the connection as it is: the next statement on it tells.
func (r nodeConnector) dial(ctx context.Context) (dialled, error) {
	var seq uint64
	known := false
	if n := r.pool; n != nil {
		seq, known = n.endpoint.dialSeq()
	}
	conn, err := r.Connector.Connect(ctx)
	if err != nil {
		return dialled{}, err
	}
	d := dialled{conn: conn, seq: seq}
	// One identity read at a time per node: on a server that hangs, each
	// would stay stuck in the driver, and reads that keep coming (each
	// hedged away, or rescued, in turn) would dial and add one every
	// hedge_after until the node trips (TestSimulation: stuck-probes, 9 on
	// one hung replica, hedge_after=20ms). A dial that skips it is checked
	// by the next.
	if n := r.pool; n != nil && !n.isPrimary() && known && n.identDialing.CompareAndSwap(false, true) {
		d.ident, _ = n.identity(ctx, conn)
		n.identDialing.Store(false)
	}
	return d, nil
}

// closeStmts closes real statements still open on pc, a clean pin about to
// go back to the pool, so that none outlives its lease on the server. It
// is bounded by probe_timeout (Close takes no context and lib/pq may
// block on a hung server) and reports whether pc may be reused: on
// failure or timeout pc is destroyed.
func (n *node) closeStmts(pc *pool.Conn, stmts []driver.Stmt) bool {
	ctx, cancel := context.WithTimeout(context.Background(), n.c.cfg.ProbeTimeout)
	defer cancel()
	_, err := watched(n.c, ctx, pc, func() (struct{}, error) {
		var errs []error
		for _, st := range stmts {
			errs = append(errs, st.Close())
		}
		return struct{}{}, errors.Join(errs...)
	}, nil)
	switch {
	case err == errAbandoned: // watched destroys pc when Close returns
		n.closedBroken.Add(1)
		return false
	case err != nil:
		n.closedBroken.Add(1)
		pc.Destroy()
		return false
	}
	return true
}

// reset runs reset_query on pc, a connection whose session state a lease
// changed, and returns it to the pool, or closes it if the reset fails or
// takes longer than probe_timeout. It runs in a goroutine of the
// Connector's: the lease that ended does not wait for it.
func (n *node) reset(pc *pool.Conn) {
	started := n.c.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), n.c.cfg.ProbeTimeout)
		defer cancel()
		var err error
		if n.c.watches(ctx) {
			_, err = watched(n.c, ctx, pc, func() (driver.Result, error) {
				return execReal(ctx, pc.Raw(), n.c.cfg.ResetQuery, nil)
			}, nil)
		} else {
			_, err = execReal(ctx, pc.Raw(), n.c.cfg.ResetQuery, nil)
		}
		switch {
		case err == errAbandoned: // watched closes pc when the driver lets go
			n.closedSession.Add(1)
		case err != nil:
			n.closedSession.Add(1)
			pc.Destroy()
		default:
			n.resets.Add(1)
			pc.Release()
		}
	})
	if !started { // closing: the pool closes it anyway
		n.closedSession.Add(1)
		pc.Destroy()
	}
}

// nudgeEvery is how often statements that find a node unavailable may ask
// for a probe of it between the health checker's own.
const nudgeEvery = 200 * time.Millisecond

// nudge probes a node now, at most every nudgeEvery, when statements
// still want it and it refuses them (writes refused by a tripped or
// read-only primary, or waiting for it with failover_wait): it comes back
// (or is found behind a moved endpoint: a read-only primary is probed on
// a fresh connection) within a fraction of check_interval instead of
// waiting for the next health check. A session's read also nudges a
// replica whose endpoint is not learnt yet (planRead): the probe's fresh
// dial learns it (learnEndpoint). Probing a dead node costs a refused dial; a
// node that hung (its probe timed out) is left to the health checker, and
// no nudge probes a node while an earlier probe of it is still stuck in
// the driver: each would stay stuck too (lib/pq ignores contexts), one more
// goroutine and connection per nudge.
//
// With follow_promotion, nudging the primary nudges every other node too:
// the writes it refuses wait for a promotion that only a status read of
// the promoted node can show, and the failover tooling (Patroni, say)
// makes one writable at a time of its own. Each is probed at most every
// nudgeEvery, so writes come back within a fifth of a second of the
// promotion instead of up to check_interval after it.
func (n *node) nudge() {
	if n.c.cfg.FollowPromotion && n.isPrimary() {
		for _, o := range n.c.topo().nodes {
			if o != n {
				o.nudgeProbe()
			}
		}
	}
	n.nudgeProbe()
}

// nudgeProbe is nudge for n alone.
//
// The probe holds the node's confirming flag, as confirm's does: a
// statement that fails on the node meanwhile leaves its request for a
// confirmation (reconfirm), which this probe answers when it ends. Its
// failure then trips the node, as confirm's probe would have: a replica
// that hangs while its nudge probe runs is taken out of the rotation
// within probe_timeout, not at its next health check.
func (n *node) nudgeProbe() {
	// The last error counts only while it keeps the node tripped: a node
	// that once hung and recovered is nudged like any other.
	if !n.c.cfg.Breaker || n.health.Tripped() && errors.Is(n.health.LastError(), health.ErrProbeTimeout) || n.stuckProbes.Load() > 0 {
		return // a hung node is the health checker's: its probes would pile up
	}
	if !once(&n.nudged, nudgeEvery) {
		return
	}
	if !n.confirming.CompareAndSwap(false, true) {
		return
	}
	n.reconfirm.Store(nil) // no confirm runs: a request left is answered already
	if !n.c.bg.Go(func() {
		var conn driver.Conn
		lat, err := n.probe(&conn, true)
		if conn != nil {
			conn.Close()
		}
		if err == nil {
			n.health.SetProbeLatency(lat)
			if n.health.Recover() {
				n.pool.DiscardIdle() // as after a health check's recovery
			}
		}
		// The flag first, then the request: one stored after the swap
		// finds the flag free and runs its own probe (confirm).
		n.confirming.Store(false)
		next := n.reconfirm.Swap(nil)
		switch {
		case next == nil:
		case err != nil:
			if !n.health.Tripped() {
				n.health.Trip((*next)(err))
			}
		default:
			n.confirm(*next) // the probe may have answered before the failure: once more
		}
	}) {
		n.confirming.Store(false)
	}
}
