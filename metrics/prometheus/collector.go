// Package rwprom exports the statistics of an rwpool database to
// Prometheus.
//
// NewCollector returns a prometheus.Collector for a *sql.DB opened with
// rwpool. On every scrape it reads one rwpool.Snapshot, so all the values of
// one scrape come from the same moment, and it exports one series per node
// and metric, labelled with the node's name ("node") and role ("role"):
//
//	db, err := sql.Open("rwpool", dsn)
//	...
//	c, err := rwprom.NewCollector(db)
//	if err != nil { ... }
//	prometheus.MustRegister(c)
//	http.Handle("/metrics", promhttp.Handler())
//
// Node DSNs, the text of the last error of a node, replication positions
// and status query errors are never exported: the labels are the node
// names of the rwpool DSN.
//
// rwpool_replication_lag_seconds has a series only for the nodes whose lag
// is known (rwpool.NodeStats.LagKnown): replicas whose replication status
// the health checker has read (PostgreSQL, MariaDB and MySQL, with
// breaker=on). The primary, the replicas of other drivers and a replica
// not yet measured have none, rather than a misleading 0.
//
// To export several rwpool databases from one registry, give each collector
// a distinct constant label (WithConstLabels), or a distinct namespace;
// otherwise the second registration fails as a duplicate.
//
// This package lives in a module of its own, so that the rwpool module does
// not depend on the Prometheus client.
package rwprom

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rwpool/rwpool"
)

// DefaultNamespace is the prefix of every metric name unless WithNamespace
// says otherwise.
const DefaultNamespace = "rwpool"

// Option configures a collector.
type Option func(*config)

type config struct {
	namespace   string
	constLabels prometheus.Labels
}

// WithNamespace replaces the metric name prefix (DefaultNamespace,
// "rwpool"). An empty namespace leaves the names without prefix
// ("connections_open", …).
func WithNamespace(ns string) Option {
	return func(c *config) { c.namespace = ns }
}

// WithConstLabels adds labels with fixed values to every exported series,
// for instance {"db": "orders"} to tell two rwpool databases apart. The
// labels "node" and "role" are reserved. The map is copied.
func WithConstLabels(l prometheus.Labels) Option {
	return func(c *config) {
		if c.constLabels == nil {
			c.constLabels = prometheus.Labels{}
		}
		for k, v := range l {
			c.constLabels[k] = v
		}
	}
}

// collector is the prometheus.Collector of one rwpool database.
type collector struct {
	stats func() (rwpool.Snapshot, error)

	statementDuration *prometheus.Desc // a histogram per node, kind and outcome (latency.go)
	failoverWaits     *prometheus.Desc
	failoverWaitSecs  *prometheus.Desc
	latencyBounds     []float64 // rwpool.LatencyBounds in seconds

	connOpen, connIdle, connInUse, connMax      *prometheus.Desc
	waiters, waits, waitSeconds                 *prometheus.Desc
	served, errors, trips                       *prometheus.Desc
	replays, fallbacks                          *prometheus.Desc
	causalReads, causalWaits, causalWaitSeconds *prometheus.Desc
	causalFallbacks, tooStale                   *prometheus.Desc
	hedges, hedgeWins, hedgesRefused            *prometheus.Desc
	available, probeLatency                     *prometheus.Desc
	balanceLatency                              *prometheus.Desc
	replicationLag, roleMismatch, lagging       *prometheus.Desc
	rejoining, draining                         *prometheus.Desc
	discMembers, discRounds, discFailures       *prometheus.Desc
	discFailing                                 *prometheus.Desc
	behind                                      *prometheus.Desc
	roleSince                                   *prometheus.Desc
	dials, closed, resets                       *prometheus.Desc
}

