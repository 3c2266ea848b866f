package rwpool_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/health"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

const sentinelPW = "S3ntinelPW"

// ctlCluster opens rwpool over ctl nodes named after the test: a primary
// and n replicas, with fast health checks unless extra overrides them.
type ctlCluster struct {
	db       *sql.DB
	primary  *fakedriver.Node
	replicas []*fakedriver.Node
	mu       sync.Mutex
	events   []rwpool.Event
}

func newCtlCluster(t *testing.T, n int, extra string) *ctlCluster {
	t.Helper()
	cc := &ctlCluster{}
	name := func(role string) string {
		return fmt.Sprintf("%s-%s password=%s", t.Name(), role, sentinelPW)
	}
	dsn := fmt.Sprintf("driver=rwpool-test-ctl;probe_timeout=100ms;primary='%s'", name("p"))
	if !strings.Contains(extra, "check_interval") {
		dsn += ";check_interval=50ms"
	}
	cc.primary = ctl.Fresh(name("p"))
	for i := range n {
		r := name(fmt.Sprintf("r%d", i+1))
		dsn += fmt.Sprintf(";replica='%s'", r)
		cc.replicas = append(cc.replicas, ctl.Fresh(r))
	}
	db, err := sql.Open("rwpool", dsn+";"+extra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range append([]*fakedriver.Node{cc.primary}, cc.replicas...) {
			n.SetHang(false)
		}
		db.Close()
	})
	if err := rwpool.Configure(db, rwpool.WithEventHandler(func(e rwpool.Event) {
		cc.mu.Lock()
		cc.events = append(cc.events, e)
		cc.mu.Unlock()
	})); err != nil {
		t.Fatal(err)
	}
	cc.db = db
	return cc
}

func (cc *ctlCluster) eventsOf(node string) []rwpool.Event {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	var out []rwpool.Event
	for _, e := range cc.events {
		if e.Node == node {
			out = append(out, e)
		}
	}
	return out
}

