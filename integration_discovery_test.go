package rwpool_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	_ "github.com/rwpool/rwpool/discovery/patroni" // registers "patroni:"
	"github.com/rwpool/rwpool/internal/dnsfake"
	"github.com/rwpool/rwpool/internal/testcluster"
)

// Issue 23's replicas found at run time, on the real clusters: a DNS
// server of the test's own (a Kubernetes headless service or Consul's
// agent would answer the same SRV records) and Patroni's REST API. Under 8
// readers, replicas join and leave; no read may fail, and a replica that
// left serves no new read.

// discoveryLoad is 8 readers asking which server answers, counting the
// reads by server port.
type discoveryLoad struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	ports  map[string]int
	reads  atomic.Int64
	failed atomic.Int64
	first  atomic.Pointer[string]
}

func startDiscoveryLoad(db *sql.DB, portQuery string) *discoveryLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &discoveryLoad{cancel: cancel, ports: map[string]int{}}
	for range 8 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for ctx.Err() == nil {
				rctx, done := context.WithTimeout(ctx, 10*time.Second)
				var port string
				err := db.QueryRowContext(rctx, portQuery).Scan(&port)
				done()
				if ctx.Err() != nil {
					return
				}
				l.reads.Add(1)
				if err != nil {
					l.failed.Add(1)
					msg := err.Error()
					l.first.CompareAndSwap(nil, &msg)
					continue
				}
				l.mu.Lock()
				l.ports[port]++
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *discoveryLoad) on(port string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ports[port]
}

// stop ends the load and fails the test if a read failed.
func (l *discoveryLoad) stop(t *testing.T) {
	t.Helper()
	l.cancel()
	l.wg.Wait()
	if n := l.failed.Load(); n != 0 {
		t.Errorf("%d of %d reads failed; first: %s", n, l.reads.Load(), *l.first.Load())
	}
}

// waitUntil polls cond every 10 ms for up to d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond) // a poll with a deadline
	}
}

