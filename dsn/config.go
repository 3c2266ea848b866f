package dsn

import (
	"strconv"
	"time"
)

// Role tells whether a node is the primary or a replica.
type Role uint8

// Node roles.
const (
	RolePrimary Role = iota // the single read-write node
	RoleReplica             // a read-only node
)

// String returns "primary" or "replica".
func (r Role) String() string {
	switch r {
	case RolePrimary:
		return "primary"
	case RoleReplica:
		return "replica"
	}
	return "Role(" + strconv.Itoa(int(r)) + ")"
}

// Fallback tells what a read does when no replica is available.
type Fallback uint8

// Fallback policies (DSN key fallback).
const (
	FallbackPrimary Fallback = iota // read from the primary (default)
	FallbackError                   // fail the read
)

// String returns "primary" or "error", the DSN spelling.
func (f Fallback) String() string {
	switch f {
	case FallbackPrimary:
		return "primary"
	case FallbackError:
		return "error"
	}
	return "Fallback(" + strconv.Itoa(int(f)) + ")"
}

// Balance tells how reads are spread over the available replicas.
type Balance uint8

// Balancing policies (DSN key balance).
const (
	// BalanceWeighted picks a replica at random in proportion to its
	// weight (default).
	BalanceWeighted Balance = iota
	// BalanceAdaptive scales each replica's weight by what it is measured
	// to deliver (read latency and reads in flight): a slow replica sheds
	// reads by itself and gets them back when it recovers.
	BalanceAdaptive
)

// String returns "weighted" or "adaptive", the DSN spelling.
func (b Balance) String() string {
	switch b {
	case BalanceWeighted:
		return "weighted"
	case BalanceAdaptive:
		return "adaptive"
	}
	return "Balance(" + strconv.Itoa(int(b)) + ")"
}

// ReadOnlyTx tells where read-only transactions are routed.
type ReadOnlyTx uint8

// Read-only transaction routing (DSN key readonly_tx).
const (
	ReadOnlyTxReplica ReadOnlyTx = iota // route to a replica (default)
	ReadOnlyTxPrimary                   // route to the primary
)

// String returns "replica" or "primary", the DSN spelling.
func (r ReadOnlyTx) String() string {
	switch r {
	case ReadOnlyTxReplica:
		return "replica"
	case ReadOnlyTxPrimary:
		return "primary"
	}
	return "ReadOnlyTx(" + strconv.Itoa(int(r)) + ")"
}

// Limits enforced by Parse and Validate.
const (
	// MaxPoolSize is the largest accepted pool_size.
	MaxPoolSize = 1 << 20
	// MaxReplicas is the largest accepted number of replicas. Every node
	// costs a pool, a health checker goroutine and a probe every
	// check_interval; beyond a thousand or so, a DSN is a mistake or an
	// attack, and a clear error beats opening it.
	MaxReplicas = 1024
	// MaxWeight is the largest accepted replica weight. With MaxReplicas
	// replicas the sum of all weights still fits comfortably in an int64.
	MaxWeight = 1 << 20
)

// Defaults, as documented in the package comment and set by NewConfig.
const (
	defaultPoolSize       = 100
	defaultMinIdle        = 0
	defaultAcquireTimeout = 10 * time.Second
	defaultIdleTimeout    = 20 * time.Second
	defaultMaxLifetime    = 30 * time.Minute
	defaultMaxWaiters     = 10000
	defaultCheckInterval  = 2 * time.Second
	defaultProbeQuery     = "SELECT 1"
	defaultProbeTimeout   = 1 * time.Second
	defaultHedgeBudget    = 10.0 // percent
	defaultCausalWait     = 50 * time.Millisecond
	defaultBreaker        = true
	defaultFallback       = FallbackPrimary
	defaultReadOnlyTx     = ReadOnlyTxReplica
	defaultWeight         = 1
	primaryName           = "primary"
	replicaNamePrefix     = "replica"
)

// Node is one database server: the primary or a replica.
type Node struct {
	// Name identifies the node in logs and metrics. It defaults to
	// "primary" for the primary and "replica1", "replica2", ... for the
	// replicas in order of appearance.
	Name string
	// DSN is the node DSN, handed verbatim to the underlying driver. It
	// may contain a password: print Redacted or String instead.
	DSN string
	// Weight is the relative share of reads a replica receives. Weight 0
	// marks a spare, used only when no weighted replica is available.
	// The primary always has weight 1.
	Weight int
	// Role is RolePrimary or RoleReplica.
	Role Role
}