func (cc *ctlCluster) stats(t *testing.T, node string) rwpool.NodeStats {
	t.Helper()
	s, err := rwpool.Stats(cc.db)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range s.Nodes {
		if n.Name == node {
			return n
		}
	}
	t.Fatalf("no node %q", node)
	return rwpool.NodeStats{}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (cc *ctlCluster) read(t *testing.T) (string, error) {
	var node string
	err := cc.db.QueryRow("SELECT node").Scan(&node)
	return node, err
}

func TestPrimaryDownWritesFailFastAndRecover(t *testing.T) {
	cc := newCtlCluster(t, 1, "")
	if _, err := cc.db.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	cc.primary.SetDown(true)
	// The first failures are the real ones; a confirming probe trips the node.
	waitFor(t, "primary tripped", func() bool {
		cc.db.Exec("INSERT INTO t VALUES (2)")
		return cc.stats(t, "primary").State == rwpool.Unavailable
	})
	var durs []time.Duration
	for range 1000 {
		start := time.Now()
		_, err := cc.db.Exec("INSERT INTO t VALUES (3)")
		durs = append(durs, time.Since(start))
		if !errors.Is(err, rwpool.ErrUnavailable) {
			t.Fatalf("write to a tripped primary: %v; want ErrUnavailable", err)
		}
		if !strings.Contains(err.Error(), "node primary") || strings.Contains(err.Error(), sentinelPW) {
			t.Fatalf("error must name the node and never the password: %v", err)
		}
	}
	slices.Sort(durs)
	p99 := durs[len(durs)*99/100]
	t.Logf("write to a tripped primary: p50 %v, p99 %v", durs[len(durs)/2], p99)
	if p99 > time.Millisecond {
		t.Fatalf("p99 of a fail-fast write = %v, want < 1ms", p99)
	}
	// Reads keep running on the replica.
	if node, err := cc.read(t); err != nil || !strings.Contains(node, "-r1") {
		t.Fatalf("read with the primary down: %q, %v", node, err)
	}
	st := cc.stats(t, "primary")
	if st.Trips != 1 || st.State != rwpool.Unavailable || st.Since.IsZero() || st.LastError == "" || strings.Contains(st.LastError, sentinelPW) {
		t.Fatalf("stats of a tripped primary: %+v", st)
	}
	cc.primary.SetDown(false)
	waitFor(t, "primary recovered by the health checker", func() bool {
		return cc.stats(t, "primary").State == rwpool.Available
	})
	if _, err := cc.db.Exec("INSERT INTO t VALUES (4)"); err != nil {
		t.Fatalf("write after recovery: %v", err)
	}
	ev := cc.eventsOf("primary")
	if len(ev) != 2 || ev[0].To != health.Unavailable || ev[1].To != health.Available || ev[1].Downtime <= 0 {
		t.Fatalf("events %+v, want one trip then one recovery", ev)
	}
	if strings.Contains(fmt.Sprint(ev[0].Cause), sentinelPW) {
		t.Fatalf("event cause leaks the password: %v", ev[0].Cause)
	}
}

func TestReadsReplayOnOtherNodes(t *testing.T) {
	cc := newCtlCluster(t, 2, "")
	for range 20 { // warm both replicas' pools
		if _, err := cc.read(t); err != nil {
			t.Fatal(err)
		}
	}
	cc.replicas[0].SetDown(true)
	for i := range 500 {
		node, err := cc.read(t)
		if err != nil {
			t.Fatalf("read %d with replica1 down: %v", i, err)
		}
		if strings.Contains(node, "-r1") {
			t.Fatalf("read %d served by the dead replica", i)
		}
	}
	// The confirming probe runs beside the reads: 500 fast reads may
	// finish before it has tripped the node.
	waitFor(t, "replica1 tripped by its confirming probe", func() bool {
		return cc.stats(t, "replica1").State == rwpool.Unavailable
	})
	if st := cc.stats(t, "replica1"); st.Replays == 0 {
		t.Fatalf("replica1 after failing: %+v", st)
	}
	// Both replicas down: reads fall back to the primary.
	cc.replicas[1].SetDown(true)
	for i := range 200 {
		node, err := cc.read(t)
		if err != nil || !strings.Contains(node, "-p ") {
			t.Fatalf("read %d with both replicas down: %q, %v", i, node, err)
		}
	}
	if st := cc.stats(t, "primary"); st.Fallbacks == 0 {
		t.Fatalf("no fallback counted: %+v", st)
	}
	cc.replicas[0].SetDown(false)
	cc.replicas[1].SetDown(false)
	waitFor(t, "replicas back in rotation", func() bool {
		seen := map[bool]bool{}
		for range 50 {
			node, err := cc.read(t)
			if err != nil {
				return false
			}
			seen[strings.Contains(node, "-r1")] = true
			seen[strings.Contains(node, "-r2")] = seen[strings.Contains(node, "-r2")] || strings.Contains(node, "-r2")
		}
		return seen[true] && cc.stats(t, "replica2").State == rwpool.Available
	})
}

func TestFallbackErrorFailsReadsWithErrUnavailable(t *testing.T) {
	cc := newCtlCluster(t, 1, "fallback=error")
	cc.replicas[0].SetDown(true)
	waitFor(t, "replica tripped", func() bool {
		cc.read(t)
		return cc.stats(t, "replica1").State == rwpool.Unavailable
	})
	if _, err := cc.read(t); !errors.Is(err, rwpool.ErrUnavailable) {
		t.Fatalf("read with no replica and fallback=error: %v", err)
	}
	if st := cc.stats(t, "primary"); st.Served != 0 {
		t.Fatalf("fallback=error sent reads to the primary: %+v", st)
	}
}

func TestBreakerOffLeavesOnlyPools(t *testing.T) {
	cc := newCtlCluster(t, 1, "breaker=off")
	cc.primary.SetDown(true)
	for range 20 {
		_, err := cc.db.Exec("INSERT INTO t VALUES (1)")
		if err == nil || errors.Is(err, rwpool.ErrUnavailable) {
			t.Fatalf("breaker=off: %v; want the driver's own error", err)
		}
	}
	time.Sleep(200 * time.Millisecond) // several check intervals: nothing may trip
	if st := cc.stats(t, "primary"); st.State != rwpool.Available || st.Trips != 0 {
		t.Fatalf("breaker=off tripped a node: %+v", st)
	}
}

func TestConcurrentFailuresMakeOneTransition(t *testing.T) {
	cc := newCtlCluster(t, 1, "check_interval=1h;fallback=error")
	cc.replicas[0].SetDown(true)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				cc.read(t)
			}
		}()
	}
	wg.Wait()
	waitFor(t, "replica tripped", func() bool { return cc.stats(t, "replica1").State == rwpool.Unavailable })
	if ev := cc.eventsOf("replica1"); len(ev) != 1 {
		t.Fatalf("%d events for one outage, want 1: %+v", len(ev), ev)
	}
}

func TestDeadlineOnHungNode(t *testing.T) {
	cc := newCtlCluster(t, 1, "check_interval=1h")
	if _, err := cc.read(t); err != nil {
		t.Fatal(err)
	}
	cc.replicas[0].SetHang(true)
	const deadline = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	var node string
	err := cc.db.QueryRowContext(ctx, "SELECT node").Scan(&node)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read on a hung node: %q, %v; want context.DeadlineExceeded", node, err)
	}
	if took > deadline+50*time.Millisecond {
		t.Fatalf("read on a hung node returned after %v, want within 50ms of its %v deadline", took, deadline)
	}
	// The statement's deadline started a confirming probe, which hangs too:
	// the node is tripped and later reads go elsewhere at once.
	waitFor(t, "hung replica tripped", func() bool { return cc.stats(t, "replica1").State == rwpool.Unavailable })
	if node, err := cc.read(t); err != nil || strings.Contains(node, "-r1") {
		t.Fatalf("read after the hung replica tripped: %q, %v", node, err)
	}
	cc.replicas[0].SetHang(false)
	// The abandoned connection is closed once the driver lets go.
	waitFor(t, "abandoned connection closed", func() bool { return cc.stats(t, "replica1").InUse == 0 })
}

