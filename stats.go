package rwpool

import (
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rwpool/rwpool/dsn"
)

// NodeStats describes one node, as part of a Snapshot.
//
// The breaker's fields (State, Since, Trips, LastError, Available) are read
// together, as of one moment, and so are the pool's (MaxOpen, Open, Idle,
// InUse, Waiting, WaitCount, WaitDuration): a node is never shown tripped
// with the previous trip's count, and Open is never less than Idle plus
// InUse. The other counters (Served, Errors, Replays, Fallbacks, Hedges…, Dials,
// ClosedSession, ClosedBroken, ClosedExpired, Resets) and the replication
// fields are read one by one while statements run, so two of them may
// differ by the statements in flight. Counters are int64, gauges
// int, as in database/sql's DBStats.
type NodeStats struct {
	Name         string        // node name from the DSN
	Role         string        // "primary" or "replica": the DSN's, or, with follow_promotion, the one the node was given since
	RoleSince    time.Time     // when the node was given Role by a promotion; zero while it has the DSN's
	Weight       int           // replica weight (1 for the primary)
	Available    bool          // whether routing may choose it: State == Available
	State        State         // Available, Unavailable or Lagging (a replica behind max_lag)
	Since        time.Time     // when the node entered State (while Unavailable: since when it is down)
	Trips        int64         // times it became unavailable
	LastError    string        // cause of the last trip (node DSNs redacted); "" before the first
	ProbeLatency time.Duration // latency of the last successful health probe
	MaxOpen      int           // pool_size
	Open         int           // real connections open (idle + in use + dialing + closing)
	Idle         int           // real connections idle in the pool
	InUse        int           // real connections borrowed
	Waiting      int           // borrowers waiting for a connection now
	Served       int64         // connections borrowed from it for statements and transactions (a pinned lease borrows once for all of its statements)
	Errors       int64         // statements that failed on it, borrows refused while unavailable included
	WaitCount    int64         // borrows that had to wait
	WaitDuration time.Duration // total time borrows waited
	Replays      int64         // reads that failed here and were replayed on another node
	Fallbacks    int64         // reads served here (the primary) because no replica was available

	// Causal reads: reads that had to see a position (a causal session's
	// writes, a resumed token, what the session read before, a
	// WithMaxStaleness bound).
	CausalReads        int64         // causal reads served here
	CausalWaits        int64         // checks of this replica allowed to wait for a read's position (causal_wait)
	CausalWaitDuration time.Duration // total time those checks took
	CausalFallbacks    int64         // causal reads served here (the primary) because no replica had their position, or it could not be known
	TooStale           int64         // causal reads that failed with ErrTooStale (causal_fallback=error) instead of coming here (the primary)

	// Hedged reads (hedge_after), counted on the node the read was slow
	// on: a node whose reads are often hedged, and whose hedges often win,
	// is slower than the others.
	Hedges        int64 // reads here that were also started on another node
	HedgeWins     int64 // of those, the ones the other node answered first
	HedgesRefused int64 // reads here whose hedge hedge_budget refused (such a read asks again every 100 ms, and may be counted in Hedges later)

	// Real connections opened and closed, by cause. Each costs a new
	// server session (on PostgreSQL a server process), so they explain
	// what rwpool costs the servers beyond its statements. The health
	// checker's probe connection is not counted.
	Dials         int64 // connections the pool opened (successful dials)
	ClosedSession int64 // closed at the end of a lease that changed their session state (without reset_query, or when it failed), used them through Raw, or left a transaction open
	ClosedBroken  int64 // closed after a connection-level failure, or a call interrupted or abandoned at its deadline
	ClosedExpired int64 // closed by idle_timeout or max_lifetime
	Resets        int64 // reset with reset_query at the end of a lease that changed their session state, instead of closed

	// Replication, as the health checker last read it (PostgreSQL, MariaDB
	// and MySQL; nothing for other drivers or with breaker=off).
	Lag         time.Duration // replicas: how far behind the primary; 0 unless LagKnown
	LagKnown    bool          // a lag has been measured
	Position    string        // LSN or GTID the node has applied (replica) or written (primary)
	Reports     string        // the role the server reports: "read-only", "writable", or "" before the first status
	StatusError string        // why the last status query failed, if it did
	// Rejoining: with follow_promotion, the node is not yet seen
	// following the primary of the last promotion rwpool followed (it has
	// not applied anything that primary wrote after the promotion), so it
	// serves no read, whatever its State. A balancing endpoint (several
	// servers behind one DSN entry) is Rejoining too while it is known to
	// lead to the server of another node that is.
	Rejoining bool
	// Behind: with follow_promotion, while no primary is writable (the
	// primary is unavailable or reports read-only: a failover under way),
	// the node has applied less than another available replica, so it
	// lacks writes the old primary acknowledged, and serves no read until
	// it catches up or a primary is writable again.
	Behind bool
	// Source names the discover item that found the node ("srv",
	// "patroni", its name=); "" for a node of the DSN.
	Source string
	// Draining: the node left its source. It takes no new statement;
	// those running finish, then it leaves the Snapshot.
	Draining bool

	// BalanceLatency is what balance=adaptive takes the node's read
	// latency to be: time to first response (from the driver call to its
	// return, pool waits excluded), averaged over recent reads with the
	// latest weighing most. A node balancing avoids is measured by about
	// one read every 500 ms, so the figure trails its recovery by up to
	// that. 0 with balance=weighted and before the node's first read.
	BalanceLatency time.Duration

	// Writes that waited for a writable primary (failover_wait) before
	// they were sent here, and the time they waited: apart from their
	// time on the node (Latency) and from pool waits (WaitDuration).
	FailoverWaits        int64
	FailoverWaitDuration time.Duration

	// Latency is the distribution of the times statements took here, by
	// kind and outcome (StatementLatency; only those that happened), from
	// when each had its connection to its result or its rows' close: pool
	// waits are not in it (WaitDuration is). Like the counters, a
	// histogram's counts are read one by one while statements run.
	Latency []StatementLatency
}

