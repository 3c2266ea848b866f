// Package rwotel reports the statistics of an rwpool database as
// OpenTelemetry metrics.
//
// Register creates asynchronous (observable) instruments on a
// metric.MeterProvider and one callback that, at every collection, reads
// one rwpool.Snapshot and observes every instrument for every node, with the
// attributes "node" (the node's name in the rwpool DSN) and "role"
// ("primary" or "replica"):
//
//	reg, err := rwotel.Register(db, provider)
//	if err != nil { ... }
//	defer reg.Unregister()
//
// The instruments (names, kinds and units) are listed in the rwpool
// README ("Metric names") and in the constants of this package. Node DSNs, the
// text of a node's last error, replication positions and status query
// errors are never reported. MetricReplicationLag is observed only for
// nodes whose lag is known.
//
// To report several rwpool databases through one MeterProvider, tell them
// apart with WithAttributes (for instance attribute.String("db", "orders")):
// otherwise the observations of same-named nodes collide.
//
// This package lives in a module of its own, so that the rwpool module does
// not depend on OpenTelemetry.
package rwotel

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rwpool/rwpool"
)

// ScopeName is the instrumentation scope (meter name) of the instruments.
const ScopeName = "github.com/rwpool/rwpool/metrics/otel"

// Instrument names.
const (
	// MetricConnectionsOpen is the number of real connections open to a node
	// (idle, in use and being dialed); Int64ObservableUpDownCounter,
	// unit {connection}.
	MetricConnectionsOpen = "rwpool.connections.open"
	// MetricConnectionsIdle is the number of real connections idle in a
	// node's pool; Int64ObservableUpDownCounter, unit {connection}.
	MetricConnectionsIdle = "rwpool.connections.idle"
	// MetricConnectionsInUse is the number of real connections of a node
	// borrowed by statements; Int64ObservableUpDownCounter, unit
	// {connection}.
	MetricConnectionsInUse = "rwpool.connections.in_use"
	// MetricConnectionsMax is the maximum number of real connections open
	// to a node (pool_size); Int64ObservableUpDownCounter, unit
	// {connection}.
	MetricConnectionsMax = "rwpool.connections.max"
	// MetricWaiters is the number of borrowers waiting now for a
	// connection to a node; Int64ObservableUpDownCounter, unit {waiter}.
	MetricWaiters = "rwpool.waiters"
	// MetricWaits is the number of borrows from a node's pool that had to
	// wait; Int64ObservableCounter, unit {wait}.
	MetricWaits = "rwpool.waits"
	// MetricWaitTime is the total time borrows from a node's pool waited;
	// Float64ObservableCounter, unit s.
	MetricWaitTime = "rwpool.wait.time"
	// MetricStatementsServed is the number of statements and transactions
	// routed to a node; Int64ObservableCounter, unit {statement}.
	MetricStatementsServed = "rwpool.statements.served"
	// MetricStatementErrors is the number of statements that failed on a
	// node, including borrows refused because it was unavailable;
	// Int64ObservableCounter, unit {error}.
	MetricStatementErrors = "rwpool.statement.errors"
	// MetricNodeTrips is the number of times a node became unavailable;
	// Int64ObservableCounter, unit {trip}.
	MetricNodeTrips = "rwpool.node.trips"
	// MetricReplays is the number of reads that failed on a node and were
	// replayed on another; Int64ObservableCounter, unit {replay}.
	MetricReplays = "rwpool.replays"
	// MetricFallbacks is the number of reads served by a node (the primary)
	// because no replica was available; Int64ObservableCounter, unit
	// {fallback}.
	MetricFallbacks = "rwpool.fallbacks"
	// MetricCausalReads is the number of reads served by a node that had
	// to see a position (a causal session's writes, a resumed token, what
	// the session read before, a staleness bound); Int64ObservableCounter,
	// unit {read}.
	MetricCausalReads = "rwpool.causal.reads"
	// MetricCausalWaits is the number of checks of a node allowed to wait
	// (causal_wait) for a read's position; Int64ObservableCounter, unit
	// {wait}.
	MetricCausalWaits = "rwpool.causal.waits"
	// MetricCausalWaitTime is the total time those checks took;
	// Float64ObservableCounter, unit s.
	MetricCausalWaitTime = "rwpool.causal.wait_time"
	// MetricCausalFallbacks is the number of causal reads served by a node
	// (the primary) because no replica had their position, or it could
	// not be known; Int64ObservableCounter, unit {read}.
	MetricCausalFallbacks = "rwpool.causal.fallbacks"
	// MetricTooStale is the number of causal reads that failed with
	// ErrTooStale (causal_fallback=error) instead of going to a node (the
	// primary); Int64ObservableCounter, unit {read}.
	MetricTooStale = "rwpool.causal.too_stale"
	// MetricHedges is the number of reads on a node that had no answer
	// after hedge_after and were also started on another node;
	// Int64ObservableCounter, unit {hedge}.
	MetricHedges = "rwpool.hedges"
	// MetricHedgeWins is the number of reads on a node whose hedge on
	// another node answered first; Int64ObservableCounter, unit {hedge}.
	MetricHedgeWins = "rwpool.hedge.wins"
	// MetricHedgesRefused is the number of reads on a node that had no
	// answer after hedge_after and whose hedge hedge_budget refused (such
	// a read asks again every 100 ms); Int64ObservableCounter, unit {read}.
	MetricHedgesRefused = "rwpool.hedges.refused"
	// MetricNodeAvailable is 1 while routing may choose a node, 0 while it
	// is unavailable or lagging; Int64ObservableGauge, no unit.
	MetricNodeAvailable = "rwpool.node.available"
	// MetricNodeProbeLatency is the latency of a node's last successful
	// health probe (0 before the first); Float64ObservableGauge, unit s.
	MetricNodeProbeLatency = "rwpool.node.probe.latency"
	// MetricNodeBalanceLatency is what balance=adaptive takes a node's
	// read latency to be (rwpool.NodeStats.BalanceLatency; 0 with
	// balance=weighted); Float64ObservableGauge, unit s.
	MetricNodeBalanceLatency = "rwpool.node.balance.latency"
	// MetricReplicationLag is how far a replica is behind the primary, as
	// the health checker last measured it; Float64ObservableGauge, unit s.
	// It is observed only for nodes whose lag is known
	// (rwpool.NodeStats.LagKnown): never for the primary, nor for drivers
	// without replication positions or a replica not yet measured.
	MetricReplicationLag = "rwpool.replication.lag"
	// MetricNodeRoleMismatch is 1 while a node reports a role its
	// configuration does not expect (a writable replica or a read-only
	// primary), else 0; Int64ObservableGauge, no unit.
	MetricNodeRoleMismatch = "rwpool.node.role_mismatch"
	// MetricNodeRejoining is 1 while a node, after a promotion rwpool
	// followed (follow_promotion), is not yet seen following the new
	// primary and serves no read, else 0; Int64ObservableGauge, no unit.
	MetricNodeRejoining = "rwpool.node.rejoining"
	// MetricNodeDraining is 1 while a node, a replica a discover source
	// found, has left its source and finishes the statements running on
	// it (it takes no new one), else 0.
	MetricNodeDraining = "rwpool.node.draining"
	// MetricNodeBehind is 1 while a replica, with no writable primary (a
	// failover under way, follow_promotion), has applied less than another
	// available replica and serves no read, else 0; Int64ObservableGauge,
	// no unit.
	MetricNodeBehind = "rwpool.node.behind"
	// MetricNodeRoleSince is when a node was given its current role by a
	// promotion (follow_promotion), in seconds since the Unix epoch; 0
	// while it has the DSN's role. Float64ObservableGauge, unit s.
	MetricNodeRoleSince = "rwpool.node.role.since"
	// MetricNodeLagging is 1 while a replica is out of reads because its
	// lag exceeds max_lag (state "lagging"), else 0; Int64ObservableGauge,
	// no unit.
	MetricNodeLagging = "rwpool.node.lagging"
	// MetricConnectionsDialed is the number of real connections a node's
	// pool opened, each a new server session; Int64ObservableCounter, unit
	// {connection}.
	MetricConnectionsDialed = "rwpool.connections.dialed"
	// MetricConnectionsClosed is the number of a node's real connections
	// rwpool closed, with attribute cause: "session" (a lease changed
	// their session state), "broken" (a connection-level failure, or a
	// call interrupted at its deadline) or "expired" (idle_timeout,
	// max_lifetime); Int64ObservableCounter, unit {connection}.
	MetricConnectionsClosed = "rwpool.connections.closed"
	// MetricConnectionsReset is the number of a node's real connections
	// reset with reset_query instead of closed; Int64ObservableCounter,
	// unit {connection}.
	MetricConnectionsReset = "rwpool.connections.reset"
	// MetricFailoverWaits is the number of writes sent to a node after
	// waiting for a writable primary (failover_wait);
	// Int64ObservableCounter, unit {write}.
	MetricFailoverWaits = "rwpool.failover.waits"
	// MetricFailoverWaitTime is the total time those writes waited;
	// Float64ObservableCounter, unit s.
	MetricFailoverWaitTime = "rwpool.failover.wait_time"
)

