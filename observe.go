package rwpool

import (
	"context"
	"time"

	"github.com/rwpool/rwpool/internal/latency"
	"github.com/rwpool/rwpool/internal/replication"
	"github.com/rwpool/rwpool/routing"
)

// StatementInfo describes one statement rwpool ran on a node, for a
// statement observer (WithStatementObserver). It never holds the
// statement's text or arguments: they may carry personal data, and a
// statement's kind and route say what an observer needs to tell slow
// nodes, slow pools and slow failovers apart.
type StatementInfo struct {
	Node    string // the node that ran it, as named in the DSN
	Role    string // the node's role then: "primary" or "replica"
	Kind    string // "read", "write" or "transaction" (a statement of a transaction, its COMMIT or ROLLBACK)
	Outcome string // "ok"; "error" (the caller got it); "replayed" (it failed here, and was replayed on another node); "hedged" (a hedge on another node, or the read it hedged, answered first)
	Reason  string // why it went to Node: Route's Reason
	// System is the database system, as OpenTelemetry's db.system.name
	// names it: "postgresql", "mariadb", "mysql" (a MySQL-family server
	// whose kind is not known yet says "mysql"), or "other_sql".
	System string
	// ServerAddress and ServerPort are where the node's DSN says its
	// server is (dsn.Node.Address): OpenTelemetry's server.address and
	// server.port. Never a user, password or database name.
	ServerAddress, ServerPort string

	Start    time.Time     // when it had its connection and began
	Duration time.Duration // on the node: from then to its result, or to its rows' close
	ConnWait time.Duration // what it waited for its connection before Start (a full pool, a dial); 0 with an idle one at hand
	// FailoverWait is what a write waited for a writable primary
	// (failover_wait) before it was sent.
	FailoverWait time.Duration
	Err          error // the statement's error, for "error" and "replayed"
}

// WithStatementObserver calls f after every statement rwpool runs on a
// node, with where it ran, why, how long it took and how it ended: one
// call per attempt, so a read replayed after a failure is seen twice (the
// failed attempt with Outcome "replayed", then the one that served it),
// and a hedged read once per node it ran on. A query is seen when its rows
// are handed to the caller, while the caller's statement span is open
// (otelsql's ends there): its Duration is the time to that answer, and an
// error met reading its rows is not in it (NodeStats.Latency, which ends
// at the rows' close, has both). f gets the statement's context (the caller's: its
// values, such as the trace span of the application or of otelsql when it
// wraps rwpool, whatever became of its deadline; for a COMMIT or ROLLBACK,
// the transaction's). f runs on the goroutine that ran the statement,
// after the statement, on the hot path: it must be quick and must not
// block.
// Each WithStatementObserver adds one observer (the OpenTelemetry module
// adds its own); they are called in the order they were added. A nil f
// adds nothing.
//
// Per-node latency histograms (NodeStats.Latency) are kept whether or not
// an observer is set; an observer is for what they do not say (a
// slow-statement log, custom metrics by route).
func WithStatementObserver(f func(context.Context, StatementInfo)) Option {
	return func(c *Connector) {
		if f == nil {
			return
		}
		// Copy on write: statements read the list without a lock.
		c.observeMu.Lock()
		defer c.observeMu.Unlock()
		var list []func(context.Context, StatementInfo)
		if old := c.observers.Load(); old != nil {
			list = append(list, *old...)
		}
		list = append(list, f)
		c.observers.Store(&list)
	}
}

// Statement kinds and outcomes: the indexes of a node's histograms.
const (
	kindRead uint8 = iota
	kindWrite
	kindTx
	numKinds
)

const (
	outOK uint8 = iota
	outError
	outReplayed
	outHedged
	numOutcomes
)

var (
	kindNames    = [numKinds]string{"read", "write", "transaction"}
	outcomeNames = [numOutcomes]string{"ok", "error", "replayed", "hedged"}
)

// stmtStart is the moment a statement had its connection (monoNow), or 0
// where it is not measured; with the borrow's wait.
type stmtStart struct {
	at     int64
	waited time.Duration   // the pool's (pool.Conn.Waited)
	failed time.Duration   // failover_wait's
	ctx    context.Context // the caller's, for the observers (a trace's span)
}

// statementEnds records a statement that began at s on n and ended now:
// its node's histogram and the observers. It costs a clock read and two
// atomic additions; no lock, and no allocation without an observer.
func (c *Connector) statementEnds(n *node, kind, out uint8, s stmtStart, why string, err error) {
	if s.at == 0 {
		return
	}
	c.statementTook(n, kind, out, s, time.Duration(monoNow()-s.at), why, err)
}

// statementTook records a statement that began at s on n and took d.
func (c *Connector) statementTook(n *node, kind, out uint8, s stmtStart, d time.Duration, why string, err error) {
	if s.at == 0 {
		return
	}
	n.latency[kind][out].Observe(d)
	c.observe(n, kind, out, s, d, why, err)
}

// rowsAnswered tells the observers that a query that began at s on n
// answered with rows, handed to the caller now: they learn of it while
// the caller's statement span (otelsql's ends when the query returns) is
// still open. Its histogram waits for the rows' close (rowsEnd).
func (c *Connector) rowsAnswered(n *node, kind uint8, s stmtStart, why string) {
	if s.at == 0 || c.observers.Load() == nil {
		return
	}
	c.observe(n, kind, outOK, s, time.Duration(monoNow()-s.at), why, nil)
}

