package rwpool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// A write run as a query (INSERT … RETURNING) that waited out an outage
// with failover_wait is counted in NodeStats.FailoverWaits like an Exec.
func TestLatencyFailoverWaitPinnedQuery(t *testing.T) {
	cc := newCtlCluster(t, 1, "check_interval=1h;failover_wait=3s")
	o := observeStatements(t, cc.db)
	cc.primary.SetDown(true)
	const down = 150 * time.Millisecond
	defer afterPrimaryFoundDown(cc.db, down, func() { cc.primary.SetDown(false) })()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := cc.db.QueryContext(ctx, "INSERT INTO t VALUES (1) RETURNING id")
	if err != nil {
		t.Fatalf("a write query while the primary is down, with failover_wait: %v", err)
	}
	for rows.Next() {
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	w := o.of("primary", "write", "ok")
	if len(w) != 1 || w[0].FailoverWait < down {
		t.Errorf("observed: %+v; want one write with FailoverWait >= %s", w, down)
	}
	st := cc.stats(t, "primary")
	if st.FailoverWaits != 1 || st.FailoverWaitDuration < down {
		t.Errorf("primary: %d failover waits, %s; want 1, at least %s (the observer saw FailoverWait %v)", st.FailoverWaits, st.FailoverWaitDuration, down, w)
	}
}

// slowDial wraps a fake driver: while delay is set, a dial takes that long.
type slowDial struct {
	inner driver.Driver
	delay atomic.Int64
}

func (s *slowDial) Open(name string) (driver.Conn, error) {
	time.Sleep(time.Duration(s.delay.Load()))
	return s.inner.Open(name)
}

var (
	latencyInner = fakedriver.Register("rwpool-test-latency-inner", fakedriver.Options{})
	latencySlow  = func() *slowDial {
		s := &slowDial{inner: latencyInner}
		sql.Register("rwpool-test-latency-slowdial", s)
		return s
	}()
)

// FailoverWait is "apart from pool waits" (ConnWait): the two are
// disjoint parts of the write's wall time, so they cannot add up to more.
func TestLatencyFailoverWaitExcludesConnWait(t *testing.T) {
	p := latencyInner.Fresh(t.Name() + "-p")
	db, err := sql.Open("rwpool", "driver=rwpool-test-latency-slowdial;probe_timeout=500ms;check_interval=1h;failover_wait=3s;primary='"+t.Name()+"-p'")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	o := observeStatements(t, db)
	p.SetDown(true)
	const down, dial = 100 * time.Millisecond, 150 * time.Millisecond
	defer afterPrimaryFoundDown(db, down, func() {
		latencySlow.delay.Store(int64(dial)) // the new primary is slow to accept
		p.SetDown(false)
	})()
	start := time.Now()
	if _, err := db.ExecContext(context.Background(), "UPDATE t SET x = 1"); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	w := o.of("primary", "write", "ok")
	if len(w) != 1 {
		t.Fatalf("observed %+v", w)
	}
	if s := w[0]; s.ConnWait+s.FailoverWait+s.Duration > wall {
		t.Errorf("wall %s, but ConnWait %s + FailoverWait %s + Duration %s = %s: the dial is counted in both waits",
			wall, s.ConnWait, s.FailoverWait, s.Duration, s.ConnWait+s.FailoverWait+s.Duration)
	}
}

// A hedge overtaken by the read it hedged is "hedged", never "error": no
// statement failed, and the caller got no error.
func TestLatencyLostHedgeNotError(t *testing.T) {
	db, o := openLatency(t, "hedge_after=10ms;hedge_budget=100%;fallback=error", 0, 60*time.Millisecond, 300*time.Millisecond)
	ctx := context.Background()
	for range 10 {
		var node string
		if err := db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
			t.Fatal(err)
		}
	}
	// Every read that was hedged is recorded twice, its attempt and its
	// hedge's, once the lost ones finish.
	waitFor(t, "the lost attempts recorded", func() bool {
		st, _ := rwpool.Stats(db)
		var hedges, attempts int64
		for _, n := range st.Nodes {
			hedges += n.Hedges
			for _, l := range n.Latency {
				attempts += l.Count
			}
		}
		return hedges > 0 && attempts >= 10+hedges
	})
	for _, n := range []string{"primary", "replica1", "replica2"} {
		if e := o.of(n, "read", "error"); len(e) > 0 {
			t.Errorf("%s: %d reads observed as error (first: %+v), %d as hedged; no read failed",
				n, len(e), e[0], len(o.of(n, "read", "hedged")))
		}
		if h := histogram(t, db, n, "read", "error"); h.Count > 0 {
			t.Errorf("%s: read/error histogram counts %d", n, h.Count)
		}
	}
}

