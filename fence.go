package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rwpool/rwpool/health"
	"github.com/rwpool/rwpool/internal/replication"
	"github.com/rwpool/rwpool/pool"
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
// pc, one of its connections, answered a write with a read-only error. It
// reports whether the endpoint had moved (and the old connections are now
// retired): the fresh connection reaches another server than pc, and
// that one is writable. A read-only error from the very server a fresh
// connection reaches (a read-only transaction, a session setting,
// MySQL's secure_file_priv) moves nothing. Concurrent callers share one
// check; each waits for it at most until its own ctx ends.
//
// It returns errAbandoned when the identity query on pc outlived its
// bound in the driver: pc is then the query's goroutine's, which destroys
// it when the driver lets go.
func (n *node) fence(ctx context.Context, pc *pool.Conn) (bool, error) {
	old, err := n.pinnedIdentity(ctx, pc)
	if err != nil || old == "" {
		return false, err
	}
	fc := n.startFence(old)
	select {
	case <-fc.done:
		return fc.moved, fc.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// startFence starts a fresh check of n against the server identity old,
// or joins the one running.
func (n *node) startFence(old string) *fenceCall {
	f := &n.fencer
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur != nil {
		return f.cur
	}
	fc := &fenceCall{done: make(chan struct{})}
	f.cur = fc
	if !n.c.bg.Go(func() {
		fc.moved, fc.err = n.checkFresh(old)
		f.mu.Lock()
		f.cur = nil
		f.mu.Unlock()
		close(fc.done)
	}) {
		f.cur = nil
		fc.err = ErrClosed
		close(fc.done)
	}
	return fc
}

// checkFresh dials n anew and reads its status there (see probe). If the
// server it reaches is not old and is writable, the connections from
// before were on another one: they are retired.
func (n *node) checkFresh(old string) (bool, error) {
	flagged, _ := n.health.ReadOnly()
	var conn driver.Conn
	if _, err := n.probe(&conn, true); err != nil {
		return false, err
	}
	if conn == nil {
		return false, errors.New("rwpool: the fresh connection's status could not be read")
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.c.cfg.ProbeTimeout)
	defer cancel()
	// Bounded even when the driver ignores ctx (lib/pq on a hung server):
	// a call past probe_timeout is abandoned, and conn closed when the
	// driver lets go.
	now, err := await(&n.c.bg, ctx, func() (string, error) {
		return n.identity(ctx, conn)
	}, func(string, error) { conn.Close() })
	if err == errAbandoned {
		return false, fmt.Errorf("identity query: timed out after %s", n.c.cfg.ProbeTimeout)
	}
	conn.Close()
	// The same server (a restart changes PostgreSQL's start time, not the
	// server: replication.IdentityServer) is no move.
	if err != nil || n.serverOf(now) == n.serverOf(old) {
		return false, err
	}
	if ro, known := n.health.ReadOnly(); !known || ro {
		return false, nil
	}
	if flagged || !n.endpoint.firstMove(n.serverOf(now)) {
		return true, nil // observe saw the flip (or this move) and retired them
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
	if n.isPrimary() {
		n.c.forgetPositions() // another primary behind the endpoint (replState.forget)
	} else {
		n.repl.forget() // another server behind the replica's endpoint
	}
	n.c.notify(Event{Kind: health.EndpointMoved, Node: n.cfg.Name, Role: n.role().String(),
		From: n.health.State(), To: n.health.State(),
		Cause: fmt.Errorf("rwpool: node %s: endpoint moved: %w", n.cfg.Name, cause), At: time.Now()})
}

// pinnedIdentity is identity on pc, one of n's pool connections, bounded
// by probe_timeout (or ctx's deadline) like a statement, even when the
// driver ignores contexts (watched): a call past it is abandoned with
// errAbandoned, and pc destroyed when the driver lets go.
func (n *node) pinnedIdentity(ctx context.Context, pc *pool.Conn) (string, error) {
	ctx, cancel := boundCtx(ctx, n.c.cfg.ProbeTimeout)
	defer cancel()
	if !n.c.watches(ctx) {
		return n.identity(ctx, pc.Raw())
	}
	return watched(n.c, ctx, pc, func() (string, error) { return n.identity(ctx, pc.Raw()) }, nil)
}

// identity returns what tells the server behind conn from others (see
// replication.IdentityQuery), "" for a driver rwpool knows no query for.
func (n *node) identity(ctx context.Context, conn driver.Conn) (string, error) {
	ctx, cancel := boundCtx(ctx, n.c.cfg.ProbeTimeout)
	defer cancel()
	q := replication.IdentityQuery(n.c.flavor(ctx, conn))
	if q == "" {
		return "", nil
	}
	row, err := firstRow(ctx, conn, q)
	if err != nil || len(row) == 0 {
		return "", err
	}
	return stringOf(row[0]), nil
}
