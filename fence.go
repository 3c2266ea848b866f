package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rwpool/rwpool/health"
)

// This file fences a demoted primary. After a switchover behind an
// endpoint (a DNS name, a virtual IP, a proxy that the failover tooling
// moves to the new primary), connections opened before the move still
// reach the old primary, now read-only: every pooled connection and the
// health checker's long-lived probe connection. Only a new dial goes
// through the moved endpoint. So when the primary answers a write with
// "read-only", or its status says so, rwpool asks a freshly dialled
// connection:
//
//   - if it reaches a writable server, the endpoint has moved: every
//     connection of the old generation is retired (the idle ones closed at
//     once, the borrowed ones when they come back, the probe connection
//     too), an EndpointMoved event says so, and writes go on, on new
//     connections;
//   - if it is read-only too, the primary really is read-only: writes fail
//     fast with ErrReadOnly, and the health checker asks a freshly
//     dialled connection again every check_interval until that changes.

// fenceCall is one fresh check of a node, shared by every statement that
// asks while it runs.
type fenceCall struct {
	done  chan struct{}
	moved bool
	err   error
}

// fencer runs at most one fresh check of a node at a time.
type fencer struct {
	mu  sync.Mutex
	cur *fenceCall
}

// fence checks node n's endpoint on a freshly dialled connection, after
// one of its connections answered a write with a read-only error. It
// reports whether the endpoint had moved (and the old connections are now
// retired). Concurrent callers share one check; each waits for it at most
// until its own ctx ends.
func (n *node) fence(ctx context.Context) (bool, error) {
	fc := n.startFence()
	select {
	case <-fc.done:
		return fc.moved, fc.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// startFence starts a fresh check of n, or joins the one running.
func (n *node) startFence() *fenceCall {
	f := &n.fencer
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur != nil {
		return f.cur
	}
	fc := &fenceCall{done: make(chan struct{})}
	f.cur = fc
	n.c.bg.Add(1)
	go func() {
		defer n.c.bg.Done()
		fc.moved, fc.err = n.checkFresh()
		f.mu.Lock()
		f.cur = nil
		f.mu.Unlock()
		close(fc.done)
	}()
	return fc
}

// checkFresh dials n anew and reads its status there (see probe). If the
// server it reaches is writable, the connections from before were on
// another one: they are retired.
func (n *node) checkFresh() (bool, error) {
	flagged, _ := n.health.ReadOnly()
	var conn driver.Conn
	if _, err := n.probe(&conn, true); err != nil {
		return false, err
	}
	if conn != nil {
		conn.Close()
	}
	if ro, known := n.health.ReadOnly(); !known || ro {
		return false, nil
	}
	if flagged {
		return true, nil // observe saw the flip and retired them
	}
	n.retire(errors.New("a connection answered a write as read-only; a freshly dialled one reaches a writable server"))
	return true, nil
}

// retire starts a new generation of n's connections: the idle ones are
// closed at once, those in use when they come back, and the health
// checker dials anew at its next probe.
func (n *node) retire(cause error) {
	n.pool.DiscardIdle()
	n.refreshProbe.Store(true)
	n.c.notify(Event{Kind: health.EndpointMoved, Node: n.cfg.Name, Role: n.cfg.Role.String(),
		From: n.health.State(), To: n.health.State(),
		Cause: fmt.Errorf("rwpool: node %s: endpoint moved: %w", n.cfg.Name, cause), At: time.Now()})
}