// Redacted returns the node DSN with any password replaced by "***"
// (see Redact).
func (n Node) Redacted() string { return Redact(n.DSN) }

// String returns "name (redacted dsn)". It never contains a password.
func (n Node) String() string { return n.Name + " (" + n.Redacted() + ")" }

// GoString returns a Go-syntax representation of n with the DSN redacted,
// so that printing a Node with %#v does not leak a password.
func (n Node) GoString() string {
	return "dsn.Node{Name:" + strconv.Quote(n.Name) +
		", DSN:" + strconv.Quote(n.Redacted()) +
		", Weight:" + strconv.Itoa(n.Weight) +
		", Role:" + n.Role.goString() + "}"
}

func (r Role) goString() string {
	switch r {
	case RolePrimary:
		return "dsn.RolePrimary"
	case RoleReplica:
		return "dsn.RoleReplica"
	}
	return "dsn.Role(" + strconv.Itoa(int(r)) + ")"
}

// Config is a composite DSN as values: the driver, the nodes and the pool
// and routing settings.
//
// Make a Config with Parse or NewConfig, never as a literal: both fill in
// every default, and Validate and rwpool.NewConnector reject a Config made
// any other way. Zero values cannot stand for defaults here, because zero
// is a meaningful setting for several fields: AcquireTimeout 0 means only
// the context bounds a wait for a connection, MaxWaiters 0 means a full
// pool fails at once, IdleTimeout and MaxLifetime 0 mean never, and
// Breaker false turns the circuit breaker off. A literal that left them
// out would quietly run with those settings (no breaker, no waiting); a
// Config from NewConfig or Parse, changed field by field, cannot. Copies of
// such a Config (by assignment or Connector.Config) remain valid to use.
type Config struct {
	Driver         string        // name of the underlying database/sql driver (key driver)
	Primary        Node          // the primary (key primary)
	Replicas       []Node        // the replicas in order of appearance (key replica)
	PoolSize       int           // max open connections per node (pool_size)
	MinIdle        int           // idle connections kept per node (min_idle)
	AcquireTimeout time.Duration // max wait for a connection; 0 = only the context bounds it (acquire_timeout)
	IdleTimeout    time.Duration // idle connections above MinIdle are closed after this; 0 = never (idle_timeout)
	MaxLifetime    time.Duration // connections are recycled after this; 0 = never (max_lifetime)
	MaxWaiters     int           // max goroutines waiting for a connection per node; 0 = a full pool fails at once (max_waiters)
	CheckInterval  time.Duration // health check period (check_interval)
	ProbeQuery     string        // health check query (probe_query)
	ProbeTimeout   time.Duration // health check timeout (probe_timeout)
	Breaker        bool          // circuit breaker enabled (breaker=on|off)
	Fallback       Fallback      // what reads do when no replica is available (fallback)
	ReadOnlyTx     ReadOnlyTx    // where read-only transactions go (readonly_tx)
	Balance        Balance       // how reads are spread over the replicas (balance)
	// MaxLag excludes from reads a replica measured further behind its
	// primary than this; 0 turns lag checks off (max_lag).
	MaxLag time.Duration
	// ReadYourWrites, when set, makes reads in a session (see
	// rwpool.WithSession) go to the primary for this long after the
	// session's last write, instead of comparing replication positions
	// (read_your_writes).
	ReadYourWrites time.Duration
	// ResetQuery, when set, is run on a connection whose session state a
	// lease changed, at the lease's end, to make it fit for another lease
	// instead of closing it (reset_query). Only you can say what resets
	// your sessions: "DISCARD ALL" on PostgreSQL resets everything a
	// session can change; MySQL and MariaDB have no such statement that
	// go-sql-driver/mysql can send, so leave it empty there unless your
	// sessions only change what a query of yours resets. A reset that
	// fails closes the connection as without it.
	ResetQuery string
	// FailoverWait, when set, makes writes and read-write transactions
	// wait, while no writable primary is available (it is down, reports
	// read-only, or its endpoint is being checked), for up to this long
	// (bounded by their context and max_waiters) instead of failing at
	// once; then they run on the primary that came back. 0 fails them at
	// once (failover_wait).
	FailoverWait time.Duration
	// FollowPromotion makes rwpool follow the roles the servers report
	// instead of keeping those of the DSN: a node that reports itself
	// writable becomes the primary when the current one is unavailable
	// or reports read-only, if it is the only one (follow_promotion). It
	// needs breaker=on: roles are read by the health checker.
	FollowPromotion bool
	// HedgeAfter, when set, starts a plain read (outside transactions and
	// pinned leases) that has had no answer after this long on another
	// available node too; the first answer wins and the other read is
	// cancelled. 0 never hedges (hedge_after).
	HedgeAfter time.Duration
	// HedgeBudget caps hedges at this percentage of the reads issued over
	// the last 10 seconds or so, so that hedging can never double the
	// load a slow node already causes; a read over budget is not hedged
	// (hedge_budget, in (0, 100], default 10).
	HedgeBudget float64
	// CausalWait is how long a read that must see a position (a causal
	// session's writes or resumed token, what the session read before, a
	// WithMaxStaleness bound) and that no replica can serve yet may wait
	// for one to catch up before CausalFallback decides: MariaDB waits on
	// the server (MASTER_GTID_WAIT), PostgreSQL polls the replica's replay
	// position. 0 never waits (causal_wait, default 50ms).
	CausalWait time.Duration
	// CausalFallback says who serves such a read after CausalWait:
	// FallbackPrimary, which has everything (the default), or
	// FallbackError, which fails the read with an error wrapping
	// rwpool.ErrTooStale (causal_fallback=primary|error).
	CausalFallback Fallback
	// Discover lists the sources of replicas found at run time (key
	// discover, zero or more, at most MaxDiscover); see Discovery.
	Discover []Discovery

	// made is set by NewConfig (and so Parse): the Config started from the
	// defaults. Validate rejects a Config without it.
	made bool
}

