package rwpool

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"testing"
	"time"
)

// openSwept opens a Connector over the honouring driver whose sweeper
// never ticks by itself (the test sweeps), with both replicas hung.
func openSwept(t *testing.T, extra string) (*sql.DB, *Connector, string) {
	t.Helper()
	db, c, name := openHonourC(t, ";check_interval=1h"+extra)
	c.sweep.every = time.Hour // before the first read
	honour.setHang(name+"-r1", true)
	honour.setHang(name+"-r2", true)
	return db, c, name
}

// inFlight waits for the one read in flight on c's replicas and returns
// its readCtx.
func inFlight(t *testing.T, c *Connector) *readCtx {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.sweep.mu.Lock()
		var r *readCtx
		for vc := range c.sweep.conns {
			if cur := vc.cur.Load(); cur != nil {
				r = cur
			}
		}
		c.sweep.mu.Unlock()
		if r != nil && c.topo().replicas[0].pool.Stat().InUse+c.topo().replicas[1].pool.Stat().InUse > 0 {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatal("read not in flight")
		}
		time.Sleep(time.Millisecond)
	}
}

// readAsync runs a read with ctx and returns where its result arrives.
func readAsync(db *sql.DB, ctx context.Context) <-chan readResult {
	done := make(chan readResult, 1)
	go func() {
		var node string
		err := db.QueryRowContext(ctx, "SELECT node").Scan(&node)
		done <- readResult{node, err}
	}()
	return done
}

type readResult struct {
	node string
	err  error
}

func waitRead(t *testing.T, done <-chan readResult, what string) readResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(5 * time.Second):
		t.Fatalf("read not ended within 5s: %s", what)
		return readResult{}
	}
}

// A read the sweep has not armed yet is rescued by the sweep when its
// node trips, and replayed on the primary.
func TestSweepRescuesUnarmedRead(t *testing.T) {
	db, c, name := openSwept(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Hour) // beyond three sweeps
	defer cancel()
	done := readAsync(db, ctx)
	r := inFlight(t, c)
	if r.armed.Load() {
		t.Fatal("a read with a deadline ten sweeps away was armed at once")
	}
	for _, n := range c.topo().replicas {
		n.health.Trip(io.ErrUnexpectedEOF)
	}
	c.sweep.sweep()
	got := waitRead(t, done, "the sweep should rescue it")
	if got.err != nil || got.node != name+"-p" {
		t.Fatalf("read ended with %q, %v; want it replayed on %s-p", got.node, got.err, name)
	}
}

// A caller's cancel reaches an unarmed read at the next sweep.
func TestSweepEndsUnarmedReadAtCancel(t *testing.T) {
	db, c, _ := openSwept(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := readAsync(db, ctx)
	inFlight(t, c)
	cancel()
	c.sweep.sweep()
	if got := waitRead(t, done, "the sweep should end it"); !errors.Is(got.err, context.Canceled) {
		t.Fatalf("read ended with %v, want context.Canceled", got.err)
	}
}

// The second sweep that finds a read running arms it: its watcher then
// ends it at the caller's cancel, with no sweep.
func TestSweepArmsAtSecondSight(t *testing.T) {
	db, c, _ := openSwept(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := readAsync(db, ctx)
	r := inFlight(t, c)
	c.sweep.sweep()
	if r.armed.Load() {
		t.Fatal("armed at the first sight")
	}
	c.sweep.sweep()
	if !r.armed.Load() {
		t.Fatal("not armed at the second sight")
	}
	cancel()
	if got := waitRead(t, done, "its watcher should end it"); !errors.Is(got.err, context.Canceled) {
		t.Fatalf("read ended with %v, want context.Canceled", got.err)
	}
}

// A read whose deadline may come before the sweep arms it is armed at
// once, and ends at its deadline with no sweep.
func TestSweepArmsNearDeadlineAtOnce(t *testing.T) {
	db, c, _ := openSwept(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	done := readAsync(db, ctx)
	if r := inFlight(t, c); !r.armed.Load() {
		t.Fatal("a read with a deadline within three sweeps was not armed at once")
	}
	got := waitRead(t, done, "its deadline should end it")
	if !errors.Is(got.err, context.DeadlineExceeded) {
		t.Fatalf("read ended with %v after %v, want its deadline", got.err, time.Since(start))
	}
}

// The sweeper sleeps once nothing is in flight (a finished read leaves its
// slot), and the next read is armed by its own goroutine, which wakes it.
func TestSweepSleepsAndWakes(t *testing.T) {
	db, c, name := openHonourC(t, ";check_interval=1h")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var node string
	if err := db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.sweep.awake.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not sleep within 10s of the last read")
		}
		time.Sleep(10 * time.Millisecond)
	}
	honour.setHang(name+"-r1", true)
	honour.setHang(name+"-r2", true)
	done := readAsync(db, ctx)
	if r := inFlight(t, c); !r.armed.Load() {
		t.Fatal("a read published while the sweeper slept was not armed at once")
	}
	for !c.sweep.awake.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the read did not wake the sweeper")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if got := waitRead(t, done, "its watcher should end it"); !errors.Is(got.err, context.Canceled) {
		t.Fatalf("read ended with %v, want context.Canceled", got.err)
	}
}