// NewCollector returns a collector for db, which must have been opened with
// rwpool (sql.Open("rwpool", …) or sql.OpenDB with an *rwpool.Connector);
// for any other *sql.DB it returns an error wrapping rwpool.ErrNotRWPool.
// It also returns an error when the options make an invalid metric or
// label name.
//
// The collector holds db and reads rwpool.Stats(db) on every scrape, which
// needs no database connection. Unregister it before closing db if the
// process goes on; a collector of a closed db keeps exporting the last
// state.
func NewCollector(db *sql.DB, opts ...Option) (prometheus.Collector, error) {
	if db == nil {
		return nil, errors.New("rwprom: nil *sql.DB")
	}
	if _, err := rwpool.Stats(db); err != nil {
		return nil, fmt.Errorf("rwprom: %w", err)
	}
	return newCollector(func() (rwpool.Snapshot, error) { return rwpool.Stats(db) }, opts)
}

// NewConnectorCollector returns a collector for c, for programs that open
// their *sql.DB with sql.OpenDB(c). It returns an error for a nil c or when
// the options make an invalid metric or label name.
func NewConnectorCollector(c *rwpool.Connector, opts ...Option) (prometheus.Collector, error) {
	if c == nil {
		return nil, errors.New("rwprom: nil *rwpool.Connector")
	}
	return newCollector(func() (rwpool.Snapshot, error) { return c.Stats(), nil }, opts)
}

