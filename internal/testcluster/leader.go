package testcluster

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// LeaderWatch polls PostgreSQL servers directly, every 20 ms, for when a
// failover's steps happened: when the old leader stopped answering as a
// primary, and when another server first answered writable. The Patroni
// fault tests and the bench's Patroni scenarios time writes and reads
// against these moments, and must agree on them.
type LeaderWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	down     time.Time // first poll the old leader failed or answered in recovery
	writable time.Time // first poll another server answered writable
	leader   string
}

// WatchLeader starts watching addrs (host:port of every member, old the
// leader's) through b's driver, until Stop.
func WatchLeader(b *Backend, addrs []string, old string) (*LeaderWatch, error) {
	dbs := make([]*sql.DB, len(addrs))
	for i, a := range addrs {
		db, err := sql.Open(b.Driver, b.NodeDSN(a))
		if err != nil {
			for _, db := range dbs[:i] {
				db.Close()
			}
			return nil, err
		}
		db.SetMaxOpenConns(1)
		dbs[i] = db
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &LeaderWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer func() {
			for _, db := range dbs {
				db.Close()
			}
		}()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			for i, a := range addrs {
				qctx, qcancel := context.WithTimeout(ctx, 300*time.Millisecond)
				var inRecovery bool
				err := dbs[i].QueryRowContext(qctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery)
				qcancel()
				if ctx.Err() != nil {
					return
				}
				at := time.Now()
				w.mu.Lock()
				switch {
				case a == old && (err != nil || inRecovery) && w.down.IsZero():
					w.down = at
				case a != old && err == nil && !inRecovery && w.writable.IsZero():
					w.writable, w.leader = at, a
				}
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w, nil
}

// NewLeader waits, at most timeout or until ctx ends, for a server other
// than the old leader to answer writable, and returns it and when it
// first did.
func (w *LeaderWatch) NewLeader(ctx context.Context, timeout time.Duration) (string, time.Time, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		w.mu.Lock()
		addr, at := w.leader, w.writable
		w.mu.Unlock()
		if addr != "" {
			return addr, at, nil
		}
		select {
		case <-ctx.Done():
			return "", time.Time{}, ctx.Err()
		case <-deadline.C:
			return "", time.Time{}, fmt.Errorf("no other server became writable within %s", timeout)
		case <-tick.C:
		}
	}
}

// OldDown returns when the old leader was first seen down or in recovery
// (zero if it was not).
func (w *LeaderWatch) OldDown() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.down
}

// Stop stops the polls and closes their connections.
func (w *LeaderWatch) Stop() {
	w.cancel()
	<-w.done
}
