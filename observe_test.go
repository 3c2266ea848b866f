package rwpool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// latencyDelays holds, per node DSN, how long the latency tests' fake
// driver takes to answer a query (latencyFake's BeforeAnswer); failFirst
// the DSN whose next query fails as a broken connection.
var (
	latencyDelays sync.Map // DSN → time.Duration
	failNext      sync.Map // DSN → *atomic.Bool
	latencyFake   = fakedriver.Register("rwpool-test-latency", fakedriver.Options{
		BeforeAnswer: func(ctx context.Context, dsn, query string) {
			if d, ok := latencyDelays.Load(dsn); ok {
				time.Sleep(d.(time.Duration))
			}
		},
		Fail: func(dsn, query string) error {
			if f, ok := failNext.Load(dsn); ok && f.(*atomic.Bool).CompareAndSwap(true, false) {
				return driver.ErrBadConn
			}
			return nil
		},
	})
)

// openLatency opens rwpool over a primary and two replicas of
// latencyFake whose queries take the delays given, with a statement
// observer collecting what it is told.
func openLatency(t *testing.T, extra string, delays ...time.Duration) (*sql.DB, *observed) {
	t.Helper()
	dsns := []string{t.Name() + "/p", t.Name() + "/r1", t.Name() + "/r2"}
	for i, d := range dsns {
		latencyFake.Fresh(d)
		latencyDelays.Store(d, delays[i])
		failNext.Store(d, new(atomic.Bool))
	}
	db, err := sql.Open("rwpool", fmt.Sprintf("driver=rwpool-test-latency;primary=%s;replica=%s;replica=%s;check_interval=1h;%s", dsns[0], dsns[1], dsns[2], extra))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, observeStatements(t, db)
}

// observeStatements adds to db a statement observer that collects what
// it is told.
func observeStatements(t *testing.T, db *sql.DB) *observed {
	t.Helper()
	o := &observed{}
	if err := rwpool.Configure(db, rwpool.WithStatementObserver(o.add)); err != nil {
		t.Fatal(err)
	}
	return o
}

// afterPrimaryFoundDown runs back, in a goroutine, once db's primary (node
// 0, taken down by the caller) is found unavailable and down more has
// passed: the outage a write with failover_wait waits out. The returned
// function waits for it.
func afterPrimaryFoundDown(db *sql.DB, down time.Duration, back func()) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if s, err := rwpool.Stats(db); err == nil && s.Nodes[0].State == rwpool.Unavailable {
				break
			}
		}
		time.Sleep(down) // the outage, measured by the tests
		back()
	}()
	return func() { <-done }
}

type observed struct {
	mu  sync.Mutex
	all []rwpool.StatementInfo
}

func (o *observed) add(_ context.Context, s rwpool.StatementInfo) {
	o.mu.Lock()
	o.all = append(o.all, s)
	o.mu.Unlock()
}

func (o *observed) of(node, kind, outcome string) []rwpool.StatementInfo {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []rwpool.StatementInfo
	for _, s := range o.all {
		if s.Node == node && s.Kind == kind && s.Outcome == outcome {
			out = append(out, s)
		}
	}
	return out
}

// histogram returns node's histogram of kind and outcome from Stats.
func histogram(t *testing.T, db *sql.DB, node, kind, outcome string) rwpool.StatementLatency {
	t.Helper()
	st, err := rwpool.Stats(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.Name != node {
			continue
		}
		for _, l := range n.Latency {
			if l.Kind == kind && l.Outcome == outcome {
				return l
			}
		}
	}
	return rwpool.StatementLatency{}
}

// quantile reads the q-quantile off a histogram: the upper bound of the
// bucket it falls in.
func quantile(l rwpool.StatementLatency, q float64) time.Duration {
	bounds := rwpool.LatencyBounds()
	rank := int64(math.Ceil(q * float64(l.Count)))
	var seen int64
	for i, c := range l.Buckets {
		if seen += c; seen >= rank && i < len(bounds) {
			return bounds[i]
		}
	}
	return bounds[len(bounds)-1]
}

// Each node's histogram holds its own statements: replicas that answer in
// 2 ms and 8 ms show medians within a bucket (a factor of √2) above that,
// with scheduling's slack, the writes are the primary's, and the counts
// are the statements run.
func TestLatencyHistogramPerNode(t *testing.T) {
	db, o := openLatency(t, "", 0, 2*time.Millisecond, 8*time.Millisecond)
	ctx := context.Background()
	for range 200 {
		var node string
		if err := db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
			t.Fatal(err)
		}
	}
	for range 30 {
		if _, err := db.ExecContext(ctx, "UPDATE t SET x = 1"); err != nil {
			t.Fatal(err)
		}
	}
	r1, r2 := histogram(t, db, "replica1", "read", "ok"), histogram(t, db, "replica2", "read", "ok")
	if r1.Count+r2.Count != 200 || r1.Count < 50 || r2.Count < 50 {
		t.Fatalf("reads counted: replica1 %d, replica2 %d; want 200 between them", r1.Count, r2.Count)
	}
	for _, c := range []struct {
		l     rwpool.StatementLatency
		delay time.Duration
	}{{r1, 2 * time.Millisecond}, {r2, 8 * time.Millisecond}} {
		if p50 := quantile(c.l, 0.5); p50 < c.delay || p50 > 2*c.delay {
			t.Errorf("a replica answering in %s: median %s, want within [%s, %s]", c.delay, p50, c.delay, 2*c.delay)
		}
		if c.l.Sum < time.Duration(c.l.Count)*c.delay {
			t.Errorf("a replica answering in %s: %d reads summed to %s", c.delay, c.l.Count, c.l.Sum)
		}
	}
	if w := histogram(t, db, "primary", "write", "ok"); w.Count != 30 {
		t.Errorf("the primary's writes: %d counted, want 30", w.Count)
	}
	if n := len(o.of("replica1", "read", "ok")) + len(o.of("replica2", "read", "ok")); n != 200 {
		t.Errorf("the observer saw %d reads, want 200", n)
	}
	for _, s := range o.of("replica2", "read", "ok") {
		if s.Duration < 8*time.Millisecond || s.Role != "replica" || s.Reason == "" || s.Err != nil {
			t.Fatalf("an observed read on replica2: %+v", s)
		}
	}
}

