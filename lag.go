package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool/internal/driverinfo"
	"github.com/rwpool/rwpool/internal/replication"
	"github.com/rwpool/rwpool/routing"
)

// This file holds what the health checker learns besides "alive": each
// node's reported role, its replication position and, for replicas, its
// lag, with the max_lag exclusion built on it.

// replState is a node's replication state as last read.
type replState struct {
	pos       atomic.Pointer[replication.Position] // newest position known applied (replica) or written (primary)
	statusErr atomic.Pointer[string]               // why the last status query failed; nil after a success
}

// position returns the node's newest known position.
func (r *replState) position() replication.Position {
	if p := r.pos.Load(); p != nil {
		return *p
	}
	return replication.Position{}
}

// forget drops the node's known position: after a change of primary the
// positions known from before may be on a history the new primary does
// not share (a crash failover's), and a replica's, compared with the new
// primary's, could seem to cover writes it never saw. The next status
// read or check learns it anew.
func (r *replState) forget() { r.pos.Store(nil) }

// forgetPositions forgets every node's known position (replState.forget).
func (c *Connector) forgetPositions() {
	for _, n := range c.topo().nodes {
		n.repl.forget()
	}
	c.fresh.forget()
}

// advance raises the node's known position to include p. Positions only
// move forward: a stale answer never lowers what a newer one proved.
func (r *replState) advance(p replication.Position) {
	for {
		old := r.pos.Load()
		next := p
		if old != nil {
			if old.Covers(p) {
				return
			}
			next = old.Merge(p)
		}
		if r.pos.CompareAndSwap(old, &next) {
			return
		}
	}
}

// flavor returns the replication flavor of the cluster, asking the server
// on conn when the driver alone does not tell (MySQL and MariaDB share a
// driver). It returns Unknown for drivers rwpool has no positions for, or
// when the question failed; it asks again next time.
func (c *Connector) flavor(ctx context.Context, conn driver.Conn) replication.Flavor {
	if f := replication.Flavor(c.flav.Load()); f != replication.Unknown || conn == nil {
		return f
	}
	if c.dialect != routing.DialectMySQL {
		return replication.Unknown
	}
	row, err := firstRow(ctx, conn, replication.VersionQuery)
	if err != nil || len(row) != 1 {
		return replication.Unknown
	}
	f := replication.FlavorOf(stringOf(row[0]))
	c.flav.Store(uint32(f))
	return f
}

// readStatus runs the status query on conn, which the probe has just used
// and which it bounds by ctx. A node whose status cannot be read is not
// tripped for it (its probe answered): the failure is kept for Stats.
func (n *node) readStatus(ctx context.Context, conn driver.Conn) (replication.Status, error) {
	f := n.c.flavor(ctx, conn)
	if f == replication.Unknown {
		return replication.Status{}, errNoFlavor
	}
	timeline := f == replication.Postgres && !n.c.noTimeline.Load()
	row, err := firstRow(ctx, conn, replication.StatusQuery(f, n.isPrimary(), timeline))
	if err != nil && timeline && driverinfo.Refused(err) {
		// A role that may not read the timeline (pg_control_checkpoint()
		// revoked from PUBLIC), or a server that only speaks PostgreSQL's
		// protocol: positions go without timelines from now on, as they
		// did before rwpool read them, rather than with no status at all.
		n.c.noTimeline.Store(true)
		row, err = firstRow(ctx, conn, replication.StatusQuery(f, n.isPrimary(), false))
	}
	if err != nil {
		return replication.Status{}, fmt.Errorf("status query: %w", err)
	}
	return replication.ParseStatus(f, row)
}

// observe records a status read at time at: the reported role (flagging
// a promoted replica or a demoted primary), the position, and for a
// replica its lag against the primary's history, excluding it from reads
// beyond max_lag. Hysteresis: a lagging replica comes back only once its
// lag is under half of max_lag, so one hovering around the limit does not
// flap in and out of rotation.
func (n *node) observe(at time.Time, st replication.Status, err error) {
	n.observeOn(at, st, "", err)
}

