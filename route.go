package rwpool

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/routing"
)

// This file is rwpool's routing policy: which node a statement goes to,
// and the reason Route reports for it. The classifier (package routing)
// decides what a statement is; the policy adds the connection's state.
//
//  1. On a lease that is pinned (an earlier write, session statement or
//     transaction), every statement runs on the pin.
//  2. A statement the classifier sends to the primary, or one that touches
//     session state, pins the lease to a primary connection.
//  3. A statement that reads the diagnostics of the previous one (SHOW
//     WARNINGS; routing.Previous) runs on the real connection that ran
//     it: the pin, or the connection the lease parked (lease.park); with
//     neither, it is a read like any other.
//  4. Everything else is a read: the primary with WithPrimary or with no
//     replica configured; else a replica by weight among the available
//     ones; with none available, the primary unless fallback=error. A
//     session that has written reads only from replicas that have applied
//     its writes, or from the primary (session.go).
//  5. A read that fails at the connection level before any row reached the
//     caller is replayed on another node, each node at most once.

// Reasons a statement went where it did, besides the classifier's rule
// (routing.Rule's String).
const (
	reasonWithPrimary     = "WithPrimary"
	reasonNoReplica       = "no replica configured"
	reasonFallback        = "fallback: no replica available"
	reasonHedged          = "hedged: answered before the read it hedged"
	reasonTx              = "transaction"
	reasonPinned          = "lease pinned by an earlier write or session statement"
	reasonPrevious        = "diagnostics: on the connection of the previous statement"
	reasonSessionWindow   = "read-your-writes: within read_your_writes of the session's write"
	reasonSessionUnknown  = "read-your-writes: the session's write position is unknown"
	reasonSessionBehind   = "read-your-writes: no replica has applied the session's writes"
	reasonSessionPromoted = "read-your-writes: a promotion changed the primary since the session's writes"
	reasonSessionReplica  = "causal: the replica of the session's last read"
	reasonCausalReplica   = "causal: a replica that has applied the read's position"
	reasonStaleUnknown    = "max staleness: the primary's position is unknown"
	reasonStaleBehind     = "max staleness: no replica is fresh enough"
)

// pins reports whether a statement classified d runs on the lease's pin,
// pinning one first when the lease has none.
func (l *lease) pins(d routing.Decision) bool { return l.pc != nil || d.Pins() }

// pinReason says why a statement ran on the pin. fresh says it made the
// pin itself.
func (l *lease) pinReason(d routing.Decision, fresh bool) string {
	switch {
	case l.tx != nil:
		return reasonTx
	case !fresh:
		return reasonPinned
	}
	return d.Rule.String()
}

// isWrite reports whether a statement routed by d may write, so that the
// primary must be writable and a session must remember it. Session
// statements and locking reads pin the primary without writing.
func isWrite(d routing.Decision) bool {
	return d.Target == routing.Primary && d.Rule != routing.RuleSession && d.Rule != routing.RuleLockingRead
}

// routeRead chooses the node for a read outside any pin, skipping tried,
// and says why; an empty reason means the classifier's rule. behind says
// that some replicas were passed over for lacking a session's writes: the
// primary then serves the read whatever fallback says, since it has them.
func (c *Connector) routeRead(primary bool, tried []*node, behind bool) (*node, string, error) {
	n, why, err := c.pickRead(primary, tried, true, behind)
	if why == reasonFallback {
		n.fallbacks.Add(1)
	}
	return n, why, err
}