func newCollector(stats func() (rwpool.Snapshot, error), opts []Option) (*collector, error) {
	cfg := config{namespace: DefaultNamespace}
	for _, o := range opts {
		o(&cfg)
	}
	labels := []string{"node", "role"}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(cfg.namespace, "", name), help, labels, cfg.constLabels)
	}
	// A discover source's metrics are labelled with its name (its name=
	// attribute, or its scheme).
	sourceDesc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(cfg.namespace, "", name), help, []string{"source"}, cfg.constLabels)
	}
	col := &collector{
		stats:             stats,
		connOpen:          desc("connections_open", "Real connections open to the node: idle, in use and being dialed."),
		connIdle:          desc("connections_idle", "Real connections idle in the node's pool."),
		connInUse:         desc("connections_in_use", "Real connections of the node borrowed by statements."),
		connMax:           desc("connections_max", "Maximum number of real connections open to the node (pool_size)."),
		waiters:           desc("waiters", "Borrowers waiting now for a connection to the node."),
		waits:             desc("waits_total", "Borrows from the node's pool that had to wait for a connection."),
		waitSeconds:       desc("wait_seconds_total", "Total time borrows from the node's pool waited for a connection, in seconds."),
		served:            desc("statements_served_total", "Statements and transactions routed to the node."),
		errors:            desc("statement_errors_total", "Statements that failed on the node, including borrows refused because it was unavailable."),
		trips:             desc("node_trips_total", "Times the node became unavailable."),
		replays:           desc("replays_total", "Reads that failed on the node and were replayed on another node."),
		fallbacks:         desc("fallbacks_total", "Reads served by the node (the primary) because no replica was available."),
		causalReads:       desc("causal_reads_total", "Reads served by the node that had to see a position: a causal session's writes, a resumed token, what the session read before, or a staleness bound."),
		causalWaits:       desc("causal_waits_total", "Checks of the node allowed to wait (causal_wait) for a read's position."),
		causalWaitSeconds: desc("causal_wait_seconds_total", "Total time those checks took, in seconds."),
		causalFallbacks:   desc("causal_fallbacks_total", "Causal reads served by the node (the primary) because no replica had their position, or it could not be known."),
		tooStale:          desc("too_stale_total", "Causal reads that failed with ErrTooStale (causal_fallback=error) instead of going to the node (the primary)."),
		hedges:            desc("hedges_total", "Reads on the node that had no answer after hedge_after and were also started on another node."),
		hedgeWins:         desc("hedge_wins_total", "Reads on the node whose hedge on another node answered first."),
		hedgesRefused:     desc("hedges_refused_total", "Reads on the node that had no answer after hedge_after and whose hedge was refused, over hedge_budget (at first: such a read asks again every 100 ms)."),
		available:         desc("node_available", "1 if routing may choose the node, 0 while it is unavailable or lagging."),
		probeLatency:      desc("node_probe_latency_seconds", "Latency of the node's last successful health probe, in seconds (0 before the first)."),
		balanceLatency:    desc("node_balance_latency_seconds", "What balance=adaptive takes the node's read latency to be (time to first response, recent reads weighing most), in seconds; 0 with balance=weighted and before the node's first read."),
		replicationLag:    desc("replication_lag_seconds", "Replication lag of the replica behind the primary, in seconds, as last measured (no series until measured, none for the primary)."),
		roleMismatch:      desc("node_role_mismatch", "1 if the node reports a role its configuration does not expect (a writable replica or a read-only primary), else 0."),
		behind:            desc("node_behind", "1 while the replica, with no writable primary (a failover under way), has applied less than another available replica and serves no read, else 0."),
		draining:          desc("node_draining", "1 while the node, a replica a discover source found, has left its source and finishes the statements running on it (it takes no new one), else 0."),
		discMembers:       sourceDesc("discovery_members", "Replicas the discover source found that answered their first probe and are in the reads."),
		discRounds:        sourceDesc("discovery_rounds_total", "Times the discover source was asked for its replicas."),
		discFailures:      sourceDesc("discovery_failures_total", "Times the discover source failed, or answered no usable replica, and the replicas of its last good answer were kept."),
		discFailing:       sourceDesc("discovery_failing", "1 while the discover source's last answer failed (its last good set is kept), else 0."),
		rejoining:         desc("node_rejoining", "1 while the node, after a promotion rwpool followed, is not yet seen following the new primary and serves no read, else 0."),
		roleSince:         desc("node_role_since_seconds", "Unix time when the node was given its current role by a promotion (follow_promotion); 0 while it has the DSN's role."),
		lagging:           desc("node_lagging", "1 while the replica is out of reads because its replication lag exceeds max_lag, else 0."),
		dials:             desc("connections_dialed_total", "Real connections the node's pool opened (each a new server session)."),
		closed: prometheus.NewDesc(prometheus.BuildFQName(cfg.namespace, "", "connections_closed_total"),
			"Real connections of the node rwpool closed, by cause: session (a lease changed its session state), broken (a connection-level failure, or a call interrupted at its deadline), expired (idle_timeout, max_lifetime).",
			append(labels, "cause"), cfg.constLabels),
		resets:           desc("connections_reset_total", "Real connections of the node reset with reset_query instead of closed."),
		failoverWaits:    desc("failover_waits_total", "Writes sent to the node after waiting for a writable primary (failover_wait)."),
		failoverWaitSecs: desc("failover_wait_seconds_total", "Total time those writes waited for a writable primary, in seconds."),
		statementDuration: prometheus.NewDesc(prometheus.BuildFQName(cfg.namespace, "", "statement_duration_seconds"),
			"Time statements took on the node, from when each had its connection (pool waits are in wait_seconds_total) to its result or its rows' close, by kind (read, write, transaction) and outcome (ok, error, replayed: failed here and replayed elsewhere, hedged: overtaken by a hedge or the read it hedged).",
			append(labels, "kind", "outcome"), cfg.constLabels),
	}
	for _, b := range rwpool.LatencyBounds() {
		col.latencyBounds = append(col.latencyBounds, b.Seconds())
	}
	// Registering with a throwaway registry reports every invalid name
	// (bad namespace, bad or reserved constant label) now, as an error,
	// rather than at the caller's Register.
	if err := prometheus.NewPedanticRegistry().Register(col); err != nil {
		return nil, fmt.Errorf("rwprom: %w", err)
	}
	return col, nil
}

func (c *collector) descs() []*prometheus.Desc {
	return []*prometheus.Desc{
		c.connOpen, c.connIdle, c.connInUse, c.connMax,
		c.waiters, c.waits, c.waitSeconds,
		c.served, c.errors, c.trips,
		c.replays, c.fallbacks,
		c.causalReads, c.causalWaits, c.causalWaitSeconds, c.causalFallbacks, c.tooStale,
		c.hedges, c.hedgeWins, c.hedgesRefused,
		c.available, c.probeLatency, c.balanceLatency,
		c.replicationLag, c.roleMismatch, c.lagging, c.roleSince, c.rejoining, c.behind,
		c.draining, c.discMembers, c.discRounds, c.discFailures, c.discFailing,
		c.dials, c.closed, c.resets,
		c.statementDuration, c.failoverWaits, c.failoverWaitSecs,
	}
}

