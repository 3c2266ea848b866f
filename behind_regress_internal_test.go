package rwpool

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/replication"
)

// behindRig opens a Connector of a primary and k replicas on endpointFake
// with follow_promotion and no background probe (check_interval 1 h).
func behindRig(t *testing.T, k int) *Connector {
	t.Helper()
	cfg := dsn.NewConfig()
	cfg.Driver = "rwpool-internal-endpoint-postgres"
	pre := "rv-" + t.Name()
	cfg.Primary = dsn.Node{Name: "primary", DSN: pre + "-p", Weight: 1, Role: dsn.RolePrimary}
	endpointFake.Fresh(pre + "-p").SetStatus(primaryStatus)
	for i := 1; i <= k; i++ {
		d := fmt.Sprintf("%s-r%d", pre, i)
		endpointFake.Fresh(d).SetStatus(replicaStatus)
		cfg.Replicas = append(cfg.Replicas, dsn.Node{Name: fmt.Sprintf("replica%d", i), DSN: d, Weight: 1, Role: dsn.RoleReplica})
	}
	cfg.CheckInterval = time.Hour
	cfg.FollowPromotion = true
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func reviewLSN(t *testing.T, lsn uint64) *replication.Position {
	t.Helper()
	p, err := replication.ParseLSN(fmt.Sprintf("%X/%X", lsn>>32, uint32(lsn)))
	if err != nil {
		t.Fatal(err)
	}
	return &p
}

// Two status reads finishing together (a nudge asks every node for a
// probe at once) run markBehind concurrently. When it ran outside
// follow.mu and stored ahead, then every node's flag, interleaved calls
// left one call's ahead with the other's flags. Here replica1 was ahead (0/1800) and
// replica12 has just read 0/2000 (its status read's markBehind races with
// another node's): every replica ends up marked behind, replica12 (the
// stored ahead, the most advanced) included, and until the next status
// read no replica serves: reads fall back to the unavailable primary, or
// fail with fallback=error.
func TestBehindMarkBehindConcurrentCalls(t *testing.T) {
	const k = 12
	c := behindRig(t, k)
	p, prev, adv := c.topo().nodes[0], c.topo().nodes[1], c.topo().nodes[k]
	p.health.Trip(errors.New("probe: connection refused"))
	lo, mid, hi := reviewLSN(t, 0x1000), reviewLSN(t, 0x1800), reviewLSN(t, 0x2000)
	for i := 0; i < 20000; i++ {
		for _, n := range c.topo().nodes[1:] {
			n.repl.pos.Store(lo)
		}
		prev.repl.pos.Store(mid)
		c.markBehind() // ahead: replica1
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // a status read of another node
			defer wg.Done()
			<-start
			c.markBehind()
		}()
		go func() { // replica12's status read: it got further
			defer wg.Done()
			<-start
			adv.repl.pos.Store(hi)
			c.markBehind()
		}()
		close(start)
		wg.Wait()
		// replica12 holds the most advanced position and is available:
		// it must serve.
		if !adv.isBehind() {
			continue
		}
		all := true
		for _, n := range c.topo().nodes[1:] {
			all = all && n.isBehind()
		}
		n, why, err := c.pickRead(false, nil, true, false)
		name := "<none>"
		if n != nil {
			name = n.cfg.Name
		}
		c.cfg.Fallback = dsn.FallbackError
		_, _, ferr := c.pickRead(false, nil, true, false)
		t.Fatalf("iteration %d: after two concurrent markBehind calls, replica12 (0/2000, the most advanced, available) is marked behind; every replica behind: %v; a plain read now goes to %s (%q, err %v, primary tripped: %v); with fallback=error: %v",
			i, all, name, why, err, p.health.Tripped(), ferr)
	}
}

func pickedName(c *Connector, primary bool) string {
	n, _, err := c.pickRead(primary, nil, true, false)
	if err != nil || n == nil {
		return "<none>"
	}
	return n.cfg.Name
}

