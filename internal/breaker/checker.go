package breaker

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/rwpool/rwpool/health"
)

// Checker probes one node periodically, available or not, so that a dead or
// hung node is taken out of rotation before user traffic has to discover
// it, and an unavailable one is brought back as soon as it answers.
type Checker struct {
	Node     *Node
	Interval time.Duration
	// DownInterval, if shorter than Interval, is how often an unavailable
	// node is probed: a dead node's probe is a refused dial, and a node
	// back up is worth finding sooner than a healthy one is worth
	// checking. It should be no shorter than the probe's timeout, so that
	// probes of a hung node do not overlap.
	DownInterval time.Duration
	// Probe runs one probe. With fresh false it may reuse the checker's
	// dedicated connection; with fresh true it must dial a new one. It must
	// return within a bounded time even when the node hangs.
	Probe func(fresh bool) (time.Duration, error)
	// OnRecover, if set, runs after the node became available again.
	OnRecover func()
}

// Run probes every Interval, shortened by up to 20 % of random jitter so
// that many processes do not probe in lockstep, until stop is closed.
func (c *Checker) Run(stop <-chan struct{}) {
	t := time.NewTimer(jitter(c.next()))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		c.Check()
		t.Reset(jitter(c.next()))
	}
}

// next returns the interval before the next probe.
func (c *Checker) next() time.Duration {
	if c.DownInterval > 0 && c.DownInterval < c.Interval && c.Node.Tripped() {
		return c.DownInterval
	}
	return c.Interval
}

// Check runs one round: a probe of an available node that failed fast (a
// dead dedicated connection alone must not trip a healthy node) is
// confirmed by a second one on a fresh connection before the node is
// tripped; one that timed out is not retried, so a hung node is out of
// rotation within Interval plus one probe timeout. A successful probe of
// an unavailable node recovers it.
func (c *Checker) Check() {
	lat, err := c.Probe(false)
	if err != nil && !c.Node.Tripped() && !timedOut(err) {
		lat, err = c.Probe(true)
	}
	if err != nil {
		c.Node.Trip(err)
		return
	}
	c.Node.SetProbeLatency(lat)
	if c.Node.Recover() && c.OnRecover != nil {
		c.OnRecover()
	}
}

// jitter returns d shortened by a random 0-20 %: never later than d, so
// detection stays within Interval plus the probe timeouts.
func jitter(d time.Duration) time.Duration {
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

func timedOut(err error) bool {
	return errors.Is(err, health.ErrProbeTimeout) || errors.Is(err, context.DeadlineExceeded)
}