// rowsEnd records in n's histogram a query that began at startAt (monoNow)
// and whose rows closed now.
func (c *Connector) rowsEnd(n *node, kind, out uint8, startAt int64) {
	if startAt != 0 {
		n.latency[kind][out].Observe(time.Duration(monoNow() - startAt))
	}
}

// observe calls the observers, if any, for a statement that began at s on
// n and took d.
func (c *Connector) observe(n *node, kind, out uint8, s stmtStart, d time.Duration, why string, err error) {
	fs := c.observers.Load()
	if fs == nil {
		return
	}
	info := StatementInfo{
		Node: n.cfg.Name, Role: n.role().String(), Kind: kindNames[kind], Outcome: outcomeNames[out], Reason: why, System: c.system(),
		ServerAddress: n.addrHost, ServerPort: n.addrPort,
		Start: time.Now().Add(-d), Duration: d, ConnWait: s.waited, FailoverWait: s.failed, Err: err,
	}
	ctx := s.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	for _, f := range *fs {
		f(ctx, info)
	}
}

// StatementLatency is the distribution of the times one kind of statement
// with one outcome took on a node (see StatementInfo for the kinds,
// outcomes and what is timed): a histogram whose buckets' upper bounds are
// LatencyBounds.
type StatementLatency struct {
	Kind    string // "read", "write" or "transaction"
	Outcome string // "ok", "error", "replayed" or "hedged"
	Count   int64  // statements
	Sum     time.Duration
	// Buckets[i] counts the statements that took more than
	// LatencyBounds()[i-1] (for i > 0) and at most LatencyBounds()[i];
	// the last one, those that took more than the last bound.
	Buckets []int64
}

// LatencyBounds returns the upper bounds of the buckets of every
// StatementLatency: 2^(k/2) seconds for k from -27 to 10 (about 86 µs to
// 32 s, each √2 times the one before), the bucket boundaries of a
// Prometheus native histogram of schema 1. A quantile read off the buckets
// is within a factor of √2 of the true one.
func LatencyBounds() []time.Duration {
	b := make([]time.Duration, latency.Buckets-1)
	for i := range b {
		b[i] = latency.Bound(i)
	}
	return b
}

// latencyStats returns n's non-empty histograms.
func (n *node) latencyStats() []StatementLatency {
	var out []StatementLatency
	for k := range numKinds {
		for o := range numOutcomes {
			s := n.latency[k][o].Snapshot()
			if s.Count == 0 {
				continue
			}
			out = append(out, StatementLatency{Kind: kindNames[k], Outcome: outcomeNames[o], Count: s.Count, Sum: s.Sum, Buckets: s.Counts[:]})
		}
	}
	return out
}

// pinMeasure measures a statement run on a lease's pin (onPin), whose
// call may run more than once (a retry on a new connection, a write
// refused read-only and sent again): each earlier attempt is recorded as
// replayed when the next begins.
type pinMeasure struct {
	n     *node
	start stmtStart
	why   string
	kind  uint8
	err   error         // the last attempt's
	took  time.Duration // the last attempt's time on the node, to its call's return
}

// done ends the measure of the attempt begun last: its call returned err.
func (m *pinMeasure) done(err error) {
	m.err, m.took = err, time.Duration(monoNow()-m.start.at)
}

// begin starts the measure of an attempt on vc's pin, as onPin set it up.
func (m *pinMeasure) begin(vc *conn, write bool) {
	l := &vc.lease
	if m.n != nil {
		vc.c.statementTook(m.n, m.kind, outReplayed, m.start, m.took, m.why, m.err)
	}
	m.n, m.start, m.why = l.n, l.stmt, l.stmtWhy
	switch {
	case l.inTx():
		m.kind = kindTx
	case write:
		m.kind = kindWrite
	default:
		m.kind = kindRead
	}
}

// end records the last attempt, which ended with err.
func (m *pinMeasure) end(c *Connector, err error) {
	if m.n == nil {
		return
	}
	m.failoverWaited()
	out := outOK
	if err != nil {
		out = outError
	}
	c.statementTook(m.n, m.kind, out, m.start, m.took, m.why, err)
	m.n = nil
}

// failoverWaited counts the statement's failover_wait, once however many
// attempts it took.
func (m *pinMeasure) failoverWaited() {
	if f := m.start.failed; f > 0 {
		m.n.failoverWaits.Add(1)
		m.n.failoverWaitNanos.Add(int64(f))
	}
}

// system is StatementInfo.System for c's servers.
func (c *Connector) system() string {
	switch replication.Flavor(c.flav.Load()) {
	case replication.Postgres:
		return "postgresql"
	case replication.MariaDB:
		return "mariadb"
	case replication.MySQL:
		return "mysql"
	}
	if c.dialect == routing.DialectMySQL {
		return "mysql"
	}
	return "other_sql"
}

// Quantile returns an estimate of the q-quantile (0 < q <= 1) of l: the
// upper bound of the bucket where it falls, within a factor of √2 above
// the true one (the last bucket has no bound: the last bound, 32 s, is
// returned for it); 0 for an empty l.
func (l StatementLatency) Quantile(q float64) time.Duration {
	if l.Count == 0 {
		return 0
	}
	var s latency.Snapshot
	copy(s.Counts[:], l.Buckets)
	s.Count = l.Count
	return s.Quantile(q)
}
