package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rwpool/rwpool/health"
	"github.com/rwpool/rwpool/internal/replication"
)

// probe runs probe_query on *conn, dialling a new connection first when
// *conn is nil or fresh is set, and returns its latency. It never borrows
// from the node's pool, so an exhausted pool cannot starve it, and it
// returns within probe_timeout even when the server hangs and the driver
// ignores its context: the call is then abandoned to a goroutine that
// closes the connection whenever the driver lets go. On failure *conn is
// nil.
func (n *node) probe(conn *driver.Conn, fresh bool) (time.Duration, error) {
	// A primary that reports itself read-only is asked on a new
	// connection every time: the probe connection may be the only one
	// still reaching a demoted primary behind a moved endpoint (fence.go).
	if n.probeStuck() {
		return 0, fmt.Errorf("probe: %w: an earlier probe is still stuck in the driver", health.ErrProbeTimeout)
	}
	fresh = fresh || n.refreshProbe.Swap(false) || n.isPrimary() && n.health.RoleMismatch() || n.checkEndpoint()
	if fresh && *conn != nil {
		(*conn).Close()
		*conn = nil
	}
	reuse := *conn
	*conn = nil
	start := time.Now()
	// got is written by the probe goroutine and read here only when
	// bounded returned that goroutine's own result (a happens-before edge);
	// after a timeout the goroutine owns it and closes it.
	ctx, cancel := context.WithTimeout(context.Background(), n.c.cfg.ProbeTimeout)
	defer cancel()
	got, err := await(&n.c.bg, ctx, func() (driver.Conn, error) {
		c := reuse
		if c == nil {
			var err error
			if c, err = n.conn.Connect(ctx); err != nil {
				return nil, err
			}
		}
		return c, runProbe(ctx, c, n.c.cfg.ProbeQuery)
	}, func(c driver.Conn, _ error) {
		n.stuckProbes.Add(-1) // the driver let go (see nudge)
		if c != nil {
			c.Close()
		}
	})
	if err == errAbandoned {
		// Counted until the driver lets go; the cleanup may have run
		// already, which leaves the count at zero.
		n.stuckProbes.Add(1)
		n.stuckAt.Store(monoNow())
		return 0, fmt.Errorf("probe: %w after %s", health.ErrProbeTimeout, n.c.cfg.ProbeTimeout)
	}
	if err != nil {
		if got != nil {
			got.Close()
		}
		if err == ErrClosed && reuse != nil {
			// Close has begun and the call never ran: the connection it
			// was handed is this function's to close (the checker's own,
			// which it gave up above).
			reuse.Close()
		}
		if reuse != nil && health.IsConnError(err) {
			// The server closed the checker's connection (an outage, a
			// restart): the next server reached is taken as it is, not as
			// a move (endpointSeen.reset).
			n.endpoint.reset()
		}
		return 0, fmt.Errorf("probe: %w", err)
	}
	lat := time.Since(start)
	if n.status(got, reuse == nil) {
		*conn = got
	}
	return lat, nil
}

// status reads the node's role and replication position on conn, which
// has just answered the probe, and records them (observe); on a replica's
// freshly dialled conn, and on a primary reporting itself read-only, it
// also reads the server's identity (endpoint.go). It has its own
// probe_timeout, and its failure never trips the node: only probe_query
// decides availability. It reports whether conn may be kept: after a
// timeout, the call is abandoned and conn closed when the driver lets go.
func (n *node) status(conn driver.Conn, dialled bool) (keep bool) {
	ctx, cancel := context.WithTimeout(context.Background(), n.c.cfg.ProbeTimeout)
	defer cancel()
	type result struct {
		st    replication.Status
		at    time.Time
		ident string
	}
	primary := n.isPrimary()
	asked := time.Now()
	r, err := await(&n.c.bg, ctx, func() (result, error) {
		st, err := n.readStatus(ctx, conn)
		r := result{st: st, at: time.Now()}
		if err == nil && n.wantsIdentity(primary, st, dialled) {
			r.ident, _ = n.identity(ctx, conn) // no identity: no check
		}
		return r, err
	}, func(result, error) {
		n.stuckProbes.Add(-1) // the driver let go (see probeStuck)
		conn.Close()
	})
	switch {
	case err == errAbandoned:
		n.stuckProbes.Add(1)
		n.stuckAt.Store(monoNow())
		n.observe(time.Now(), replication.Status{}, fmt.Errorf("status query: timed out after %s", n.c.cfg.ProbeTimeout))
		return false
	case health.IsConnError(err):
		n.observe(time.Now(), replication.Status{}, err)
		conn.Close()
		return false
	}
	n.observeOn(r.at, r.st, r.ident, err)
	if err == nil && primary && n.isPrimary() && !r.st.ReadOnly {
		n.c.fresh.note(asked, r.st.Pos)
	}
	if r.ident != "" && !primary {
		n.sameServer(r.ident, true)
		n.confirmMove()
		n.learnEndpoint()
		if n.c.cfg.FollowPromotion {
			// The servers just learnt may be a barred node's own (its
			// first identity read: a crashed primary back), or lead a
			// balancing endpoint to one: mark now, not at the next
			// status read of some node (observeOn ran before them).
			n.c.markBalancers()
		}
	}
	return true
}

