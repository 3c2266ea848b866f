package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool/health"
)

// probe runs probe_query on *conn, dialling a new connection first when
// *conn is nil or fresh is set, and returns its latency. It never borrows
// from the node's pool, so an exhausted pool cannot starve it, and it
// returns within probe_timeout even when the server hangs and the driver
// ignores its context: the call is then abandoned to a goroutine that
// closes the connection whenever the driver lets go. On failure *conn is
// nil.
func (n *node) probe(conn *driver.Conn, fresh bool) (time.Duration, error) {
	if fresh && *conn != nil {
		(*conn).Close()
		*conn = nil
	}
	reuse := *conn
	*conn = nil
	start := time.Now()
	// got is written by the probe goroutine and read here only when
	// bounded returned that goroutine's own result (a happens-before edge);
	// after a timeout the goroutine owns it and closes it.
	var got driver.Conn
	err := bounded(&n.c.bg, n.c.cfg.ProbeTimeout, func(ctx context.Context) error {
		got = reuse
		if got == nil {
			c, err := n.conn.Connect(ctx)
			if err != nil {
				return err
			}
			got = c
		}
		return runProbe(ctx, got, n.c.cfg.ProbeQuery)
	}, func() {
		if got != nil {
			got.Close()
		}
	})
	if errors.Is(err, errProbeTimeout) {
		return 0, fmt.Errorf("probe: %w", err)
	}
	if err != nil {
		if got != nil {
			got.Close()
		}
		return 0, fmt.Errorf("probe: %w", err)
	}
	*conn = got
	return time.Since(start), nil
}

func runProbe(ctx context.Context, c driver.Conn, query string) error {
	rows, st, err := queryReal(ctx, c, query, nil)
	if err != nil {
		return err
	}
	dest := make([]driver.Value, len(rows.Columns()))
	for err == nil {
		err = rows.Next(dest)
	}
	if err == io.EOF {
		err = nil
	}
	err = errors.Join(err, rows.Close())
	if st != nil {
		err = errors.Join(err, st.Close())
	}
	return err
}

// errProbeTimeout is what bounded returns when fn outlived its time.
var errProbeTimeout = health.ErrProbeTimeout

// bounded runs fn in a goroutine counted by wg, with a context that ends
// after d, and waits at most d for it. When fn outlives d (a driver blocked
// on a hung server), bounded returns errProbeTimeout at once and the
// goroutine calls abandon after fn finally returns, to clean up.
func bounded(wg *sync.WaitGroup, d time.Duration, fn func(context.Context) error, abandon func()) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var state atomic.Int32 // 0 running, 1 finished, 2 abandoned
	done := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := fn(ctx)
		if !state.CompareAndSwap(0, 1) {
			abandon()
			return
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if state.CompareAndSwap(0, 2) {
			return fmt.Errorf("%w after %s", errProbeTimeout, d)
		}
		return <-done
	}
}