// MySQL: a replica with an errant transaction (a local write, a GTID of
// its own server UUID) and one that has applied ten more of the primary's
// transactions are incomparable; node order picks the first as ahead, and
// the one holding every acknowledged write is marked behind: every read
// goes to the replica that lacks ten of them.
func TestBehindMarkBehindErrantGTID(t *testing.T) {
	c := behindRig(t, 2)
	p, r1, r2 := c.topo().nodes[0], c.topo().nodes[1], c.topo().nodes[2]
	const src, errant = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "4a2b7c10-71ca-11e1-9e33-c80aa9429562"
	pos := func(s string) *replication.Position {
		q, err := replication.ParseMySQLGTIDSet(s)
		if err != nil {
			t.Fatal(err)
		}
		return &q
	}
	r1.repl.pos.Store(pos(src + ":1-100," + errant + ":1"))
	r2.repl.pos.Store(pos(src + ":1-110"))
	p.health.Trip(errors.New("probe: connection refused"))
	c.markBehind()
	if r2.isBehind() {
		t.Errorf("replica2 (primary's 1-110) marked behind replica1 (primary's 1-100 + one errant local GTID): behind %v/%v; reads go to %s",
			r1.isBehind(), r2.isBehind(), pickedName(c, false))
	}
}

// MariaDB: a replica provisioned after a retired domain was deleted
// (FLUSH BINARY LOGS DELETE_DOMAIN_ID=(0)) has no domain 0 in
// gtid_slave_pos; an older replica keeps 0-1-500. On the live domain the
// new one is ten transactions ahead, yet, incomparable, it is the one
// marked behind (node order decides).
func TestBehindMarkBehindRetiredMariaDBDomain(t *testing.T) {
	c := behindRig(t, 2)
	p, r1, r2 := c.topo().nodes[0], c.topo().nodes[1], c.topo().nodes[2]
	pos := func(s string) *replication.Position {
		q, err := replication.ParseMariaDBGTID(s)
		if err != nil {
			t.Fatal(err)
		}
		return &q
	}
	r1.repl.pos.Store(pos("0-1-500,1-2-100"))
	r2.repl.pos.Store(pos("1-2-110"))
	p.health.Trip(errors.New("probe: connection refused"))
	c.markBehind()
	if r2.isBehind() {
		t.Errorf("replica2 (1-2-110) marked behind replica1 (0-1-500,1-2-100): behind %v/%v; reads go to %s",
			r1.isBehind(), r2.isBehind(), pickedName(c, false))
	}
}

// markBehind: "an unknown position takes no part". A replica whose
// position is unknown is not marked behind (it was, and served no read,
// before the marks were a snapshot of strict covers).
func TestBehindMarkBehindUnknownPosition(t *testing.T) {
	c := behindRig(t, 2)
	p, r1, r2 := c.topo().nodes[0], c.topo().nodes[1], c.topo().nodes[2]
	r1.repl.forget()
	r2.repl.pos.Store(reviewLSN(t, 0x2000))
	p.health.Trip(errors.New("probe: connection refused"))
	c.markBehind()
	if r1.isBehind() {
		t.Errorf("replica1, position unknown, is marked behind (it takes part after all)")
	}
}

// A hedge of a read running on the ahead replica (hedge.go: pickRead with
// tried = that replica) goes to a replica marked behind: the read has not
// failed there, it is only slow, and the hedge's stale answer wins.
func TestBehindHedgeOfAheadReadGoesBehind(t *testing.T) {
	c := behindRig(t, 2)
	p, r1, r2 := c.topo().nodes[0], c.topo().nodes[1], c.topo().nodes[2]
	r1.repl.pos.Store(reviewLSN(t, 0x1800))
	r2.repl.pos.Store(reviewLSN(t, 0x2000))
	p.health.Trip(errors.New("probe: connection refused"))
	c.markBehind()
	if !r1.isBehind() || r2.isBehind() {
		t.Fatalf("setup: behind %v/%v", r1.isBehind(), r2.isBehind())
	}
	n, _, err := c.pickRead(false, []*node{r2}, false, false) // as watcher.hedge does
	if err == nil && n == r1 {
		t.Errorf("a hedge of a read still running on replica2 (ahead) goes to replica1, marked behind")
	}
}