// learnEndpoint settles, at once, whether a replica's endpoint leads to
// one server or balances over several, when the health checker has just
// reached a server behind it that it takes as new (the first, or a new
// one after an outage or a move): it dials anew until a second server
// answers (balancing, learnt) or endpointLearnDials dials all reached the
// one (single). A session's read may take the node of its last read as
// proof of what it saw only on an endpoint known to lead to one server
// (planRead); until then such reads ask the primary (floor), so the
// window is kept to one probe. The cost: endpointLearnDials dials and
// identity queries per replica when it is first reached, and again only
// when its server changes.
func (n *node) learnEndpoint() {
	for i := 0; i < endpointLearnDials && n.endpoint.learning(); i++ {
		ident, err := n.freshIdentity()
		if err != nil || ident == "" {
			return // the fifth checks go on with it, one fresh dial each
		}
		n.sameServer(ident, true)
		n.confirmMove() // a second server seen: a move or a balancing endpoint
	}
}

// confirmMove settles, at once, a possible move of a replica's endpoint
// that a fresh dial just showed (a server not known behind it): it dials
// anew until a known server answers (a balancing endpoint, learnt) or
// enough dials in a row reached unknown ones (a move, retired): see
// endpointMoveDials. A burst of a few dials, once per new server seen,
// instead of one dial per check_interval: a real move is found within the
// probe that first reached the new server.
func (n *node) confirmMove() {
	for i := 0; i < 4*endpointMoveDials && n.endpoint.suspecting(); i++ {
		ident, err := n.freshIdentity()
		if err != nil || ident == "" {
			return // the next probes go on with it (refreshProbe)
		}
		n.sameServer(ident, true)
	}
}

// freshIdentity dials n anew and reads the identity of the server it
// reaches, bounded by probe_timeout even when the driver ignores its
// context.
func (n *node) freshIdentity() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), n.c.cfg.ProbeTimeout)
	defer cancel()
	type result struct {
		conn  driver.Conn
		ident string
	}
	r, err := await(&n.c.bg, ctx, func() (result, error) {
		c, err := n.conn.Connect(ctx)
		if err != nil {
			return result{}, err
		}
		ident, err := n.identity(ctx, c)
		return result{c, ident}, err
	}, func(r result, _ error) {
		if r.conn != nil {
			r.conn.Close()
		}
	})
	if r.conn != nil {
		r.conn.Close()
	}
	return r.ident, err
}

// stuckProbeGrace is how long a probe stuck in the driver on a hung server
// holds off the next one. A hung server lets go of every statement when it
// resumes (or its connections break), and the next check_interval then
// probes it afresh; a probe lost for good (a connection whose peer vanished
// without a reset) holds the node off for at most this long. Without it a
// hung node would collect one stuck probe, goroutine and connection per
// check_interval for as long as it hangs.
const stuckProbeGrace = 30 * time.Second

// probeStuck reports whether a probe of n is still stuck in the driver,
// abandoned less than stuckProbeGrace (or ten check intervals, if longer)
// ago: the next probe would only join it.
func (n *node) probeStuck() bool {
	if n.stuckProbes.Load() <= 0 {
		return false
	}
	grace := max(stuckProbeGrace, 10*n.c.cfg.CheckInterval)
	return monoNow()-n.stuckAt.Load() < int64(grace)
}

func runProbe(ctx context.Context, c driver.Conn, query string) error {
	rows, st, err := queryReal(ctx, c, query, nil)
	if err != nil {
		return err
	}
	dest := make([]driver.Value, len(rows.Columns()))
	for err == nil {
		err = rows.Next(dest)
	}
	if err == io.EOF {
		err = nil
	}
	err = errors.Join(err, rows.Close())
	if st != nil {
		err = errors.Join(err, st.Close())
	}
	return err
}
