package rwpool

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/fakedriver"
)

// The regression tests of the races between a read, its hedge and its
// node's trip (issue #21): whichever loses, the driver rows it got are
// closed and its connection used by no one else; the rows of a hedge that
// won are rescued like a plain read's.

// held's queries of "SELECT node" run heldHook, if a test set one, just
// before they answer (fakedriver.Options.BeforeAnswer): the test orders
// an answer against what rwpool does meanwhile.
var (
	heldHook atomic.Pointer[func(ctx context.Context, dsn string)]
	held     = fakedriver.Register("rwpool-test-held", fakedriver.Options{
		BeforeAnswer: func(ctx context.Context, dsn, query string) {
			if h := heldHook.Load(); h != nil && query == "SELECT node" {
				(*h)(ctx, dsn)
			}
		},
	})
)

// heldCluster is a primary and one replica of held, opened as for a
// driver that honours contexts (mysql, pgx: no goroutine per call, so that
// an answer held by hook reaches rwpool whatever became of the read
// meanwhile). A hedge of a read on the replica runs on the primary.
type heldCluster struct {
	db               *sql.DB
	c                *Connector
	primary, replica *fakedriver.Node
	p, r             string // their DSNs
}

func openHeld(t *testing.T, extra string, hook func(cl *heldCluster, ctx context.Context, dsn string)) *heldCluster {
	t.Helper()
	cl := &heldCluster{p: t.Name() + "-p", r: t.Name() + "-r1"}
	cl.primary, cl.replica = held.Fresh(cl.p), held.Fresh(cl.r)
	cl.db = openHonouring(t, "driver=rwpool-test-held;probe_timeout=100ms;check_interval=1h;primary="+cl.p+";replica="+cl.r+extra)
	cl.c = connectorOf(cl.db)
	h := func(ctx context.Context, dsn string) { hook(cl, ctx, dsn) }
	heldHook.Store(&h)
	t.Cleanup(func() {
		heldHook.Store(nil)
		cl.db.Close()
	})
	return cl
}

// closeAndCheck closes the cluster (which waits for its hedges' goroutines)
// and checks that every result set the driver answered was closed, and
// that no connection was used by two goroutines at once.
func (cl *heldCluster) closeAndCheck(t *testing.T) {
	t.Helper()
	cl.db.Close()
	for _, n := range []struct {
		name string
		n    *fakedriver.Node
	}{{"primary", cl.primary}, {"replica", cl.replica}} {
		if got := n.n.OpenRows(); got != 0 {
			t.Errorf("%s: %d driver rows left open", n.name, got)
		}
		if got := n.n.ConcurrentUse(); got != 0 {
			t.Errorf("%s: %d calls on a connection already in use", n.name, got)
		}
	}
}

// until polls cond every millisecond for up to 5 s, and reports whether it
// came true.
func until(cond func() bool) bool { return within(5*time.Second, cond) }

