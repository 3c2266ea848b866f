package rwpool

import (
	"context"
	"database/sql"
	"runtime"
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

var watchCallFake = fakedriver.Register("rwpool-internal-watchcall", fakedriver.Options{})

// TestWatchedReadAllocatesAsUnwatched: on a driver rwpool must watch (one
// it does not know to honour contexts, as lib/pq), a read with a deadline
// is handed to a parked worker in the worker's own call record, so it
// allocates no more than the same read on a driver that is not watched
// (which BenchmarkReadContext holds to bare + 1). A goroutine started per
// call, as await does, costs about eight more.
func TestWatchedReadAllocatesAsUnwatched(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	allocs := func(db *sql.DB) float64 {
		defer db.Close()
		var n int
		read := func() {
			if err := db.QueryRowContext(ctx, "SELECT 1 FROM t WHERE id = $1", 7).Scan(&n); err != nil {
				t.Fatal(err)
			}
		}
		read() // warm: the pools' connections, the worker
		// Not testing.AllocsPerRun, whose whole-number average of ~12.5
		// swings by one from run to run.
		const runs = 5000
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			read()
		}
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / runs
	}
	bare, err := sql.Open("rwpool-bench-nop", "")
	if err != nil {
		t.Fatal(err)
	}
	watched, err := sql.Open("rwpool", "driver=rwpool-bench-nop;primary=p;replica=r;check_interval=1h")
	if err != nil {
		t.Fatal(err)
	}
	b := allocs(bare)
	w := allocs(watched)
	u := allocs(openHonouring(t, "driver=rwpool-bench-nop;primary=p;replica=r;check_interval=1h"))
	t.Logf("allocations per read: bare %.2f, rwpool unwatched %.2f, rwpool watched %.2f", b, u, w)
	// Half an allocation of slack for what the Connectors' own goroutines
	// allocate meanwhile.
	if w > u+0.5 {
		t.Errorf("a watched read allocates %.2f objects, an unwatched one %.2f: want no more", w, u)
	}
}

// TestWatchedCallAbandonedThenServesAgain: a read stuck in a driver that
// ignores its context (a hung replica) returns at its deadline; the worker
// it was handed to stays with the driver until the driver lets go, then
// destroys the connection and serves again.
func TestWatchedCallAbandonedThenServesAgain(t *testing.T) {
	c := connectorFor(t, "driver=rwpool-internal-watchcall;primary=wc-p;replica=wc-r;check_interval=1h;breaker=off")
	db := sql.OpenDB(c)
	defer db.Close()
	if !c.watch {
		t.Fatal("the fake driver is not watched: the test would not reach the workers")
	}
	read := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var s string
		return db.QueryRowContext(ctx, "SELECT 1").Scan(&s)
	}
	if err := read(time.Second); err != nil {
		t.Fatal(err)
	}
	idle := func() int {
		c.workers.mu.Lock()
		defer c.workers.mu.Unlock()
		return len(c.workers.idle)
	}
	if idle() != 1 {
		t.Fatalf("%d idle workers after one read, want 1", idle())
	}
	r := watchCallFake.Node("wc-r")
	r.SetHang(true)
	start := time.Now()
	err := read(100 * time.Millisecond)
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a read stuck in the driver returned after %s, want about its 100ms deadline", took)
	}
	if err == nil {
		t.Fatal("a read on a hung replica without the breaker succeeded")
	}
	if idle() != 0 {
		t.Fatalf("%d idle workers while the only one is stuck in the driver, want 0", idle())
	}
	dialsBefore := c.topo().nodes[1].dials.Load()
	r.SetHang(false)
	if !until(func() bool { return idle() == 1 }) {
		t.Fatalf("the worker did not come back once the driver let go: %d idle", idle())
	}
	if err := read(time.Second); err != nil {
		t.Fatal(err)
	}
	if got := c.topo().nodes[1].dials.Load(); got != dialsBefore+1 {
		t.Errorf("dials to the replica %d, want %d: the abandoned call's connection must be destroyed, not reused", got, dialsBefore+1)
	}
}

// TestWatchedCallTakenAsCloseBegins: a worker taken from the idle ones just
// before Close answers the call handed to it, rather than leaving for
// Close and its caller waiting.
func TestWatchedCallTakenAsCloseBegins(t *testing.T) {
	c := connectorFor(t, "driver=rwpool-bench-nop;primary=p;check_interval=1h")
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	n := c.topo().nodes[0]
	pc, err := n.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.callWatched(ctx, pc, "SELECT 1", nil, true); err != nil {
		t.Fatal(err) // leaves one worker idle
	}
	w := c.workers.take()
	if w == nil {
		t.Fatal("no idle worker after a watched call")
	}
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	<-c.stop // the worker now sees the stop, finds itself taken, and waits
	wc := &w.call
	wc.ctx, wc.pc, wc.query, wc.exec = ctx, pc, "SELECT 1", true
	wc.state.Store(callRunning)
	w.in <- wc
	select {
	case <-wc.done:
	case <-time.After(5 * time.Second):
		t.Fatal("a worker taken as Close began never answered its call")
	}
	if wc.err != nil {
		t.Errorf("the call failed: %v", wc.err)
	}
	wc.reset()
	c.workers.giveBack(w) // refused (closing): the worker is told to leave
	pc.Destroy()
	<-closed
}

// connectorFor returns a Connector for the rwpool DSN s, as for the real
// driver it names (watched unless it honours contexts); the caller closes
// it, or the *sql.DB opened over it.
func connectorFor(t *testing.T, s string) *Connector {
	t.Helper()
	cfg, err := dsn.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