// Attribute keys of every observation.
const (
	AttrNode = attribute.Key("node") // the node's name in the rwpool DSN
	AttrRole = attribute.Key("role") // "primary" or "replica"
	// AttrCause says why MetricConnectionsClosed's connections were closed.
	AttrCause = attribute.Key("cause")
)

// Option configures Register.
type Option func(*config)

type config struct {
	attrs []attribute.KeyValue
}

// WithAttributes adds attributes to every observation, for instance
// attribute.String("db", "orders") to tell two rwpool databases apart. The
// keys "node" and "role" are reserved: Register rejects them.
func WithAttributes(kv ...attribute.KeyValue) Option {
	return func(c *config) { c.attrs = append(c.attrs, kv...) }
}

// Register creates the rwpool instruments on a meter of mp (named
// ScopeName) and registers one callback that reports db, which must have
// been opened with rwpool (sql.Open("rwpool", …) or sql.OpenDB with an
// *rwpool.Connector). For any other *sql.DB it returns an error wrapping
// rwpool.ErrNotRWPool; it also returns an error for a nil mp or a reserved
// attribute key.
//
// Register also adds a statement observer (rwpool.WithStatementObserver)
// that records MetricOperationDuration, OpenTelemetry's
// db.client.operation.duration, for every statement.
//
// Call Unregister on the result to stop reporting, for instance before
// closing db; until then the callback holds db, and a closed db keeps
// reporting its last state.
func Register(db *sql.DB, mp metric.MeterProvider, opts ...Option) (metric.Registration, error) {
	if db == nil {
		return nil, errors.New("rwotel: nil *sql.DB")
	}
	return register(func() (rwpool.Snapshot, error) { return rwpool.Stats(db) }, func(o rwpool.Option) error { return rwpool.Configure(db, o) }, mp, opts)
}