// Describe sends the descriptor of every metric the collector exports.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs() {
		ch <- d
	}
}

// Collect reads one Snapshot and sends every metric of every node (the lag
// only for nodes whose lag is known). Should
// the database no longer be found (see rwpool.Stats), it sends nothing, so
// one lost database does not fail the scrape of a whole registry.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.stats()
	if err != nil {
		return
	}
	const (
		gauge   = prometheus.GaugeValue
		counter = prometheus.CounterValue
	)
	for _, n := range s.Nodes {
		send := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
			ch <- prometheus.MustNewConstMetric(d, t, v, n.Name, n.Role)
		}
		send(c.connOpen, gauge, float64(n.Open))
		send(c.connIdle, gauge, float64(n.Idle))
		send(c.connInUse, gauge, float64(n.InUse))
		send(c.connMax, gauge, float64(n.MaxOpen))
		send(c.waiters, gauge, float64(n.Waiting))
		send(c.waits, counter, float64(n.WaitCount))
		send(c.waitSeconds, counter, n.WaitDuration.Seconds())
		send(c.served, counter, float64(n.Served))
		send(c.errors, counter, float64(n.Errors))
		send(c.trips, counter, float64(n.Trips))
		send(c.replays, counter, float64(n.Replays))
		send(c.fallbacks, counter, float64(n.Fallbacks))
		send(c.causalReads, counter, float64(n.CausalReads))
		send(c.causalWaits, counter, float64(n.CausalWaits))
		send(c.causalWaitSeconds, counter, n.CausalWaitDuration.Seconds())
		send(c.causalFallbacks, counter, float64(n.CausalFallbacks))
		send(c.tooStale, counter, float64(n.TooStale))
		send(c.hedges, counter, float64(n.Hedges))
		send(c.hedgeWins, counter, float64(n.HedgeWins))
		send(c.hedgesRefused, counter, float64(n.HedgesRefused))
		send(c.available, gauge, boolFloat(n.Available))
		send(c.probeLatency, gauge, n.ProbeLatency.Seconds())
		send(c.balanceLatency, gauge, n.BalanceLatency.Seconds())
		if n.LagKnown {
			send(c.replicationLag, gauge, n.Lag.Seconds())
		}
		send(c.roleMismatch, gauge, boolFloat(n.RoleMismatch()))
		send(c.rejoining, gauge, boolFloat(n.Rejoining))
		send(c.draining, gauge, boolFloat(n.Draining))
		send(c.behind, gauge, boolFloat(n.Behind))
		send(c.roleSince, gauge, unixSeconds(n.RoleSince))
		send(c.lagging, gauge, boolFloat(n.State == rwpool.Lagging))
		send(c.dials, counter, float64(n.Dials))
		for cause, v := range map[string]int64{"session": n.ClosedSession, "broken": n.ClosedBroken, "expired": n.ClosedExpired} {
			ch <- prometheus.MustNewConstMetric(c.closed, counter, float64(v), n.Name, n.Role, cause)
		}
		send(c.resets, counter, float64(n.Resets))
		send(c.failoverWaits, counter, float64(n.FailoverWaits))
		send(c.failoverWaitSecs, counter, n.FailoverWaitDuration.Seconds())
		for _, l := range n.Latency {
			ch <- newLatencyMetric(c.statementDuration, c.latencyBounds, l, n.Name, n.Role, l.Kind, l.Outcome)
		}
	}
	for _, d := range s.Discovery {
		send := func(desc *prometheus.Desc, t prometheus.ValueType, v float64) {
			ch <- prometheus.MustNewConstMetric(desc, t, v, d.Name)
		}
		send(c.discMembers, gauge, float64(d.Members))
		send(c.discRounds, counter, float64(d.Rounds))
		send(c.discFailures, counter, float64(d.Failures))
		send(c.discFailing, gauge, boolFloat(d.LastError != ""))
	}
}

func boolFloat(b bool) float64 {
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