// A diagnostics statement (Target Previous) runs on the parked connection
// of the lease's previous read: it is a statement run on a node like any
// other, and is observed and counted.
func TestLatencyPreviousTargetObserved(t *testing.T) {
	leaseMySQL.Fresh(t.Name())
	db, err := sql.Open("rwpool", "driver=rwpool-test-lease-mysql;primary='"+t.Name()+"';breaker=off")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	o := observeStatements(t, db)
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var x any
	if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&x); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "SHOW WARNINGS"); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&x); err != nil {
		t.Fatal(err)
	}
	rows, err := c.QueryContext(ctx, "SHOW WARNINGS")
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	o.mu.Lock()
	n := len(o.all)
	o.mu.Unlock()
	var counted int64
	st, _ := rwpool.Stats(db)
	for _, l := range st.Nodes[0].Latency {
		counted += l.Count
	}
	if n != 4 || counted != 4 {
		t.Errorf("4 statements ran on the primary (2 reads, 2 SHOW WARNINGS on the parked connection): %d observed, %d in its histograms", n, counted)
	}
}

// A session read that waited (causal_wait) for its replica to replay the
// session's write: the wait is NodeStats.CausalWaitDuration, not the
// read's time on the node (the fake answers the read itself at once).
func TestLatencyCausalWaitNotInDuration(t *testing.T) {
	db, cl := openSim(t, "causal_wait=1s")
	o := observeStatements(t, db)
	ctx := rwpool.WithSession(context.Background())
	if _, err := db.ExecContext(ctx, "UPDATE t SET x = 1"); err != nil {
		t.Fatal(err)
	}
	const lag = 150 * time.Millisecond
	go func() {
		time.Sleep(lag)
		sim.Node(cl + "/r1").SetReplayed(0x100)
		sim.Node(cl + "/r2").SetReplayed(0x100)
	}()
	r := simRead(t, db, ctx)
	if r.Role != "replica" {
		t.Fatalf("the read went to %s, want a replica once both have the write", r.Node)
	}
	st, _ := rwpool.Stats(db)
	var cw time.Duration
	for _, n := range st.Nodes {
		cw += n.CausalWaitDuration
	}
	for _, s := range o.of(r.Node, "read", "ok") {
		if s.Duration >= lag {
			t.Errorf("the read on %s: Duration %s, ConnWait %s; the causal wait (CausalWaitDuration %s) is counted in its time on the node", r.Node, s.Duration, s.ConnWait, cw)
		}
	}
	if h := histogram(t, db, r.Node, "read", "ok"); h.Count != 1 || h.Sum >= lag {
		t.Errorf("%s read/ok histogram: count %d, sum %s", r.Node, h.Count, h.Sum)
	}
}

// Observers added while statements run, Stats read meanwhile: no race.
func TestLatencyObserverRace(t *testing.T) {
	db, _ := openLatency(t, "hedge_after=1ms;hedge_budget=100%", 0, time.Millisecond, 2*time.Millisecond)
	ctx := context.Background()
	var wg sync.WaitGroup
	var seen atomic.Int64
	for range 4 {
		wg.Go(func() {
			for range 100 {
				var node string
				if err := db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
					t.Error(err)
					return
				}
				db.ExecContext(ctx, "UPDATE t SET x = 1")
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			rwpool.Configure(db, rwpool.WithStatementObserver(func(context.Context, rwpool.StatementInfo) { seen.Add(1) }))
			rwpool.Stats(db)
			time.Sleep(time.Millisecond)
		}
	})
	wg.Wait()
}