// RoleMismatch reports whether the node reports a role its configuration
// does not expect: a writable replica (promoted?) or a read-only primary
// (demoted?). While the primary does, writes fail with ErrReadOnly.
func (n NodeStats) RoleMismatch() bool {
	return n.Reports == reportsWritable && n.Role == dsn.RoleReplica.String() ||
		n.Reports == reportsReadOnly && n.Role == dsn.RolePrimary.String()
}

// What NodeStats.Reports says.
const (
	reportsReadOnly = "read-only"
	reportsWritable = "writable"
)

// Snapshot is the state of every node of a Connector, primary first, the
// DSN's replicas next, then those discovery found, then those draining;
// and of every source of replicas (the DSN's discover items).
type Snapshot struct {
	Nodes     []NodeStats
	Discovery []DiscoveryStats
}

// DiscoveryStats is the state of one source of replicas (a discover item).
type DiscoveryStats struct {
	Name      string    // the item's name= or its scheme
	Source    string    // the item's source, passwords redacted
	Members   int       // replicas it found and that answered their first probe, in the reads now
	Rounds    int64     // times it was asked
	Failures  int64     // rounds that kept the members of the last good answer (an error, no usable member)
	LastError string    // why the last round failed; "" when it succeeded
	LastOK    time.Time // the last good answer; zero before the first
	// Pending lists the members it answered that could not join yet
	// (their first probe failed), with why; tried again every round.
	Pending map[string]string
}

