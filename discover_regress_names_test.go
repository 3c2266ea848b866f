package rwpool_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
)

// TestDiscoveryRejoinWhileDraining: a member that leaves while a
// transaction runs on it, and comes back before that transaction ends
// (a flapping DNS answer, a Patroni tag set and cleared), joins as a new
// node of the same name while the old one still drains: the Snapshot
// then holds two nodes named "t/a", which the exporters key their series
// by (node, role): Prometheus refuses a scrape with two identical label
// sets ("collected before with the same name and label values").
func TestDiscoveryRejoinWhileDraining(t *testing.T) {
	primary := t.Name() + "-p"
	ctl.Fresh(primary + " host=127.0.0.1 port=7701")
	ctl.Fresh(primary + " host=127.0.0.1 port=7702")
	rc := openReview(t, primary, "", mem("a", 7701), mem("b", 7702))
	if !rc.waitFor("a and b joined", 5*time.Second, func() bool { return len(rc.discovered()) == 2 }) {
		t.Fatal("a and b did not join")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var tx *sql.Tx
	for tx == nil && ctx.Err() == nil {
		x, err := rc.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var where string
		if err := x.QueryRow("SELECT node").Scan(&where); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(where, "port=7701") {
			tx = x
		} else {
			x.Rollback()
		}
	}
	defer tx.Rollback()
	rc.src.set(nil, mem("b", 7702))
	if !rc.waitFor("a draining", 5*time.Second, func() bool {
		for _, n := range rc.c.Stats().Nodes {
			if n.Name == "t/a" && n.Draining {
				return true
			}
		}
		return false
	}) {
		t.Fatal("a is not draining")
	}
	rc.src.set(nil, mem("a", 7701), mem("b", 7702))
	rc.src.waitRounds(t, 5)
	seen := map[string]int{}
	var rows []string
	for _, n := range rc.c.Stats().Nodes {
		seen[n.Name+"/"+n.Role]++
		rows = append(rows, fmt.Sprintf("%s(role %s, draining %v, in use %d)", n.Name, n.Role, n.Draining, n.InUse))
	}
	for k, v := range seen {
		if v > 1 {
			t.Errorf("the Snapshot holds %d nodes with the same name and role %q: %v", v, k, rows)
		}
	}
}

// TestDiscoveryTwoSourcesSameReplica: usable leaves out "a member of
// another source" (README: "An address that is already a node ... is not
// added twice"). But two sources asked at the same time (every discoverer
// starts at once) each read the topology before either has published its
// join: a replica both list (a Consul name and an SRV name for the same
// pods, say) joins twice. At the next round each source finds its member
// taken by the other's node, so its answer is empty of usable members
// without being "bad" (usable returns an empty set, no error), and each
// removes its own node: the replica, listed all along, leaves the reads,
// drains, and joins again, flapping.
func TestDiscoveryTwoSourcesSameReplica(t *testing.T) {
	s1, s2 := &testSource{}, &testSource{}
	testSources.Store(t.Name()+"/1", s1)
	testSources.Store(t.Name()+"/2", s2)
	defer testSources.Delete(t.Name() + "/1")
	defer testSources.Delete(t.Name() + "/2")
	primary := t.Name() + "-p"
	ctl.Fresh(primary)
	x := ctl.Fresh(primary + " host=127.0.0.1 port=7801")
	// The replica answers slowly (a network away): hold its probes until
	// both sources have asked, as when both are asked at once.
	x.SetHang(true)
	defer x.SetHang(false)
	s1.set(nil, mem("x", 7801))
	s2.set(nil, mem("127.0.0.1:7801", 7801))
	var mu sync.Mutex
	var events []string
	cfg, err := dsn.Parse("driver=rwpool-test-ctl;check_interval=50ms;probe_timeout=2s;primary='" + primary + "';" +
		"discover='rwpooltest:" + t.Name() + "/1' every=10ms name=s1;" +
		"discover='rwpooltest:" + t.Name() + "/2' every=10ms name=s2")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rwpool.NewConnector(cfg, rwpool.WithEventHandler(func(e rwpool.Event) {
		if e.Kind == rwpool.NodeAdded || e.Kind == rwpool.NodeRemoved {
			mu.Lock()
			events = append(events, e.Kind.String()+" "+e.Node)
			mu.Unlock()
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	deadline := time.Now().Add(5 * time.Second)
	for x.Hung("") < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	x.SetHang(false)
	s1.waitRounds(t, 10)
	s2.waitRounds(t, 10)
	mu.Lock()
	defer mu.Unlock()
	var added, removed int
	for _, e := range events {
		if strings.HasPrefix(e, rwpool.NodeAdded.String()) {
			added++
		} else {
			removed++
		}
	}
	if added != 1 || removed != 0 {
		t.Fatalf("two sources list the replica 127.0.0.1:7801 all along: %d NodeAdded, %d NodeRemoved, want 1 and 0: %v", added, removed, events)
	}
}
