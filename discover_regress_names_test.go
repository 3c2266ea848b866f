package rwpool_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
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
	ctl.Fresh(memberDSN(primary, 7701))
	ctl.Fresh(memberDSN(primary, 7702))
	rc := openCtlRig(t, primary, "", mem("a", 7701), mem("b", 7702))
	rc.waitFor("a and b joined", func() bool { return len(rc.discovered()) == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tx := rc.txOn(ctx, "port=7701")
	defer tx.Rollback()
	rc.src.set(nil, mem("b", 7702))
	rc.waitFor("a draining", func() bool {
		for _, n := range rc.c.Stats().Nodes {
			if n.Name == "t/a" && n.Draining {
				return true
			}
		}
		return false
	})
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
	primary := t.Name() + "-p"
	ctl.Fresh(primary)
	x := ctl.Fresh(memberDSN(primary, 7801))
	// The replica answers slowly (a network away): hold its probes until
	// both sources have asked, as when both are asked at once.
	x.SetHang(true)
	defer x.SetHang(false)
	s1 := newTestSource(t, t.Name()+"/1", mem("x", 7801))
	s2 := newTestSource(t, t.Name()+"/2", mem("127.0.0.1:7801", 7801))
	var mu sync.Mutex
	var events []string
	rc := openRig(t, "driver=rwpool-test-ctl;check_interval=50ms;probe_timeout=2s;primary='"+primary+"';"+
		"discover='rwpooltest:"+t.Name()+"/1' every=10ms name=s1;"+
		"discover='rwpooltest:"+t.Name()+"/2' every=10ms name=s2", rwpool.WithEventHandler(func(e rwpool.Event) {
		if e.Kind == rwpool.NodeAdded || e.Kind == rwpool.NodeRemoved {
			mu.Lock()
			events = append(events, e.Kind.String()+" "+e.Node)
			mu.Unlock()
		}
	}))
	// Up to 5s, then on regardless: the events below judge.
	rc.poll(5*time.Second, func() bool { return x.Hung("") >= 2 })
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