// String prints one aligned line per node. It names nodes, never their DSNs.
func (s Snapshot) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tROLE\tWEIGHT\tSTATE\tOPEN\tIDLE\tIN USE\tWAITING\tSERVED\tERRORS\tREPLAYS\tFALLBACKS\tTRIPS\tWAITS\tWAITED\tPROBE\tLAG\tREPORTS")
	for _, n := range s.Nodes {
		lag := "-"
		if n.LagKnown {
			lag = n.Lag.Round(time.Millisecond).String()
		}
		reports := n.Reports
		if n.RoleMismatch() {
			reports += " (unexpected)"
		}
		if n.Rejoining {
			reports += " (not yet following)"
		}
		if n.Behind {
			reports += " (behind another replica, no writable primary)"
		}
		if n.Draining {
			reports += " (left its source, draining)"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%d/%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n",
			n.Name, n.Role, n.Weight, n.State, n.Open, n.MaxOpen, n.Idle, n.InUse, n.Waiting,
			n.Served, n.Errors, n.Replays, n.Fallbacks, n.Trips, n.WaitCount,
			n.WaitDuration.Round(time.Microsecond), n.ProbeLatency.Round(time.Microsecond), lag, reports)
	}
	w.Flush()
	for _, d := range s.Discovery {
		fmt.Fprintf(&b, "discover %s (%s): %d replicas, %d rounds, %d failed", d.Name, d.Source, d.Members, d.Rounds, d.Failures)
		if d.LastError != "" {
			fmt.Fprintf(&b, "; failing, keeping the last good set: %s", d.LastError)
		}
		if len(d.Pending) > 0 {
			fmt.Fprintf(&b, "; %d not answering yet", len(d.Pending))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Stats returns the current state of every node. It needs no database
// connection. See NodeStats for which fields are read together.
func (c *Connector) Stats() Snapshot {
	c.topoMu.Lock()
	nodes := append(slices.Clone(c.topo().nodes), c.draining...)
	c.topoMu.Unlock()
	s := Snapshot{Nodes: make([]NodeStats, len(nodes))}
	for _, d := range c.discoverers {
		ds := DiscoveryStats{Name: d.name, Source: d.d.Redacted(), Members: int(d.count.Load()),
			Rounds: d.rounds.Load(), Failures: d.failures.Load(), LastOK: unixNano(d.lastOK.Load())}
		if e := d.lastErr.Load(); e != nil {
			ds.LastError = *e
		}
		if p := d.joinFail.Load(); p != nil && len(*p) > 0 {
			ds.Pending = maps.Clone(*p)
		}
		s.Discovery = append(s.Discovery, ds)
	}
	for i, n := range nodes {
		b := n.health.Snapshot()
		ps := n.pool.Stat()
		h := n.health
		lag, lagKnown := h.Lag()
		if !lagKnown {
			lag = 0
		}
		var reports string
		if ro, known := h.ReadOnly(); known {
			reports = reportsWritable
			if ro {
				reports = reportsReadOnly
			}
		}
		var statusErr string
		if e := n.repl.statusErr.Load(); e != nil {
			statusErr = *e
		}
		s.Nodes[i] = NodeStats{
			Name:                 n.cfg.Name,
			Role:                 n.role().String(),
			RoleSince:            unixNano(n.roleSince.Load()),
			Weight:               n.cfg.Weight,
			Available:            b.Available(),
			State:                b.State,
			Since:                b.Since,
			Trips:                b.Trips,
			LastError:            errString(b.LastError),
			ProbeLatency:         h.ProbeLatency(),
			MaxOpen:              ps.MaxOpen,
			Open:                 ps.Open,
			Idle:                 ps.Idle,
			InUse:                ps.InUse,
			Waiting:              ps.Waiting,
			Served:               n.served.Load(),
			Errors:               n.errors.Load(),
			WaitCount:            ps.WaitCount,
			WaitDuration:         ps.WaitDuration,
			Replays:              n.replays.Load(),
			Fallbacks:            n.fallbacks.Load(),
			CausalReads:          n.causalReads.Load(),
			CausalWaits:          n.causalWaits.Load(),
			CausalWaitDuration:   time.Duration(n.causalWaitNanos.Load()),
			CausalFallbacks:      n.causalFallbacks.Load(),
			TooStale:             n.tooStale.Load(),
			Hedges:               n.hedges.Load(),
			HedgeWins:            n.hedgeWins.Load(),
			HedgesRefused:        n.hedgesRefused.Load(),
			Dials:                n.dials.Load(),
			ClosedSession:        n.closedSession.Load(),
			ClosedBroken:         n.closedBroken.Load(),
			ClosedExpired:        ps.ClosedIdle + ps.ClosedLifetime,
			Resets:               n.resets.Load(),
			Latency:              n.latencyStats(),
			FailoverWaits:        n.failoverWaits.Load(),
			FailoverWaitDuration: time.Duration(n.failoverWaitNanos.Load()),
			Lag:                  lag,
			LagKnown:             lagKnown,
			Position:             n.repl.position().String(),
			Reports:              reports,
			StatusError:          statusErr,
			Rejoining:            n.rejoin.Load() != nil || n.viaBarred.Load(),
			Behind:               n.isBehind(),
			Draining:             n.gone.Load(),
		}
		if n.src != nil {
			s.Nodes[i].Source = n.src.name
		}
		s.Nodes[i].BalanceLatency = n.meter.Estimate()
	}
	return s
}

// Stats returns the state of every node of a *sql.DB opened with rwpool
// (by sql.Open("rwpool", …) or sql.OpenDB with a *Connector). It needs no
// database connection, so it answers even when every pool is exhausted.
func Stats(db *sql.DB) (Snapshot, error) {
	if c := connectorOf(db); c != nil {
		return c.Stats(), nil
	}
	return Snapshot{}, ErrNotRWPool
}

// connectorOf finds the Connector behind db. sql.Open always goes through
// Driver.OpenConnector and sql.OpenDB through a *Connector, and either way
// db.Driver() is the Driver a Connector returns, which points back to it;
// no database connection is needed.
func connectorOf(db *sql.DB) *Connector {
	if d, ok := db.Driver().(*Driver); ok {
		return d.c
	}
	return nil
}

// unixNano returns the time of ns nanoseconds since the epoch, zero for 0.
func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