func TestNothingReplayedInTransaction(t *testing.T) {
	cc := newCtlCluster(t, 1, "check_interval=1h")
	tx, err := cc.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	cc.primary.SetDown(true)
	if _, err := tx.Exec("INSERT INTO t VALUES (1)"); err == nil {
		t.Fatal("statement on a dead primary inside a transaction succeeded")
	}
	tx.Rollback()
	for _, n := range []string{"primary", "replica1"} {
		if st := cc.stats(t, n); st.Replays != 0 || (n == "replica1" && st.Served != 0) {
			t.Fatalf("something was replayed out of the transaction: %+v", st)
		}
	}
}

func TestSpareServesOnlyWhenNoWeightedReplica(t *testing.T) {
	p := fmt.Sprintf("%s-p", t.Name())
	// probe_timeout=1s: a down node refuses at once, and a loaded machine
	// must not make a healthy spare's probe time out (it did in CI).
	dsn := fmt.Sprintf("driver=rwpool-test-ctl;check_interval=50ms;probe_timeout=1s;primary='%s';replica='%s-w' weight=1;replica='%s-s' weight=0", p, t.Name(), t.Name())
	weighted := ctl.Fresh(t.Name() + "-w")
	ctl.Fresh(t.Name() + "-s")
	ctl.Fresh(p)
	db, err := sql.Open("rwpool", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	read := func() string {
		var node string
		if err := db.QueryRow("SELECT node").Scan(&node); err != nil {
			t.Fatal(err)
		}
		return node
	}
	for range 100 {
		if n := read(); n != t.Name()+"-w" {
			t.Fatalf("read served by %q while the weighted replica is up", n)
		}
	}
	weighted.SetDown(true)
	waitFor(t, "spare takes over", func() bool { return read() == t.Name()+"-s" })
	for range 100 {
		if n := read(); n != t.Name()+"-s" {
			t.Fatalf("read served by %q, want the spare", n)
		}
	}
}

// Closing the *sql.DB closes every real connection, in use or idle, and
// stops every goroutine (goleak checks the latter in TestMain).
func TestCloseClosesEveryRealConnection(t *testing.T) {
	cc := newCtlCluster(t, 2, "min_idle=2")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				cc.read(t)
				cc.db.Exec("INSERT INTO t VALUES (1)")
			}
		}()
	}
	wg.Wait()
	c, err := cc.db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(context.Background(), "SET x = 1"); err != nil { // pins a primary connection
		t.Fatal(err)
	}
	if err := cc.db.Close(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for i, n := range append([]*fakedriver.Node{cc.primary}, cc.replicas...) {
		if open := n.Open(); open != 0 {
			t.Fatalf("node %d: %d real connections open after Close", i, open)
		}
	}
	if _, err := cc.db.Exec("INSERT INTO t VALUES (1)"); err == nil {
		t.Fatal("statement after Close succeeded")
	}
}

func TestWithRouteTellsWhichNodeServedAndWhy(t *testing.T) {
	cc := newCtlCluster(t, 1, "")
	var r rwpool.Route
	ctx := rwpool.WithRoute(context.Background(), &r)
	var node string
	if err := cc.db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
		t.Fatal(err)
	}
	if r.Node != "replica1" || r.Role != "replica" || !strings.HasPrefix(r.Reason, "read") || r.Replays != 0 {
		t.Fatalf("read: %+v", r)
	}
	if _, err := cc.db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if r.Node != "primary" || !strings.HasPrefix(r.Reason, "write") {
		t.Fatalf("write: %+v", r)
	}
	if err := cc.db.QueryRowContext(rwpool.WithPrimary(ctx), "SELECT node").Scan(&node); err != nil {
		t.Fatal(err)
	}
	if r.Node != "primary" || r.Reason != "WithPrimary" {
		t.Fatalf("WithPrimary read: %+v", r)
	}
	// A replica that fails: the read is replayed, and the route says so.
	cc.replicas[0].SetDown(true)
	if err := cc.db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
		t.Fatal(err)
	}
	if r.Node != "primary" || r.Replays != 1 {
		t.Fatalf("replayed read: %+v", r)
	}
	tx, err := cc.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if r.Node != "primary" || r.Reason != "transaction" {
		t.Fatalf("transaction: %+v", r)
	}
}

// A statement abandoned at its deadline inside a transaction loses the
// transaction: later statements and Commit fail without touching the real
// connection, which the goroutine still in the driver owns.
func TestAbandonedStatementEndsTransaction(t *testing.T) {
	cc := newCtlCluster(t, 1, "")
	tx, err := cc.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	cc.primary.SetHang(true)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (1)"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung statement in a transaction: %v", err)
	}
	if err := tx.Commit(); err == nil {
		t.Fatal("Commit after an abandoned statement succeeded")
	}
	cc.primary.SetHang(false)
	waitFor(t, "abandoned connection closed and primary available", func() bool {
		st := cc.stats(t, "primary")
		return st.InUse == 0 && st.Available
	})
	if _, err := cc.db.Exec("INSERT INTO t VALUES (2)"); err != nil {
		t.Fatalf("a new statement after the abandoned transaction: %v", err)
	}
}
