package pool

import (
	"database/sql/driver"
	"time"
)

// Conn states, guarded by Pool.mu.
const (
	stateInUse  uint8 = iota // borrowed, being dialled for a borrower, or being handed off
	stateIdle                // on the idle stack
	stateClosed              // out of the pool; the real connection is closed or about to be
)

// Conn is one real connection borrowed from a Pool. It is not safe for
// concurrent use (neither is a driver.Conn).
//
// A Conn is allocated once per real connection and reused for every
// borrow, so after Release or Destroy the caller must drop it: a second
// Release or Destroy is a harmless no-op only until the pool lends the
// same connection out again.
type Conn struct {
	pool      *Pool
	raw       driver.Conn
	validator driver.Validator // raw as a Validator, or nil
	created   int64            // Pool.now at creation
	gen       uint64           // Pool.gen when the dial started
	waited    time.Duration    // how long the Acquire that lent it out waited (Waited)

	// Guarded by pool.mu.
	lastUsed int64 // Pool.clock when last released
	state    uint8
}

func (p *Pool) newConn(raw driver.Conn, gen uint64) *Conn {
	c := &Conn{pool: p, raw: raw, created: p.now(), gen: gen, state: stateInUse}
	c.lastUsed = c.created
	c.validator, _ = raw.(driver.Validator)
	return c
}

// Waited returns how long the Acquire that lent c out waited for it:
// queued until another borrower released one, or dialling it; 0 when an
// idle connection was at hand. It tells a statement slow because the pool
// was full, or the server slow to accept, from one slow on the server.
func (c *Conn) Waited() time.Duration { return c.waited }

// Raw returns the real driver connection, for the borrower's use until
// Release or Destroy. Do not close it: Destroy does.
func (c *Conn) Raw() driver.Conn { return c.raw }

// Release returns the connection to the pool: to the oldest waiting
// Acquire if there is one, else to the idle stack. It closes the connection
// instead if the pool is closed, the connection is stale (DiscardIdle),
// older than MaxLifetime, or its driver.Validator reports it invalid.
// Calling Release or Destroy again is a no-op.
func (c *Conn) Release() {
	p := c.pool
	p.mu.Lock()
	if c.state != stateInUse {
		p.mu.Unlock()
		return
	}
	if p.clocked {
		if p.clockOps++; p.clockOps%clockSample == 0 {
			p.observeLocked(p.now())
		}
	}
	now := p.clock
	retire := p.closed || c.gen != p.gen || (c.validator != nil && !c.validator.IsValid())
	if !retire && p.lifetime > 0 && now-c.created >= p.lifetime {
		retire = true
		p.stats.closedLifetime++
	}
	if retire {
		p.retireLocked(c)
		p.mu.Unlock()
		p.closeConn(c)
		return
	}
	c.lastUsed = now
	p.putLocked(c)
	p.mu.Unlock()
}

// Destroy closes the real connection and frees its slot; use it for a
// connection that is broken (driver.ErrBadConn). If Acquire calls are
// waiting, the oldest of them dials a replacement. Calling Release or
// Destroy again is a no-op.
func (c *Conn) Destroy() {
	p := c.pool
	p.mu.Lock()
	if c.state != stateInUse {
		p.mu.Unlock()
		return
	}
	p.retireLocked(c)
	p.mu.Unlock()
	p.closeConn(c)
}

// retireLocked takes c out of service. Its slot stays taken (Stat.Closing)
// until the caller, after unlocking, closes it with closeConn.
func (p *Pool) retireLocked(c *Conn) {
	c.state = stateClosed
	p.closing++
}

// closeConn closes retired c's real connection, then frees its slot, so
// MaxOpen also bounds connections still being closed. Close errors are of
// no use to anyone at this point and are dropped.
func (p *Pool) closeConn(c *Conn) {
	_ = c.raw.Close()
	p.freeSlots(1)
}

// closeConns is closeConn for many retired connections.
func (p *Pool) closeConns(cs []*Conn) {
	for _, c := range cs {
		_ = c.raw.Close()
	}
	p.freeSlots(len(cs))
}

func (p *Pool) freeSlots(n int) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	p.closing -= n
	p.numOpen -= n
	p.grantLocked()
	p.mu.Unlock()
}
