package rwpool

import (
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/balance"
	"github.com/rwpool/rwpool/internal/pick"
)

// This file is balance=adaptive's part of the driver: the reads it measures
// and the picker it builds. The measuring and the choice are in
// internal/balance and internal/pick, whose comments give the design.
//
// A read is measured from just before the driver's statement call to its
// return: time to first response, on the node's real connection, pool
// waits excluded (a saturated pool is max_waiters' and pool_size's
// business). Only reads outside pins are measured and balanced;
// transactions and pinned leases keep their node. With balance=weighted
// none of this runs: a read costs one predictable branch.

// newPicker returns the picker over readers (candidates cs, in the same
// order) that cfg's balance asks for.
func (c *Connector) newPicker(cs []pick.Candidate, readers []*node) *pick.Picker {
	if c.cfg.Balance != dsn.BalanceAdaptive {
		return pick.New(cs)
	}
	ms := make([]*balance.Meter, len(readers))
	for i, n := range readers {
		ms[i] = &n.meter
	}
	return pick.NewAdaptive(cs, pick.Adaptive{Meters: ms, Now: c.clock})
}

// readStarts counts a read about to run on n and returns its start (0
// unless balancing is adaptive). It and readEnds inline to one branch
// with balance=weighted.
func (c *Connector) readStarts(n *node) int64 {
	if !c.adaptive {
		return 0
	}
	return c.measureStart(n)
}

func (c *Connector) measureStart(n *node) int64 {
	now := c.clock()
	n.meter.Start(now)
	return now
}

// measured runs call, a statement on n's pinned connection, measuring it
// like a read when n is a replica and balancing is adaptive: the
// statements of read-only transactions are what keeps measuring the
// replicas they are placed on (routeTx picks with the adaptive picker).
func (c *Connector) measured(n *node, call func() error) error {
	if !c.adaptive || n.isPrimary() {
		return call()
	}
	t := c.measureStart(n)
	err := call()
	c.measureEnd(n, t, err)
	return err
}

// readEnds ends the read readStarts began at start, whose driver call
// returned err.
func (c *Connector) readEnds(n *node, start int64, err error) {
	if c.adaptive {
		c.measureEnd(n, start, err)
	}
}

// measureEnd is readEnds with balance=adaptive. A read whose connection
// broke measured nothing about the node's speed (the breaker judges it);
// one that ran into its deadline took at least that long, which is worth
// knowing of a slow node.
func (c *Connector) measureEnd(n *node, start int64, err error) {
	now := c.clock()
	// An error answer (fast or not) says nothing of how the node serves
	// reads: only answers, and deadlines (lower bounds), are measured.
	o := outcomeOf(err)
	n.meter.Done(now, time.Duration(now-start), err == nil || o == interrupted || o == abandoned)
}
