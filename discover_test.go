package rwpool_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/discovery"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// TestDiscoveryUnderLoad adds and removes replicas through a discovery
// source while 8 goroutines read, and checks that no read fails, that a
// member joins only once it answers a probe, that a removed member gets no
// new statement but finishes the one it runs, and that a source that
// fails, answers nothing or answers garbage keeps the replicas it found.
func TestDiscoveryUnderLoad(t *testing.T) {
	src := newTestSource(t, t.Name())
	primary := t.Name() + "-p password=" + sentinelPW
	ctl.Fresh(primary)
	nodes := map[int]*fakedriver.Node{}
	for i := 1; i <= 3; i++ {
		// The DSN the member is dialled with: the primary's, pointed at
		// the member's address.
		nodes[i] = ctl.Fresh(memberDSN(primary, 6000+i))
	}
	src.set(nil, mem("m1", 6001), mem("m2", 6002))
	var mu sync.Mutex
	var events []rwpool.Event
	rc := openRig(t, "driver=rwpool-test-ctl;check_interval=50ms;probe_timeout=100ms;primary='"+primary+"';"+
		"discover='rwpooltest:"+t.Name()+"' every=10ms name=t", rwpool.WithEventHandler(func(e rwpool.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}))
	db := rc.db
	kinds := func(kind rwpool.EventKind, node string) (n int, causes int) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range events {
			if e.Kind == kind && e.Node == node {
				n++
				if e.Cause != nil {
					causes++
				}
			}
		}
		return n, causes
	}
	stats := func() rwpool.Snapshot { return rc.c.Stats() }
	rc.waitFor("m1 and m2 joined", func() bool { return len(rc.discovered()) == 2 })

	// Load: 8 readers; every read must succeed.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var reads, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	var seenMu sync.Mutex
	seen := map[string]int{} // reads by the DSN of the node that served them
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				var where string
				err := db.QueryRowContext(ctx, "SELECT node").Scan(&where)
				if ctx.Err() != nil {
					return
				}
				reads.Add(1)
				if err == nil {
					seenMu.Lock()
					seen[where]++
					seenMu.Unlock()
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	served := func(i int) int {
		seenMu.Lock()
		defer seenMu.Unlock()
		return seen[memberDSN(primary, 6000+i)]
	}
	rc.waitFor("reads on m1 and m2", func() bool { return served(1) > 10 && served(2) > 10 })

	// A member that does not answer stays out of the reads, pending.
	nodes[3].SetDown(true)
	src.set(nil, mem("m1", 6001), mem("m2", 6002), mem("m3", 6003))
	src.waitRounds(t, 3)
	if got := rc.discovered(); len(got) != 2 {
		t.Fatalf("a member whose probe fails joined: %v", got)
	}
	if p := stats().Discovery[0].Pending; p["m3"] == "" {
		t.Errorf("Pending = %v, want m3 with its cause", p)
	}
	if served(3) != 0 {
		t.Errorf("m3 served %d reads before it answered a probe", served(3))
	}
	nodes[3].SetDown(false)
	rc.waitFor("m3 joined and read from", func() bool { return len(rc.discovered()) == 3 && served(3) > 10 })
	if n, _ := kinds(rwpool.NodeAdded, "t/m3"); n != 1 {
		t.Errorf("%d NodeAdded events for t/m3, want 1", n)
	}

	// Remove m1 while a read-only transaction runs on it: the
	// transaction finishes there, no new statement goes there.
	tx := rc.txOn(ctx, "port=6001")
	src.set(nil, mem("m2", 6002), mem("m3", 6003))
	rc.waitFor("m1 draining", func() bool {
		n, ok := rc.node("t/m1")
		return ok && n.Draining && n.InUse == 1
	})
	// A read that picked m1 just before it left may still take its
	// connection (CI: 1 read after "m1 draining" was seen): in flight, it
	// finishes there. What must not come are new ones, over the rounds
	// after that one.
	src.waitRounds(t, 1)
	before := served(1)
	src.waitRounds(t, 3)
	var where string
	if err := tx.QueryRow("SELECT node").Scan(&where); err != nil || !strings.HasSuffix(where, "port=6001") {
		t.Fatalf("the draining node's transaction: %q, %v", where, err)
	}
	if got := served(1) - before; got != 0 {
		t.Errorf("the draining node served %d reads outside its transaction, want 0", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	rc.waitFor("m1 gone from the stats once drained", func() bool {
		_, ok := rc.node("t/m1")
		return !ok
	})
	if n, causes := kinds(rwpool.NodeRemoved, "t/m1"); n != 1 || causes != 1 {
		t.Errorf("NodeRemoved for t/m1: %d events, %d with a cause; want 1, 1", n, causes)
	}
	if nodes[1].Open() != 0 {
		t.Errorf("m1 still has %d connections open after draining", nodes[1].Open())
	}

	// A source that fails, answers nothing or answers garbage keeps what
	// it found, and says so once.
	for _, bad := range []struct {
		err error
		ms  []discovery.Member
	}{
		{errors.New("connection refused"), nil},
		{nil, nil},
		{nil, []discovery.Member{{Name: "x"}, {Name: "y", Host: "h", Port: "port"}}},
	} {
		src.set(bad.err, bad.ms...)
		src.waitRounds(t, 3)
		if got := rc.discovered(); len(got) != 2 {
			t.Fatalf("after a bad answer (%v, %v) the replicas are %v, want t/m2 and t/m3", bad.err, bad.ms, got)
		}
	}
	d := stats().Discovery[0]
	if d.Failures < 9 || d.LastError == "" || d.Members != 2 {
		t.Errorf("discovery stats after bad answers: %+v", d)
	}
	src.set(nil, mem("m2", 6002), mem("m3", 6003))
	rc.waitFor("the source answers again", func() bool { return stats().Discovery[0].LastError == "" })
	if n, causes := kinds(rwpool.DiscoveryFailed, "t"); n != 2 || causes != 1 {
		t.Errorf("DiscoveryFailed: %d events, %d with a cause; want 2 (failed, answers again), 1", n, causes)
	}
	r2, r3 := served(2), served(3)
	rc.waitFor("reads on m2 and m3", func() bool { return served(2) > r2+10 && served(3) > r3+10 })

	cancel()
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d of %d reads failed; first: %v", failed.Load(), reads.Load(), *firstErr.Load())
	}
	t.Logf("%d reads, 0 failed; m1 served %d, m2 %d, m3 %d", reads.Load(), served(1), served(2), served(3))
}
