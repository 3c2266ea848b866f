package pool

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// Config configures one node's pool. Name, Connector and MaxOpen are
// required. Every other field's zero value is a setting, documented with
// the field: no timeouts, no idle connections kept, no dial cap, and
// MaxWaiters 0, under which a full pool fails Acquire at once.
type Config struct {
	// Name is the node name used in errors ("rwpool: node replica1: ...").
	Name string
	// Connector dials real connections.
	Connector driver.Connector
	// MaxOpen (>= 1) caps open real connections: idle + in use + being
	// dialled + being closed.
	MaxOpen int
	// MinIdle is the number of idle connections the background maintainer
	// keeps open (0 <= MinIdle <= MaxOpen). The idle timeout never closes
	// connections below this count.
	MinIdle int

	// AcquireTimeout bounds how long Acquire waits for a connection when the
	// pool is full; it never extends ctx. 0 means wait as long as ctx allows.
	AcquireTimeout time.Duration
	// IdleTimeout closes a connection that has been idle longer than this,
	// unless it is one of the last MinIdle idle connections. 0 means never.
	IdleTimeout time.Duration
	// MaxLifetime closes a connection older than this when it is idle or
	// released. 0 means never.
	MaxLifetime time.Duration
	// MaxWaiters caps the Acquire calls waiting at once; beyond it Acquire
	// fails at once with ErrTooManyWaiters. 0 means never wait: a full pool
	// fails Acquire immediately.
	MaxWaiters int
	// MaxConcurrentDials caps dials in flight (0 = no cap). An Acquire that
	// would exceed it waits, like a waiter on a full pool, for a released
	// connection or a free dial slot (so with MaxWaiters 0 it fails with
	// ErrTooManyWaiters).
	MaxConcurrentDials int

	// noMaintainer lets tests of Acquire's own expiry checks run without
	// the maintainer racing them.
	noMaintainer bool
}

const (
	minMaintainInterval     = 100 * time.Millisecond
	defaultMaintainInterval = time.Second
	minDialBackoff          = 100 * time.Millisecond
	maxDialBackoff          = 5 * time.Second
)

// validate reports the first problem with c, worded for the node.
func (c *Config) validate() error {
	var msg string
	switch {
	case c.Name == "":
		return errors.New("rwpool: pool config: Name is required")
	case c.Connector == nil:
		msg = "Connector is nil"
	case c.MaxOpen < 1:
		msg = fmt.Sprintf("MaxOpen must be >= 1 (got %d)", c.MaxOpen)
	case c.MinIdle < 0 || c.MinIdle > c.MaxOpen:
		msg = fmt.Sprintf("MinIdle must be between 0 and MaxOpen %d (got %d)", c.MaxOpen, c.MinIdle)
	case c.AcquireTimeout < 0:
		msg = fmt.Sprintf("AcquireTimeout must be >= 0 (got %s)", c.AcquireTimeout)
	case c.IdleTimeout < 0:
		msg = fmt.Sprintf("IdleTimeout must be >= 0 (got %s)", c.IdleTimeout)
	case c.MaxLifetime < 0:
		msg = fmt.Sprintf("MaxLifetime must be >= 0 (got %s)", c.MaxLifetime)
	case c.MaxWaiters < 0:
		msg = fmt.Sprintf("MaxWaiters must be >= 0 (got %d)", c.MaxWaiters)
	case c.MaxConcurrentDials < 0:
		msg = fmt.Sprintf("MaxConcurrentDials must be >= 0 (got %d)", c.MaxConcurrentDials)
	default:
		return nil
	}
	return fmt.Errorf("rwpool: node %s: pool config: %s", c.Name, msg)
}

// maintainInterval is the maintainer's tick: half the shortest of
// IdleTimeout, MaxLifetime and one second, but at least 100ms; one second
// when neither timeout is set.
func (c *Config) maintainInterval() time.Duration {
	if c.IdleTimeout == 0 && c.MaxLifetime == 0 {
		return defaultMaintainInterval
	}
	d := defaultMaintainInterval
	if c.IdleTimeout > 0 && c.IdleTimeout < d {
		d = c.IdleTimeout
	}
	if c.MaxLifetime > 0 && c.MaxLifetime < d {
		d = c.MaxLifetime
	}
	return max(d/2, minMaintainInterval)
}