// observeOn is observe of a status read on the server whose identity is
// ident ("" if unknown).
func (n *node) observeOn(at time.Time, st replication.Status, ident string, err error) {
	if err != nil {
		if err != errNoFlavor {
			// Drivers may echo their DSN in errors: never the password.
			s := redactErr(err, n.cfg.DSN).Error()
			n.repl.statusErr.Store(&s)
		}
		return
	}
	n.repl.statusErr.Store(nil)
	n.statusAt.Store(time.Now().UnixNano())
	// The position first: a node seen writable (and so perhaps promoted,
	// promote.go) has its position known.
	n.repl.advance(st.Pos)
	wasReadOnly, _ := n.health.ReadOnly()
	n.health.SetReadOnly(st.ReadOnly)
	if n.isPrimary() && n.primaryMoved(wasReadOnly, st.ReadOnly, ident) && n.endpoint.firstMove(n.serverOf(ident)) {
		// A read-only primary is probed on a new connection each time
		// (probe): this one went through the endpoint anew and reached a
		// writable server, another than the one that answered read-only,
		// so the old connections may all be on that one.
		n.retire(errors.New("the primary reported read-only; a freshly dialled connection reaches another, writable server"))
	}
	if n.c.cfg.FollowPromotion {
		n.checkFollowing(st)
		n.c.followRoles()
		n.c.markBalancers() // before markBehind: a node viaBarred marks no other behind
		n.c.markBehind()
	}
	if n.isPrimary() {
		if !st.Pos.IsZero() {
			n.c.history.Add(at, st.Pos)
		}
		return
	}
	if !n.c.cfg.FollowPromotion && n.writableAway(st.ReadOnly) {
		return // out of reads whatever its lag
	}
	lag, atLeast, ok := n.c.history.Lag(at, st.Pos)
	if st.ReplayAge >= 0 && (!ok || atLeast || lag > 0) {
		// PostgreSQL's own clock of its last replayed commit bounds the
		// lag from above: it is tighter than an interpolation between
		// coarse samples, and the only estimate beyond the history,
		// where that gives a lower bound.
		switch {
		case !ok || atLeast:
			lag, ok = max(lag, st.ReplayAge), true
		default:
			lag = min(lag, st.ReplayAge)
		}
	}
	if !ok {
		n.health.SetLag(-1)
		return
	}
	n.health.SetLag(lag)
	max := n.c.cfg.MaxLag
	if max <= 0 {
		return
	}
	switch lagging := n.health.LaggingVerdict(); {
	case !lagging && lag > max:
		n.health.SetLagging(true, fmt.Errorf("rwpool: replica %s: replication lag %s exceeds max_lag %s",
			n.cfg.Name, lag.Round(time.Millisecond), max))
	case lagging && lag <= max/2:
		n.health.SetLagging(false, nil)
	}
}

func (n *node) isPrimary() bool { return n == n.c.primaryNode() }

// firstRow runs query on conn and returns its first row.
func firstRow(ctx context.Context, conn driver.Conn, query string) ([]driver.Value, error) {
	rs, st, err := queryReal(ctx, conn, query, nil)
	if err != nil {
		return nil, err
	}
	row, err := takeRow(rs)
	if st != nil {
		err = errors.Join(err, st.Close())
	}
	if err != nil {
		return nil, err
	}
	return row, nil
}

// takeRow reads the first row of rs and closes it. Byte slices are copied
// to strings: drivers may reuse them once the rows are closed.
func takeRow(rs driver.Rows) ([]driver.Value, error) {
	row := make([]driver.Value, len(rs.Columns()))
	err := rs.Next(row)
	if err == io.EOF {
		err = errNoRow
	}
	for i, v := range row {
		if b, ok := v.([]byte); ok {
			row[i] = string(b)
		}
	}
	return row, errors.Join(err, rs.Close())
}

// stringOf returns a value takeRow read as text; NULL is "".
func stringOf(v driver.Value) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}