// discoveredNodes returns the names of the nodes a source found that are
// not draining, and whether any node is draining.
func discoveredNodes(t *testing.T, db *sql.DB) (names []string, draining bool) {
	s, err := rwpool.Stats(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range s.Nodes {
		switch {
		case n.Draining:
			draining = true
		case n.Source != "":
			names = append(names, n.Name)
		}
	}
	slices.Sort(names)
	return names, draining
}

// TestIntegrationDiscoveryDNS: replicas listed by SRV records join, leave
// and survive a failing DNS server under load.
func TestIntegrationDiscoveryDNS(t *testing.T) {
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		dns, err := dnsfake.Start()
		if err != nil {
			t.Fatal(err)
		}
		defer dns.Close()
		const name = "_db._tcp.replicas.test"
		dns.SetA("lo.test", "127.0.0.1")
		srv := func(addrs ...string) []dnsfake.SRV {
			var out []dnsfake.SRV
			for _, a := range addrs {
				p, _ := strconv.Atoi(testcluster.Port(a))
				out = append(out, dnsfake.SRV{Target: "lo.test", Port: uint16(p)})
			}
			return out
		}
		r1, r2 := cl.Replicas[0], cl.Replicas[1]
		// The primary is listed too, as a service over every pod would
		// list it: it must not become a replica of its own.
		dns.SetSRV(name, srv(r1, cl.Primary)...)
		db, err := sql.Open("rwpool", cl.DSNOver(cl.Primary, nil,
			"check_interval=500ms;discover='srv://"+dns.Addr()+"/"+name+"' every=100ms name=k8s"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		node := func(addr string) string { return "k8s/" + addr }
		has := func(want ...string) func() bool {
			return func() bool {
				got, draining := discoveredNodes(t, db)
				return !draining && slices.Equal(got, want)
			}
		}
		waitUntil(t, 10*time.Second, "r1 joins alone", has(node(r1)))

		l := startDiscoveryLoad(db, cl.PortQuery)
		defer l.cancel()
		waitUntil(t, 10*time.Second, "reads on r1", func() bool { return l.on(portOf(r1)) > 20 })

		dns.SetSRV(name, srv(r1, r2, cl.Primary)...)
		waitUntil(t, 10*time.Second, "r2 joins", has(node(r1), node(r2)))
		waitUntil(t, 10*time.Second, "reads on r2", func() bool { return l.on(portOf(r2)) > 20 })

		dns.SetSRV(name, srv(r2)...)
		waitUntil(t, 10*time.Second, "r1 leaves and drains", has(node(r2)))
		left := l.on(portOf(r1))
		reads := l.reads.Load()
		waitUntil(t, 10*time.Second, "200 more reads", func() bool { return l.reads.Load() > reads+200 })
		if got := l.on(portOf(r1)); got != left {
			t.Errorf("r1 served %d reads after it drained", got-left)
		}

		// A DNS server that fails keeps the replicas found last.
		dns.SetFail(true)
		waitUntil(t, 10*time.Second, "the failure shows", func() bool {
			s, _ := rwpool.Stats(db)
			return s.Discovery[0].Failures >= 5
		})
		if got, _ := discoveredNodes(t, db); !slices.Equal(got, []string{node(r2)}) {
			t.Errorf("after DNS failures the replicas are %v, want r2", got)
		}
		dns.SetFail(false)
		dns.SetSRV(name, srv(r1, r2)...)
		waitUntil(t, 10*time.Second, "r1 joins again", has(node(r1), node(r2)))
		n1 := l.on(portOf(r1))
		waitUntil(t, 10*time.Second, "reads on r1 again", func() bool { return l.on(portOf(r1)) > n1+20 })
		l.stop(t)
		if p := l.on(portOf(cl.Primary)); p != 0 {
			t.Errorf("the primary served %d reads", p)
		}
		s, _ := rwpool.Stats(db)
		t.Logf("%d reads, %d failed; by port %v; discovery %+v", l.reads.Load(), l.failed.Load(), l.ports, s.Discovery[0])
	})
}

// TestPatroniDiscovery: the replicas of Patroni's /cluster join; one
// tagged noloadbalance leaves under load and joins again when untagged.
func TestPatroniDiscovery(t *testing.T) {
	pc := testcluster.PatroniCluster(t)
	mustPatroni(t, "wait-members")
	leader := "127.0.0.1:" + strings.TrimSpace(mustPatroni(t, "leader"))
	b := pc.Backend(leader)
	var urls []string
	for _, r := range pc.REST {
		urls = append(urls, "http://"+r)
	}
	db, err := sql.Open("rwpool", b.DSNOver(leader, nil,
		"check_interval=500ms;discover='patroni:"+strings.Join(urls, ",")+"' every=200ms"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	members := map[string]string{} // replica address -> its node name
	for i, addr := range pc.Nodes {
		members[addr] = fmt.Sprintf("patroni/pg%d", i) // scripts/patroni.sh names the members so
	}
	waitUntil(t, 15*time.Second, "both replicas join", func() bool {
		got, _ := discoveredNodes(t, db)
		return len(got) == 2
	})
	r1, r2 := b.Replicas[0], b.Replicas[1]
	if got, _ := discoveredNodes(t, db); !slices.Equal(got, []string{min(members[r1], members[r2]), max(members[r1], members[r2])}) {
		t.Fatalf("discovered %v, want %s and %s", got, members[r1], members[r2])
	}
	l := startDiscoveryLoad(db, b.PortQuery)
	defer l.cancel()
	waitUntil(t, 10*time.Second, "reads on both replicas", func() bool {
		return l.on(testcluster.Port(r1)) > 20 && l.on(testcluster.Port(r2)) > 20
	})

	t.Cleanup(func() { patroniScript("tag-node", testcluster.Port(r1), "off") })
	mustPatroni(t, "tag-node", testcluster.Port(r1), "on")
	waitUntil(t, 10*time.Second, "the tagged replica leaves and drains", func() bool {
		got, draining := discoveredNodes(t, db)
		return !draining && slices.Equal(got, []string{members[r2]})
	})
	left, reads := l.on(testcluster.Port(r1)), l.reads.Load()
	waitUntil(t, 10*time.Second, "200 more reads", func() bool { return l.reads.Load() > reads+200 })
	if got := l.on(testcluster.Port(r1)); got != left {
		t.Errorf("the tagged replica served %d reads after it drained", got-left)
	}

	mustPatroni(t, "tag-node", testcluster.Port(r1), "off")
	waitUntil(t, 10*time.Second, "the untagged replica joins again", func() bool {
		got, _ := discoveredNodes(t, db)
		return len(got) == 2
	})
	n1 := l.on(testcluster.Port(r1))
	waitUntil(t, 10*time.Second, "reads on it again", func() bool { return l.on(testcluster.Port(r1)) > n1+20 })
	l.stop(t)
	if p := l.on(testcluster.Port(leader)); p != 0 {
		t.Errorf("the leader served %d reads", p)
	}
	t.Logf("%d reads, %d failed; by port %v", l.reads.Load(), l.failed.Load(), l.ports)
}