// NewConfig returns a Config holding every default and no driver or nodes,
// for a program to fill in:
//
//	cfg := dsn.NewConfig()
//	cfg.Driver = "postgres"
//	cfg.Primary.DSN = "host=db1 user=app dbname=shop"
//	cfg.Replicas = []dsn.Node{{DSN: "host=db2 user=app dbname=shop", Weight: 1}}
//
// NewConfig and Parse are the only ways to make a Config that Validate and
// rwpool.NewConnector accept (see Config for why).
func NewConfig() *Config {
	return &Config{
		made:           true,
		PoolSize:       defaultPoolSize,
		MinIdle:        defaultMinIdle,
		AcquireTimeout: defaultAcquireTimeout,
		IdleTimeout:    defaultIdleTimeout,
		MaxLifetime:    defaultMaxLifetime,
		MaxWaiters:     defaultMaxWaiters,
		CheckInterval:  defaultCheckInterval,
		ProbeQuery:     defaultProbeQuery,
		ProbeTimeout:   defaultProbeTimeout,
		Breaker:        defaultBreaker,
		Fallback:       defaultFallback,
		ReadOnlyTx:     defaultReadOnlyTx,
		HedgeBudget:    defaultHedgeBudget,
		CausalWait:     defaultCausalWait,
	}
}

// Nodes returns the primary followed by the replicas, as a Connector uses
// them: a node without a Name gets its default ("primary", then
// "replica1", "replica2", ... by position), Role is set from the node's
// place (RolePrimary, RoleReplica) and the primary's Weight is 1. It does
// not modify c.
func (c *Config) Nodes() []Node {
	nodes := make([]Node, 0, 1+len(c.Replicas))
	p := c.Primary
	p.Role, p.Weight = RolePrimary, 1
	if p.Name == "" {
		p.Name = primaryName
	}
	nodes = append(nodes, p)
	for i, r := range c.Replicas {
		r.Role = RoleReplica
		if r.Name == "" {
			r.Name = defaultReplicaName(i)
		}
		nodes = append(nodes, r)
	}
	return nodes
}

// fillNodes sets c's Primary and Replicas to c.Nodes(); a Config without
// replicas gets a nil Replicas slice, as Parse returns it.
func (c *Config) fillNodes() {
	nodes := c.Nodes()
	c.Primary, c.Replicas = nodes[0], nil
	if len(nodes) > 1 {
		c.Replicas = nodes[1:]
	}
}

// defaultReplicaName returns the default name of the replica at index i
// (0-based): "replica1", "replica2", ...
func defaultReplicaName(i int) string {
	return replicaNamePrefix + strconv.Itoa(i+1)
}