// RegisterConnector is Register for programs that open their *sql.DB with
// sql.OpenDB(c).
func RegisterConnector(c *rwpool.Connector, mp metric.MeterProvider, opts ...Option) (metric.Registration, error) {
	if c == nil {
		return nil, errors.New("rwotel: nil *rwpool.Connector")
	}
	return register(func() (rwpool.Snapshot, error) { return c.Stats(), nil }, func(o rwpool.Option) error { o(c); return nil }, mp, opts)
}

// register creates the instruments, registers the callback that reads
// stats, and adds the statement observer of MetricOperationDuration with
// configure.
func register(stats func() (rwpool.Snapshot, error), configure func(rwpool.Option) error, mp metric.MeterProvider, opts []Option) (metric.Registration, error) {
	if mp == nil {
		return nil, errors.New("rwotel: nil MeterProvider")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	for _, kv := range cfg.attrs {
		if kv.Key == AttrNode || kv.Key == AttrRole {
			return nil, fmt.Errorf("rwotel: attribute %q is reserved", kv.Key)
		}
	}
	first, err := stats()
	if err != nil {
		return nil, fmt.Errorf("rwotel: %w", err)
	}
	m := mp.Meter(ScopeName)

	var errs []error
	i64 := func(inst metric.Int64Observable, err error) metric.Int64Observable {
		errs = append(errs, err)
		return inst
	}
	f64 := func(inst metric.Float64Observable, err error) metric.Float64Observable {
		errs = append(errs, err)
		return inst
	}
	upDown := func(name, unit, desc string) metric.Int64Observable {
		return i64(m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc)))
	}
	counter := func(name, unit, desc string) metric.Int64Observable {
		return i64(m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc)))
	}
	const conn = "{connection}"
	var (
		open            = upDown(MetricConnectionsOpen, conn, "Real connections open to the node: idle, in use and being dialed.")
		idle            = upDown(MetricConnectionsIdle, conn, "Real connections idle in the node's pool.")
		inUse           = upDown(MetricConnectionsInUse, conn, "Real connections of the node borrowed by statements.")
		maxOpen         = upDown(MetricConnectionsMax, conn, "Maximum number of real connections open to the node (pool_size).")
		waiters         = upDown(MetricWaiters, "{waiter}", "Borrowers waiting now for a connection to the node.")
		waits           = counter(MetricWaits, "{wait}", "Borrows from the node's pool that had to wait for a connection.")
		waitTime        = f64(m.Float64ObservableCounter(MetricWaitTime, metric.WithUnit("s"), metric.WithDescription("Total time borrows from the node's pool waited for a connection.")))
		served          = counter(MetricStatementsServed, "{statement}", "Statements and transactions routed to the node.")
		stmtErrs        = counter(MetricStatementErrors, "{error}", "Statements that failed on the node, including borrows refused because it was unavailable.")
		trips           = counter(MetricNodeTrips, "{trip}", "Times the node became unavailable.")
		replays         = counter(MetricReplays, "{replay}", "Reads that failed on the node and were replayed on another node.")
		fallbacks       = counter(MetricFallbacks, "{fallback}", "Reads served by the node (the primary) because no replica was available.")
		causalReads     = counter(MetricCausalReads, "{read}", "Reads served by the node that had to see a position: a causal session's writes, a resumed token, what the session read before, or a staleness bound.")
		causalWaits     = counter(MetricCausalWaits, "{wait}", "Checks of the node allowed to wait (causal_wait) for a read's position.")
		causalWaitTime  = f64(m.Float64ObservableCounter(MetricCausalWaitTime, metric.WithUnit("s"), metric.WithDescription("Total time the node's checks allowed to wait for a read's position took.")))
		causalFallbacks = counter(MetricCausalFallbacks, "{read}", "Causal reads served by the node (the primary) because no replica had their position, or it could not be known.")
		tooStale        = counter(MetricTooStale, "{read}", "Causal reads that failed with ErrTooStale (causal_fallback=error) instead of going to the node (the primary).")
		hedges          = counter(MetricHedges, "{hedge}", "Reads on the node that had no answer after hedge_after and were also started on another node.")
		hedgeWins       = counter(MetricHedgeWins, "{hedge}", "Reads on the node whose hedge on another node answered first.")
		refused         = counter(MetricHedgesRefused, "{read}", "Reads on the node that had no answer after hedge_after and whose hedge was refused, over hedge_budget (at first: such a read asks again every 100 ms).")
		available       = i64(m.Int64ObservableGauge(MetricNodeAvailable, metric.WithDescription("1 if routing may choose the node, 0 while it is unavailable or lagging.")))
		probe           = f64(m.Float64ObservableGauge(MetricNodeProbeLatency, metric.WithUnit("s"), metric.WithDescription("Latency of the node's last successful health probe (0 before the first).")))
		balance         = f64(m.Float64ObservableGauge(MetricNodeBalanceLatency, metric.WithUnit("s"), metric.WithDescription("What balance=adaptive takes the node's read latency to be (time to first response, recent reads weighing most); 0 with balance=weighted and before the node's first read.")))
		lag             = f64(m.Float64ObservableGauge(MetricReplicationLag, metric.WithUnit("s"), metric.WithDescription("Replication lag of the replica behind the primary, as last measured (not observed until measured, nor for the primary).")))
		roleSince       = f64(m.Float64ObservableGauge(MetricNodeRoleSince, metric.WithUnit("s"), metric.WithDescription("When the node was given its current role by a promotion (follow_promotion), in seconds since the Unix epoch; 0 while it has the DSN's role.")))
		mismatch        = i64(m.Int64ObservableGauge(MetricNodeRoleMismatch, metric.WithDescription("1 if the node reports a role its configuration does not expect (a writable replica or a read-only primary), else 0.")))
		draining        = i64(m.Int64ObservableGauge(MetricNodeDraining, metric.WithDescription("1 while the node, a replica a discover source found, has left its source and finishes the statements running on it (it takes no new one), else 0.")))
		rejoining       = i64(m.Int64ObservableGauge(MetricNodeRejoining, metric.WithDescription("1 while the node, after a promotion rwpool followed, is not yet seen following the new primary and serves no read, else 0.")))
		behind          = i64(m.Int64ObservableGauge(MetricNodeBehind, metric.WithDescription("1 while the replica, with no writable primary (a failover under way), has applied less than another available replica and serves no read, else 0.")))
		lagging         = i64(m.Int64ObservableGauge(MetricNodeLagging, metric.WithDescription("1 while the replica is out of reads because its replication lag exceeds max_lag, else 0.")))
		dialed          = counter(MetricConnectionsDialed, "{connection}", "Real connections the node's pool opened, each a new server session.")
		closed          = counter(MetricConnectionsClosed, "{connection}", "Real connections of the node rwpool closed, by cause (session, broken, expired).")
		resets          = counter(MetricConnectionsReset, "{connection}", "Real connections of the node reset with reset_query instead of closed.")
		failoverWaits   = counter(MetricFailoverWaits, "{write}", "Writes sent to the node after waiting for a writable primary (failover_wait).")
		failoverTime    = f64(m.Float64ObservableCounter(MetricFailoverWaitTime, metric.WithUnit("s"), metric.WithDescription("Total time the writes sent to the node waited for a writable primary (failover_wait).")))
	)
	causes := [3]metric.MeasurementOption{
		metric.WithAttributes(AttrCause.String("session")),
		metric.WithAttributes(AttrCause.String("broken")),
		metric.WithAttributes(AttrCause.String("expired")),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rwotel: %w", err)
	}

	// A Connector's nodes never change, so the attribute set of each is
	// built once, here, and only read by the callback (which may run
	// concurrently for several readers).
	sets := make([]metric.MeasurementOption, len(first.Nodes))
	newSet := func(n *rwpool.NodeStats) metric.MeasurementOption {
		kv := append(slices.Clone(cfg.attrs), AttrNode.String(n.Name), AttrRole.String(n.Role))
		return metric.WithAttributeSet(attribute.NewSet(kv...))
	}
	for i := range first.Nodes {
		sets[i] = newSet(&first.Nodes[i])
	}
	attrsOf := func(i int, n *rwpool.NodeStats) metric.MeasurementOption {
		if i < len(first.Nodes) && first.Nodes[i].Name == n.Name && first.Nodes[i].Role == n.Role {
			return sets[i]
		}
		return newSet(n)
	}

	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s, err := stats()
		if err != nil {
			return fmt.Errorf("rwotel: %w", err)
		}
		for i := range s.Nodes {
			n := &s.Nodes[i]
			a := attrsOf(i, n)
			o.ObserveInt64(open, int64(n.Open), a)
			o.ObserveInt64(idle, int64(n.Idle), a)
			o.ObserveInt64(inUse, int64(n.InUse), a)
			o.ObserveInt64(maxOpen, int64(n.MaxOpen), a)
			o.ObserveInt64(waiters, int64(n.Waiting), a)
			o.ObserveInt64(waits, n.WaitCount, a)
			o.ObserveFloat64(waitTime, n.WaitDuration.Seconds(), a)
			o.ObserveInt64(served, n.Served, a)
			o.ObserveInt64(stmtErrs, n.Errors, a)
			o.ObserveInt64(trips, n.Trips, a)
			o.ObserveInt64(replays, n.Replays, a)
			o.ObserveInt64(fallbacks, n.Fallbacks, a)
			o.ObserveInt64(causalReads, n.CausalReads, a)
			o.ObserveInt64(causalWaits, n.CausalWaits, a)
			o.ObserveFloat64(causalWaitTime, n.CausalWaitDuration.Seconds(), a)
			o.ObserveInt64(causalFallbacks, n.CausalFallbacks, a)
			o.ObserveInt64(tooStale, n.TooStale, a)
			o.ObserveInt64(hedges, n.Hedges, a)
			o.ObserveInt64(hedgeWins, n.HedgeWins, a)
			o.ObserveInt64(refused, n.HedgesRefused, a)
			o.ObserveInt64(available, boolInt64(n.Available), a)
			o.ObserveFloat64(probe, n.ProbeLatency.Seconds(), a)
			o.ObserveFloat64(balance, n.BalanceLatency.Seconds(), a)
			if n.LagKnown {
				o.ObserveFloat64(lag, n.Lag.Seconds(), a)
			}
			o.ObserveInt64(mismatch, boolInt64(n.RoleMismatch()), a)
			o.ObserveInt64(rejoining, boolInt64(n.Rejoining), a)
			o.ObserveInt64(draining, boolInt64(n.Draining), a)
			o.ObserveInt64(behind, boolInt64(n.Behind), a)
			o.ObserveFloat64(roleSince, unixSeconds(n.RoleSince), a)
			o.ObserveInt64(lagging, boolInt64(n.State == rwpool.Lagging), a)
			o.ObserveInt64(dialed, n.Dials, a)
			o.ObserveInt64(closed, n.ClosedSession, a, causes[0])
			o.ObserveInt64(closed, n.ClosedBroken, a, causes[1])
			o.ObserveInt64(closed, n.ClosedExpired, a, causes[2])
			o.ObserveInt64(resets, n.Resets, a)
			o.ObserveInt64(failoverWaits, n.FailoverWaits, a)
			o.ObserveFloat64(failoverTime, n.FailoverWaitDuration.Seconds(), a)
		}
		return nil
	}, open, idle, inUse, maxOpen, waiters, waits, waitTime, served, stmtErrs, trips, replays, fallbacks, causalReads, causalWaits, causalWaitTime, causalFallbacks, tooStale, hedges, hedgeWins, refused, available, probe, balance,
		lag, mismatch, rejoining, draining, behind, roleSince, lagging, dialed, closed, resets, failoverWaits, failoverTime)
	if err != nil {
		return nil, fmt.Errorf("rwotel: %w", err)
	}
	d, err := newDurations(m, cfg.attrs)
	if err != nil {
		reg.Unregister()
		return nil, fmt.Errorf("rwotel: %w", err)
	}
	if err := configure(rwpool.WithStatementObserver(d.observe)); err != nil {
		reg.Unregister()
		return nil, fmt.Errorf("rwotel: %w", err)
	}
	return registration{reg, d}, nil
}

func boolInt64(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// unixSeconds is t in seconds since the Unix epoch, 0 for the zero time.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