var (
	latencyROFail  atomic.Bool
	latencyROInner = fakedriver.Register("rwpool-test-latency-ro-inner", fakedriver.Options{
		Fail: func(dsn, query string) error {
			if strings.HasPrefix(query, "UPDATE") && latencyROFail.CompareAndSwap(true, false) {
				return &fakedriver.PostgresError{Code: "25006", Message: "cannot execute UPDATE in a read-only transaction"}
			}
			return nil
		},
	})
	latencyROSlow = func() *slowDial {
		s := &slowDial{inner: latencyROInner}
		sql.Register("rwpool-test-latency-ro-slowdial", s)
		return s
	}()
)

// A write refused read-only and run again (failover_wait): the refused
// attempt is observed as replayed with its own time on the node, not the
// time until the next attempt had a connection (here a 150 ms dial, the
// next attempt's ConnWait).
func TestLatencyPinnedReplayedDuration(t *testing.T) {
	latencyROInner.Fresh(t.Name() + "-p")
	db, err := sql.Open("rwpool", "driver=rwpool-test-latency-ro-slowdial;check_interval=1h;failover_wait=2s;primary='"+t.Name()+"-p'")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	o := observeStatements(t, db)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "UPDATE t SET x = 0"); err != nil { // a connection in the pool
		t.Fatal(err)
	}
	const dial = 150 * time.Millisecond
	latencyROSlow.delay.Store(int64(dial))
	defer latencyROSlow.delay.Store(0)
	latencyROFail.Store(true)
	start := time.Now()
	if _, err := db.ExecContext(ctx, "UPDATE t SET x = 1"); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	rep, ok := o.of("primary", "write", "replayed"), o.of("primary", "write", "ok")
	if len(rep) != 1 || len(ok) != 2 {
		t.Fatalf("replayed %+v ok %+v", rep, ok)
	}
	r, w := rep[0], ok[1]
	t.Logf("wall %s; replayed attempt: Duration %s; served attempt: ConnWait %s Duration %s", wall, r.Duration, w.ConnWait, w.Duration)
	if r.Duration >= dial || r.Duration+w.ConnWait+w.Duration > wall {
		t.Errorf("the refused attempt's Duration %s covers the next attempt's dial (ConnWait %s)", r.Duration, w.ConnWait)
	}
}

var (
	latencyDownNode atomic.Pointer[fakedriver.Node]
	latencyROFail2  atomic.Bool
	latencyRODown   = fakedriver.Register("rwpool-test-latency-ro-down", fakedriver.Options{
		Fail: func(dsn, query string) error {
			if strings.HasPrefix(query, "UPDATE") && latencyROFail2.CompareAndSwap(true, false) {
				latencyDownNode.Load().SetDown(true) // refuses the write, then goes away
				return &fakedriver.PostgresError{Code: "25006", Message: "read-only"}
			}
			return nil
		},
	})
)

// What an observer's Err holds for a write whose rerun could not get a
// connection: the pool's wrapper (pool.nodeError), which rwotel's
// errorType reports as error.type.
func TestLatencyRefusedWriteDuration(t *testing.T) {
	n := latencyRODown.Fresh(t.Name() + "-p")
	latencyDownNode.Store(n)
	db, err := sql.Open("rwpool", "driver=rwpool-test-latency-ro-down;check_interval=1h;failover_wait=100ms;primary='"+t.Name()+"-p'")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	o := observeStatements(t, db)
	latencyROFail2.Store(true)
	_, err = db.ExecContext(context.Background(), "UPDATE t SET x = 1")
	t.Logf("caller's error: %v", err)
	for _, s := range o.all {
		var chain []string
		for e := s.Err; e != nil; e = errors.Unwrap(e) {
			chain = append(chain, fmt.Sprintf("%T", e))
		}
		t.Logf("observed %s/%s Duration %s Err chain %v", s.Kind, s.Outcome, s.Duration, chain)
		if s.Duration >= 50*time.Millisecond {
			t.Errorf("the refused attempt's Duration %s holds the 100 ms failover wait that followed it", s.Duration)
		}
	}
}