// A read that failed on one replica and was replayed on the other is
// recorded twice: the failed attempt as replayed on the first, the
// answer as ok on the second.
func TestLatencyReplayedRead(t *testing.T) {
	db, o := openLatency(t, "", 0, 0, 0)
	ctx := context.Background()
	for range 50 {
		f, _ := failNext.Load(t.Name() + "/r1")
		f.(*atomic.Bool).Store(true)
		var node string
		if err := db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
			t.Fatal(err)
		}
		if f.(*atomic.Bool).Load() {
			continue // the read went to replica2 at once
		}
		rep := o.of("replica1", "read", "replayed")
		if len(rep) != 1 || rep[0].Err == nil {
			t.Fatalf("the failed attempt on replica1: %+v, want one, replayed, with its error", rep)
		}
		if ok := o.of("replica2", "read", "ok"); len(ok) == 0 {
			t.Fatal("the replayed read's answer on replica2 was not observed")
		}
		if h := histogram(t, db, "replica1", "read", "replayed"); h.Count != 1 {
			t.Fatalf("replica1's replayed histogram counts %d, want 1", h.Count)
		}
		return
	}
	t.Fatal("no read went to replica1 in 50")
}

// A hedged read records both attempts: the slow one as hedged on its
// node, the hedge's answer as ok on the other, with the reason hedged.
func TestLatencyHedgedRead(t *testing.T) {
	db, o := openLatency(t, "hedge_after=10ms;hedge_budget=100%", 0, 200*time.Millisecond, 0)
	ctx := context.Background()
	for range 50 {
		var node string
		if err := db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
			t.Fatal(err)
		}
		slow := o.of("replica1", "read", "hedged")
		if len(slow) == 0 {
			continue
		}
		var won []rwpool.StatementInfo
		for _, n := range []string{"primary", "replica2"} {
			for _, s := range o.of(n, "read", "ok") {
				if strings.HasPrefix(s.Reason, "hedged") {
					won = append(won, s)
				}
			}
		}
		if len(won) != 1 {
			t.Fatalf("the hedge's answer observed %d times, want once: %+v", len(won), o.all)
		}
		if h := histogram(t, db, "replica1", "read", "hedged"); h.Count != 1 {
			t.Fatalf("replica1's hedged histogram counts %d, want 1", h.Count)
		}
		return
	}
	t.Fatal("no read went to replica1 in 50")
}

// Statements of a transaction, its COMMIT included, are of kind
// transaction; a write waiting for a connection of a full pool says how
// long it waited, apart from its time on the node.
func TestLatencyTransactionAndConnWait(t *testing.T) {
	db, o := openLatency(t, "pool_size=1;max_waiters=4", 5*time.Millisecond, 0, 0)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE t SET x = 1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(ctx, "UPDATE t SET x = 2") // waits for the transaction's connection
		done <- err
	}()
	waitFor(t, "the write queued for the primary's one connection", func() bool {
		st, _ := rwpool.Stats(db)
		for _, n := range st.Nodes {
			if n.Name == "primary" {
				return n.Waiting == 1
			}
		}
		return false
	})
	const hold = 30 * time.Millisecond
	time.Sleep(hold) // the queued write's wait, measured
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(o.of("primary", "transaction", "ok")); n != 2 {
		t.Errorf("%d statements of kind transaction observed, want 2 (the UPDATE and the COMMIT)", n)
	}
	w := o.of("primary", "write", "ok")
	if len(w) != 1 || w[0].ConnWait < hold || w[0].Duration > w[0].ConnWait {
		t.Errorf("the write queued for %s: %+v; want ConnWait at least that, apart from its Duration", hold, w)
	}
}

// A write that waited for a writable primary (failover_wait) says how
// long, apart from its time on the node: in NodeStats and to the
// observer.
func TestLatencyFailoverWait(t *testing.T) {
	cc := newCtlCluster(t, 1, "check_interval=1h;failover_wait=3s")
	o := observeStatements(t, cc.db)
	cc.primary.SetDown(true)
	const down = 150 * time.Millisecond
	defer afterPrimaryFoundDown(cc.db, down, func() { cc.primary.SetDown(false) })()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cc.db.ExecContext(ctx, "UPDATE t SET x = 1"); err != nil {
		t.Fatalf("a write while the primary is down, with failover_wait: %v", err)
	}
	st := cc.stats(t, "primary")
	if st.FailoverWaits != 1 || st.FailoverWaitDuration < down {
		t.Errorf("primary: %d failover waits, %s; want 1, at least %s", st.FailoverWaits, st.FailoverWaitDuration, down)
	}
	w := o.of("primary", "write", "ok")
	if len(w) != 1 || w[0].FailoverWait < down || w[0].Duration >= down {
		t.Errorf("the observed write: %+v; want a FailoverWait of at least %s, apart from its Duration", w, down)
	}
}