// within polls cond every millisecond for up to d, and reports whether it
// came true.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// A hedge that wins just after the read's own call returned rows: the
// read lost, and the rows it got are closed (they were left open, the
// connection under them destroyed).
func TestHedgeWinClosesReadRows(t *testing.T) {
	cl := openHeld(t, ";hedge_after=10ms;hedge_budget=100%", func(cl *heldCluster, _ context.Context, dsn string) {
		if dsn == cl.r {
			// The read's answer comes in as its hedge wins.
			if !until(func() bool { return cl.c.topo().replicas[0].hedgeWins.Load() > 0 }) {
				t.Error("the read's hedge did not win")
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var r Route
	var node string
	if err := cl.db.QueryRowContext(WithRoute(ctx, &r), "SELECT node").Scan(&node); err != nil {
		t.Fatal(err)
	}
	if node != cl.p || r.Reason != reasonHedged {
		t.Fatalf("answered by %s (%+v), want the hedge on the primary", node, r)
	}
	cl.closeAndCheck(t)
}

// A hedge that answers just after the read did: the hedge lost, and the
// rows it got are closed (they were left open).
func TestHedgeLossClosesHedgeRows(t *testing.T) {
	started, answered := make(chan struct{}), make(chan struct{})
	cl := openHeld(t, ";hedge_after=10ms;hedge_budget=100%", func(cl *heldCluster, _ context.Context, dsn string) {
		switch dsn {
		case cl.r: // the read answers once its hedge runs
			<-started
		case cl.p: // the hedge answers once the read did
			close(started)
			<-answered
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var r Route
	var node string
	err := cl.db.QueryRowContext(WithRoute(ctx, &r), "SELECT node").Scan(&node)
	close(answered)
	if err != nil {
		t.Fatal(err)
	}
	if node != cl.r || r.Reason == reasonHedged {
		t.Fatalf("answered by %s (%+v), want the read on the replica", node, r)
	}
	cl.closeAndCheck(t)
}

// A read whose node trips just as its call returns rows is replayed
// elsewhere, and the rows it got are closed (they were left open).
func TestRescuedReadClosesItsRows(t *testing.T) {
	cl := openHeld(t, "", func(cl *heldCluster, ctx context.Context, dsn string) {
		if dsn == cl.r {
			cl.c.topo().replicas[0].health.Trip(io.ErrUnexpectedEOF)
			select { // the read is rescued before its answer comes in
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Error("the read was not rescued")
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var node string
	if err := cl.db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
		t.Fatal(err)
	}
	if node != cl.p {
		t.Fatalf("answered by %s, want the replay on the primary", node)
	}
	cl.closeAndCheck(t)
}

// Rows handed over whose node then trips are closed with their
// connection (their driver rows were left open).
func TestRescuedRowsClosed(t *testing.T) {
	cl := openHeld(t, "", func(*heldCluster, context.Context, string) {})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dc, err := cl.c.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vc := dc.(*conn)
	rs, err := vc.QueryContext(ctx, "SELECT node", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rs.(*rows)
	if r.rc == nil || r.n != cl.c.topo().replicas[0] {
		t.Fatalf("rows on %v, watched: %v; want a watched read on the replica", r.n, r.rc != nil)
	}
	cl.c.topo().replicas[0].health.Trip(io.ErrUnexpectedEOF)
	if !until(r.rc.rescued) {
		t.Fatal("the read was not rescued")
	}
	r.Close()
	vc.Close()
	cl.closeAndCheck(t)
}

// The rows of a hedge that won are rescued like a plain read's: when the
// hedge's node hangs and trips while they are read, reading them fails
// fast with ErrUnavailable (it waited for the caller's deadline).
func TestHedgeRowsRescued(t *testing.T) {
	p, r1 := t.Name()+"-p", t.Name()+"-r1"
	db := openHonouring(t, "driver=rwpool-test-honour;probe_timeout=100ms;check_interval=1h;hedge_after=10ms;hedge_budget=100%;primary="+p+";replica="+r1)
	c := connectorOf(db)
	t.Cleanup(func() {
		honour.setHang(p, false)
		honour.setHang(r1, false)
		db.Close()
	})
	honour.setHang(r1, true)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var route Route
	rows, err := db.QueryContext(WithRoute(ctx, &route), "SELECT node")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if route.Reason != reasonHedged || !rows.Next() {
		t.Fatalf("route %+v, first row: %v; want a hedge's rows", route, rows.Err())
	}
	honour.setHang(p, true)
	c.primaryNode().health.Trip(io.ErrUnexpectedEOF)
	start := time.Now()
	for rows.Next() {
	}
	took := time.Since(start)
	t.Logf("rows ended after %s: %v", took, rows.Err())
	if !errors.Is(rows.Err(), ErrUnavailable) || took > time.Second {
		t.Fatalf("a hedge's rows on a node that tripped: %v after %s, want ErrUnavailable at once", rows.Err(), took)
	}
}

// A hedge whose node trips while it runs is cancelled at once, as a plain
// read would be, instead of holding its connection until its read ends
// (here, at the earliest when the read's own hung node is found out, about
// twice probe_timeout after it started).
func TestHedgeRescuedWhileRunning(t *testing.T) {
	p, r1 := t.Name()+"-p", t.Name()+"-r1"
	db := openHonouring(t, "driver=rwpool-test-honour;probe_timeout=2s;check_interval=1h;hedge_after=10ms;hedge_budget=100%;primary="+p+";replica="+r1)
	c := connectorOf(db)
	t.Cleanup(func() {
		honour.setHang(p, false)
		honour.setHang(r1, false)
		db.Close()
	})
	honour.setHang(r1, true)
	honour.setHang(p, true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var node string
		done <- db.QueryRowContext(ctx, "SELECT node").Scan(&node)
	}()
	prim := c.primaryNode()
	if !until(func() bool { return c.topo().replicas[0].hedges.Load() > 0 && prim.pool.Stat().InUse == 1 }) {
		t.Fatal("no hedge in flight on the primary")
	}
	prim.health.Trip(io.ErrUnexpectedEOF)
	start := time.Now()
	if !within(time.Second, func() bool { return prim.pool.Stat().InUse == 0 }) {
		t.Fatal("the hedge on the tripped primary still runs 1s after it tripped")
	}
	t.Logf("hedge ended %s after its node tripped", time.Since(start))
	honour.setHang(r1, false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A read rescued while its hedge runs cancels the hedge before it is
// replayed, on the inline path too (TestRescueStopsHedge is the watched
// one's).
func TestRescueCancelsHedgeInline(t *testing.T) {
	var hedgeCtx atomic.Pointer[context.Context]
	started := make(chan struct{})
	cl := openHeld(t, ";hedge_after=10ms;hedge_budget=100%", func(cl *heldCluster, ctx context.Context, dsn string) {
		switch {
		case dsn == cl.p && hedgeCtx.CompareAndSwap(nil, &ctx): // the hedge: answers when cancelled
			close(started)
			<-ctx.Done()
		case dsn == cl.r: // the read: its node trips once the hedge runs
			<-started
			cl.c.topo().replicas[0].health.Trip(io.ErrUnexpectedEOF)
			<-ctx.Done()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var r Route
	var node string
	if err := cl.db.QueryRowContext(WithRoute(ctx, &r), "SELECT node").Scan(&node); err != nil {
		t.Fatal(err)
	}
	if node != cl.p || r.Reason == reasonHedged {
		t.Fatalf("answered by %s (%+v), want the replay on the primary", node, r)
	}
	if h := hedgeCtx.Load(); h == nil || (*h).Err() == nil {
		t.Fatal("the hedge still runs after its read was rescued and replayed")
	}
	cl.closeAndCheck(t)
}

// Stress of hedges and rescues, on the watched path (lib/pq) and the
// inline one (mysql, pgx): readers with short deadlines while replicas
// hang and recover. Whatever won or lost, every driver rows opened is
// closed, and no connection is used by two goroutines at once.
func TestHedgeStressClosesRows(t *testing.T) {
	for _, inline := range []bool{false, true} {
		name := "watched"
		if inline {
			name = "inline"
		}
		t.Run(name, func(t *testing.T) {
			dsns := []string{t.Name() + "-p", t.Name() + "-r1", t.Name() + "-r2"}
			nodes := make([]*fakedriver.Node, len(dsns))
			for i, d := range dsns {
				nodes[i] = held.Fresh(d)
			}
			s := "driver=rwpool-test-held;probe_timeout=50ms;check_interval=50ms;hedge_after=2ms;hedge_budget=100%;primary=" + dsns[0] + ";replica=" + dsns[1] + ";replica=" + dsns[2]
			var db *sql.DB
			if inline {
				db = openHonouring(t, s)
			} else {
				var err error
				if db, err = sql.Open("rwpool", s); err != nil {
					t.Fatal(err)
				}
			}
			defer db.Close()
			stop := make(chan struct{})
			done := make(chan struct{})
			const readers = 6
			for g := range readers {
				go func() {
					defer func() { done <- struct{}{} }()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(10+(g*7+i)%60)*time.Millisecond)
						if rows, err := db.QueryContext(ctx, "SELECT node"); err == nil {
							for rows.Next() {
							}
							rows.Close()
						}
						cancel()
					}
				}()
			}
			for i := range 24 { // about 0.7 s of hangs coming and going
				nodes[1+i%2].SetHang(i%3 != 2)
				time.Sleep(30 * time.Millisecond) // pacing, not synchronisation
			}
			for _, n := range nodes {
				n.SetHang(false)
			}
			close(stop)
			for range readers {
				<-done
			}
			db.Close() // waits for the hedges' and watched calls' goroutines
			for i, n := range nodes {
				if got := n.OpenRows(); got != 0 {
					t.Errorf("%s: %d driver rows left open", dsns[i], got)
				}
				if got := n.ConcurrentUse(); got != 0 {
					t.Errorf("%s: %d calls on a connection already in use", dsns[i], got)
				}
			}
		})
	}
}

// A read whose hedge the budget refused asks again a slot later, and is
// hedged once reads issued meanwhile make room: it waited for its node's
// trip, or its deadline, before (a CI run of TestFaultHangReplicaHedged
// had a read of 543 ms on a hung replica, its hedge refused in a burst).
// It is counted refused once, however often it asks.
func TestRefusedHedgeAsksAgain(t *testing.T) {
	cl := openHeld(t, ";hedge_after=10ms;hedge_budget=10%", func(cl *heldCluster, ctx context.Context, dsn string) {
		if dsn == cl.r {
			<-ctx.Done() // the replica hangs, honouring the context
		}
	})
	r1 := cl.c.topo().replicas[0]
	go func() {
		// The first read alone may not be hedged at 10 %; twenty more
		// reads issued meanwhile allow two hedges.
		if !until(func() bool { return r1.hedgesRefused.Load() > 0 }) {
			return
		}
		for range 20 {
			cl.c.hedges.read(slotNow())
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	var node string
	if err := cl.db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
		t.Fatalf("read failed after %s: %v", time.Since(start), err)
	}
	if took := time.Since(start); node != cl.p || took > 2*time.Second {
		t.Fatalf("answered by %s after %s, want the hedge on the primary, within a few slots", node, took)
	}
	if h, ref := r1.hedges.Load(), r1.hedgesRefused.Load(); h != 1 || ref != 1 {
		t.Fatalf("replica1: %d hedges, %d refused; want 1, 1 (a read is counted refused once)", h, ref)
	}
	cl.closeAndCheck(t)
}