// pickRead is routeRead without counting a fallback, for a hedge that may
// not start (hedge_budget). failed says that the read failed on the nodes
// it tried (a hedge's still runs there: skipBehind).
func (c *Connector) pickRead(primary bool, tried []*node, failed, behind bool) (*node, string, error) {
	t := c.topo()
	if primary || len(t.replicas) == 0 {
		if slices.Contains(tried, c.primaryNode()) {
			return nil, "", errNoReplica
		}
		if primary {
			return c.primaryNode(), reasonWithPrimary, nil
		}
		return c.primaryNode(), reasonNoReplica, nil
	}
	var skip func(int) bool
	if len(tried) > 0 {
		skip = func(i int) bool { return slices.Contains(tried, t.readers[i]) }
	}
	skip = c.skipBehind(t, tried, failed, skip)
	if i := t.picker.Pick(skip); i >= 0 {
		return t.readers[i], "", nil
	}
	if behind && !slices.Contains(tried, c.primaryNode()) {
		return c.primaryNode(), reasonSessionBehind, nil
	}
	if c.cfg.Fallback == dsn.FallbackPrimary && !slices.Contains(tried, c.primaryNode()) {
		return c.primaryNode(), reasonFallback, nil
	}
	return nil, "", errNoReplica
}

// routeCausal is routeRead for a read with a plan (session.go): the
// replica of the session's last read goes first while it is available;
// when no replica has the plan's position (behind), causal_fallback says
// whether the primary serves the read or it fails with ErrTooStale.
func (c *Connector) routeCausal(primary bool, tried []*node, behind bool, plan *readPlan) (*node, string, error) {
	if !primary && plan.prefer != nil && !slices.Contains(tried, plan.prefer) && (readNode{plan.prefer}).Available() && !plan.prefer.isBehind() && !plan.prefer.gone.Load() {
		return plan.prefer, reasonSessionReplica, nil
	}
	n, why, err := c.routeRead(primary, tried, behind)
	switch {
	case err != nil || !plan.causal:
	case why == reasonSessionBehind && c.cfg.CausalFallback == dsn.FallbackError:
		c.primaryNode().tooStale.Add(1)
		return nil, "", fmt.Errorf("rwpool: %d replicas asked, none had applied the read's position within causal_wait=%s: %w",
			len(tried), c.cfg.CausalWait, ErrTooStale)
	case why == reasonSessionBehind && plan.s == nil:
		why = reasonStaleBehind
	case why == "" && n != c.primaryNode():
		why = reasonCausalReplica
	}
	return n, why, err
}

// rebase checks, before a read whose position no replica has falls back,
// that the primary has it. When even the primary's current position does
// not cover it, the position names writes no node will ever have (a
// promotion lost them): the session's position is lowered to the
// primary's, and rebase reports true, for the replicas to be asked again.
func (c *Connector) rebase(ctx context.Context, plan *readPlan) bool {
	plan.rebased = true
	// Holds, not Covers: a MariaDB target another primary wrote is
	// replaced by this one's position, which its replicas can hold.
	if c.primaryNode().repl.position().Holds(plan.target) {
		return false
	}
	cur, err := c.primaryPosition(ctx)
	if err != nil || cur.IsZero() || cur.Holds(plan.target) {
		return false
	}
	if plan.s != nil {
		plan.s.rebase(cur)
	}
	plan.target = cur
	return true
}

// routeTx chooses the node a transaction begins on: the primary, or for a
// read-only transaction with readonly_tx=replica a replica by weight (the
// primary with none configured; with none available, fallback decides). A
// session that has written, resumed a token or read (monotonic reads), or a
// staleness bound, runs its transactions on the primary: a replica would
// have to prove it has the position first. A read-write transaction
// waits for a writable primary with failover_wait, until *until (see
// awaitPrimary).
func (c *Connector) routeTx(ctx context.Context, o ctxOpts, opts driver.TxOptions, until *time.Time) (*node, error) {
	if opts.ReadOnly && c.cfg.ReadOnlyTx == dsn.ReadOnlyTxReplica && !o.primary && !o.session.binds() && o.staleness == 0 {
		n, _, err := c.routeRead(false, nil, false)
		return n, err
	}
	if !opts.ReadOnly {
		if err := c.writable(ctx, until); err != nil {
			return nil, err
		}
	}
	return c.primaryNode(), nil
}
