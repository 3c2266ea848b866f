package pool

import "time"

// Stat is a snapshot of a pool's occupancy and cumulative counters.
type Stat struct {
	MaxOpen        int           // Config.MaxOpen
	Open           int           // idle + in use + being dialled + being closed
	Idle           int           // idle connections
	InUse          int           // connections lent out (or being handed to a waiter)
	Dialing        int           // dials in flight
	Closing        int           // taken out of service, real connection being closed
	Waiting        int           // Acquire calls waiting right now
	WaitCount      int64         // Acquire calls that had to wait
	WaitDuration   time.Duration // total time Acquire calls spent waiting
	AcquireCount   int64         // successful Acquire calls
	Dials          int64         // dials attempted (by Acquire and the maintainer)
	DialErrors     int64         // dials that failed, not counting cancelled ones
	Timeouts       int64         // Acquire calls that failed after AcquireTimeout
	Canceled       int64         // Acquire calls whose context ended while waiting
	Rejected       int64         // Acquire calls refused with ErrTooManyWaiters
	ClosedIdle     int64         // connections closed by IdleTimeout
	ClosedLifetime int64         // connections closed by MaxLifetime
}

// Stat returns a consistent snapshot of the pool.
func (p *Pool) Stat() Stat {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stat{
		MaxOpen:        p.cfg.MaxOpen,
		Open:           p.numOpen,
		Idle:           len(p.idle),
		InUse:          p.inUseLocked(),
		Dialing:        p.dialing,
		Closing:        p.closing,
		Waiting:        p.waiters.len,
		WaitCount:      p.stats.waitCount,
		WaitDuration:   p.stats.waitDuration,
		AcquireCount:   p.stats.acquireCount,
		Dials:          p.stats.dials,
		DialErrors:     p.stats.dialErrors,
		Timeouts:       p.stats.timeouts,
		Canceled:       p.stats.canceled,
		Rejected:       p.stats.rejected,
		ClosedIdle:     p.stats.closedIdle,
		ClosedLifetime: p.stats.closedLifetime,
	}
}

func (p *Pool) inUseLocked() int { return p.numOpen - len(p.idle) - p.dialing - p.closing }
