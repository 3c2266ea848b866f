package rwpool_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/discovery"
	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// testSources are the sources of the "rwpooltest" discovery scheme, by
// target: each test registers its own under its name.
var testSources sync.Map // string -> *testSource

func init() {
	discovery.Register("rwpooltest", func(target string) (discovery.Source, error) {
		s, ok := testSources.Load(target)
		if !ok {
			return nil, errors.New("no such test source")
		}
		return s.(*testSource), nil
	})
}

// testSource answers what a test sets: members, an error, or nothing.
type testSource struct {
	mu      sync.Mutex
	members []discovery.Member
	err     error
	asked   atomic.Int64
}

func (s *testSource) Members(context.Context) ([]discovery.Member, error) {
	s.asked.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.members), s.err
}

func (s *testSource) set(err error, ms ...discovery.Member) {
	s.mu.Lock()
	s.members, s.err = ms, err
	s.mu.Unlock()
}

// waitRounds waits until the source was asked k more times: every round
// after a change has applied it.
func (s *testSource) waitRounds(t *testing.T, k int64) {
	t.Helper()
	target := s.asked.Load() + k
	deadline := time.Now().Add(5 * time.Second)
	for s.asked.Load() < target {
		if time.Now().After(deadline) {
			t.Fatalf("the source was not asked %d more times in 5s", k)
		}
		time.Sleep(time.Millisecond)
	}
}

func member(i int) discovery.Member {
	return discovery.Member{Name: fmt.Sprintf("m%d", i), Host: "127.0.0.1", Port: fmt.Sprint(6000 + i)}
}

// TestDiscoveryUnderLoad adds and removes replicas through a discovery
// source while 8 goroutines read, and checks that no read fails, that a
// member joins only once it answers a probe, that a removed member gets no
// new statement but finishes the one it runs, and that a source that
// fails, answers nothing or answers garbage keeps the replicas it found.
func TestDiscoveryUnderLoad(t *testing.T) {
	src := &testSource{}
	testSources.Store(t.Name(), src)
	defer testSources.Delete(t.Name())
	primary := t.Name() + "-p password=" + sentinelPW
	ctl.Fresh(primary)
	nodes := map[int]*fakedriver.Node{}
	for i := 1; i <= 3; i++ {
		// The DSN the member is dialled with: the primary's, pointed at
		// the member's address.
		nodes[i] = ctl.Fresh(fmt.Sprintf("%s host=127.0.0.1 port=%d", primary, 6000+i))
	}
	src.set(nil, member(1), member(2))
	var mu sync.Mutex
	var events []rwpool.Event
	cfg, err := dsn.Parse("driver=rwpool-test-ctl;check_interval=50ms;probe_timeout=100ms;primary='" + primary + "';" +
		"discover='rwpooltest:" + t.Name() + "' every=10ms name=t")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rwpool.NewConnector(cfg, rwpool.WithEventHandler(func(e rwpool.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
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
	stats := func() rwpool.Snapshot { return c.Stats() }
	discovered := func() (names []string) {
		for _, n := range stats().Nodes {
			if n.Source == "t" && !n.Draining {
				names = append(names, n.Name)
			}
		}
		return names
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("not within 5s: %s (nodes %v, discovery %+v)", what, discovered(), stats().Discovery)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("m1 and m2 joined", func() bool { return len(discovered()) == 2 })

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
		return seen[fmt.Sprintf("%s host=127.0.0.1 port=%d", primary, 6000+i)]
	}
	waitFor("reads on m1 and m2", func() bool { return served(1) > 10 && served(2) > 10 })

	// A member that does not answer stays out of the reads, pending.
	nodes[3].SetDown(true)
	src.set(nil, member(1), member(2), member(3))
	src.waitRounds(t, 3)
	if got := discovered(); len(got) != 2 {
		t.Fatalf("a member whose probe fails joined: %v", got)
	}
	if p := stats().Discovery[0].Pending; p["m3"] == "" {
		t.Errorf("Pending = %v, want m3 with its cause", p)
	}
	if served(3) != 0 {
		t.Errorf("m3 served %d reads before it answered a probe", served(3))
	}
	nodes[3].SetDown(false)
	waitFor("m3 joined and read from", func() bool { return len(discovered()) == 3 && served(3) > 10 })
	if n, _ := kinds(rwpool.NodeAdded, "t/m3"); n != 1 {
		t.Errorf("%d NodeAdded events for t/m3, want 1", n)
	}

	// Remove m1 while a read-only transaction runs on it: the
	// transaction finishes there, no new statement goes there.
	var tx *sql.Tx
	for tx == nil {
		x, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var where string
		if err := x.QueryRow("SELECT node").Scan(&where); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(where, "port=6001") {
			tx = x
		} else {
			x.Rollback()
		}
	}
	src.set(nil, member(2), member(3))
	waitFor("m1 draining", func() bool {
		for _, n := range stats().Nodes {
			if n.Name == "t/m1" {
				return n.Draining && n.InUse == 1
			}
		}
		return false
	})
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
	waitFor("m1 gone from the stats once drained", func() bool {
		return !slices.ContainsFunc(stats().Nodes, func(n rwpool.NodeStats) bool { return n.Name == "t/m1" })
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
		if got := discovered(); len(got) != 2 {
			t.Fatalf("after a bad answer (%v, %v) the replicas are %v, want t/m2 and t/m3", bad.err, bad.ms, got)
		}
	}
	d := stats().Discovery[0]
	if d.Failures < 9 || d.LastError == "" || d.Members != 2 {
		t.Errorf("discovery stats after bad answers: %+v", d)
	}
	src.set(nil, member(2), member(3))
	waitFor("the source answers again", func() bool { return stats().Discovery[0].LastError == "" })
	if n, causes := kinds(rwpool.DiscoveryFailed, "t"); n != 2 || causes != 1 {
		t.Errorf("DiscoveryFailed: %d events, %d with a cause; want 2 (failed, answers again), 1", n, causes)
	}
	r2, r3 := served(2), served(3)
	waitFor("reads on m2 and m3", func() bool { return served(2) > r2+10 && served(3) > r3+10 })

	cancel()
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d of %d reads failed; first: %v", failed.Load(), reads.Load(), *firstErr.Load())
	}
	t.Logf("%d reads, 0 failed; m1 served %d, m2 %d, m3 %d", reads.Load(), served(1), served(2), served(3))
}
