package dsn

import (
	"strconv"
	"time"

	"github.com/rwpool/rwpool/internal/ascii"
)

// Validate checks a Config, typically one built in Go code, with the same
// rules and error messages as Parse: it was made by NewConfig or Parse,
// the driver is set, node DSNs are non-empty, the primary has no weight
// other than 1, replica weights are in [0, MaxWeight], node names are
// unique and free of control characters, there are at most MaxReplicas
// replicas, and every setting is in range (see the package
// documentation). It returns a *Error.
//
// Validate does not modify c. It checks the nodes as Nodes returns them,
// with default names filled in; Parse and rwpool.NewConnector fill them in
// on their own copies. A replica's zero Weight is meaningful (a spare), so
// a Go-built replica meant to take reads must set Weight.
func (c *Config) Validate() error {
	if c == nil {
		return newErr("", -1, "nil Config")
	}
	if !c.made {
		return newErr("", -1, notMade)
	}
	if c.Driver == "" {
		return newErr(keyDriver, -1, driverRequired)
	}
	if err := c.validateNodes(); err != nil {
		return err
	}
	if err := c.validateDiscover(); err != nil {
		return err
	}
	return c.validateSettings()
}

// notMade is the message for a Config that does not come from NewConfig.
const notMade = "Config not made by dsn.NewConfig or dsn.Parse: start from dsn.NewConfig(), " +
	"which holds the defaults (in a literal, zero values are settings, not defaults: breaker off, max_waiters 0, ...)"

// nodeErr returns an error about the node at index idx (0 primary, i+1
// replica i).
func nodeErr(key string, idx int, name, msg string) *Error {
	return &Error{Key: key, Node: name, Msg: msg, Offset: -1, node: idx}
}

func (c *Config) validateNodes() error {
	if len(c.Replicas) > MaxReplicas {
		return newErr("replica", -1, "too many replicas (maximum "+strconv.Itoa(MaxReplicas)+")")
	}
	nodes := c.Nodes()
	p := nodes[0]
	if p.DSN == "" {
		return nodeErr("primary", 0, p.Name, "empty node DSN")
	}
	if w := c.Primary.Weight; w != 0 && w != 1 {
		return nodeErr("weight", 0, p.Name, "not allowed on the primary")
	}
	for i, r := range nodes[1:] {
		if r.DSN == "" {
			return nodeErr("replica", i+1, r.Name, "empty node DSN")
		}
		if msg := weightProblem(r.Weight); msg != "" {
			return nodeErr("weight", i+1, r.Name, msg)
		}
	}
	// Names: free of control characters and unique.
	seen := make(map[string]struct{}, len(nodes))
	for i, n := range nodes {
		if ascii.HasControl(n.Name) {
			return nodeErr("name", i, "", "node name "+quoteShort(n.Name)+" contains a control character")
		}
		if _, dup := seen[n.Name]; dup {
			return nodeErr("name", i, "", "duplicate node name "+quoteShort(n.Name))
		}
		seen[n.Name] = struct{}{}
	}
	return nil
}

// weightProblem describes what is wrong with a replica weight, or returns "".
func weightProblem(w int) string {
	if w < 0 {
		return "must be >= 0, got " + strconv.Itoa(w)
	}
	if w > MaxWeight {
		return "must be <= " + strconv.Itoa(MaxWeight) + ", got " + strconv.Itoa(w)
	}
	return ""
}

func (c *Config) validateSettings() error {
	if c.PoolSize < 1 || c.PoolSize > MaxPoolSize {
		return newErr(keyPoolSize, -1, "must be between 1 and "+strconv.Itoa(MaxPoolSize)+", got "+strconv.Itoa(c.PoolSize))
	}
	if c.MinIdle < 0 || c.MinIdle > c.PoolSize {
		return newErr(keyMinIdle, -1, "must be between 0 and pool_size ("+strconv.Itoa(c.PoolSize)+"), got "+strconv.Itoa(c.MinIdle))
	}
	for _, d := range []struct {
		key      string
		v        time.Duration
		positive bool
	}{
		{keyAcquireTimeout, c.AcquireTimeout, false},
		{keyIdleTimeout, c.IdleTimeout, false},
		{keyMaxLifetime, c.MaxLifetime, false},
		{keyCheckInterval, c.CheckInterval, true},
		{keyProbeTimeout, c.ProbeTimeout, true},
		{keyMaxLag, c.MaxLag, false},
		{keyFailoverWait, c.FailoverWait, false},
		{keyHedgeAfter, c.HedgeAfter, false},
		{keyReadYourWrites, c.ReadYourWrites, false},
		{keyCausalWait, c.CausalWait, false},
	} {
		if d.v < 0 {
			return newErr(d.key, -1, "must not be negative, got "+d.v.String())
		}
		if d.positive && d.v == 0 {
			return newErr(d.key, -1, "must be positive, got 0s")
		}
	}
	if c.HedgeBudget <= 0 || c.HedgeBudget > 100 {
		return newErr(keyHedgeBudget, -1, "must be a percentage in (0, 100], got "+strconv.FormatFloat(c.HedgeBudget, 'g', -1, 64)+"%")
	}
	if c.MaxWaiters < 0 {
		return newErr(keyMaxWaiters, -1, "must be >= 0, got "+strconv.Itoa(c.MaxWaiters))
	}
	if c.FollowPromotion && !c.Breaker {
		return newErr(keyFollow, -1, "needs breaker=on: roles are read by the health checker")
	}
	if c.MaxLag > 0 && !c.Breaker {
		return newErr(keyMaxLag, -1, "needs breaker=on: lag is measured by the health checker")
	}
	if c.ProbeQuery == "" {
		return newErr(keyProbeQuery, -1, "must not be empty")
	}
	if c.Fallback != FallbackPrimary && c.Fallback != FallbackError {
		return newErr(keyFallback, -1, "invalid value "+c.Fallback.String()+" (want primary or error)")
	}
	if c.CausalFallback != FallbackPrimary && c.CausalFallback != FallbackError {
		return newErr(keyCausalFallback, -1, "invalid value "+c.CausalFallback.String()+" (want primary or error)")
	}
	if c.Balance != BalanceWeighted && c.Balance != BalanceAdaptive {
		return newErr(keyBalance, -1, "invalid value "+c.Balance.String()+" (want weighted or adaptive)")
	}
	if c.ReadOnlyTx != ReadOnlyTxReplica && c.ReadOnlyTx != ReadOnlyTxPrimary {
		return newErr(keyReadOnlyTx, -1, "invalid value "+c.ReadOnlyTx.String()+" (want replica or primary)")
	}
	return nil
}
