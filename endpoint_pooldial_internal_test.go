package rwpool

import (
	"context"
	"database/sql/driver"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/breaker"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

var (
	reviewHold    atomic.Pointer[chan struct{}] // armed: the next identity query on "rv-a" waits on it
	reviewEntered = make(chan struct{}, 1)
)

var reviewFake = fakedriver.Register("rwpool-internal-pooldial-postgres", fakedriver.Options{
	BeforeAnswer: func(_ context.Context, dsn, q string) {
		if dsn != "rv-a" || !strings.Contains(q, "pg_postmaster_start_time") {
			return
		}
		if h := reviewHold.Swap(nil); h != nil {
			reviewEntered <- struct{}{}
			<-*h
		}
	}})

type reviewRig struct {
	n      *node
	moved  *atomic.Bool  // the endpoint rv-ep leads to rv-b (else rv-a)
	events *atomic.Int32 // EndpointMoved events
	check  func()        // one health check of the replica, by hand
}

func newReviewRig(t *testing.T) *reviewRig {
	for d, addr := range map[string]string{"rv-p": "10.0.0.1:5432", "rv-a": "10.0.0.2:5432", "rv-b": "10.0.0.3:5432"} {
		n := reviewFake.Fresh(d)
		n.SetIdentity(fakedriver.Identity{Addr: addr, Started: "2026-12-01 10:00:00+00"})
		n.SetStatus(replicaStatus)
	}
	reviewFake.Node("rv-p").SetStatus(primaryStatus)
	reviewFake.Fresh("rv-ep")
	rig := &reviewRig{moved: new(atomic.Bool), events: new(atomic.Int32)}
	reviewFake.SetEndpoint("rv-ep", func(int64) string {
		if rig.moved.Load() {
			return "rv-b"
		}
		return "rv-a"
	})
	cfg := dsn.NewConfig()
	cfg.Driver = "rwpool-internal-pooldial-postgres"
	cfg.Primary = dsn.Node{Name: "primary", DSN: "rv-p", Weight: 1, Role: dsn.RolePrimary}
	cfg.Replicas = []dsn.Node{{Name: "replica1", DSN: "rv-ep", Weight: 1, Role: dsn.RoleReplica}}
	cfg.CheckInterval = time.Hour
	c, err := NewConnector(cfg, WithEventHandler(func(e Event) {
		if e.Kind == EndpointMoved {
			rig.events.Add(1)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	rig.n = c.topo().replicas[0]
	var conn driver.Conn
	rig.check = func() {
		hc := breaker.Checker{Node: rig.n.health, Probe: func(fresh bool) (time.Duration, error) { return rig.n.probe(&conn, fresh) }}
		hc.Check()
	}
	t.Cleanup(func() {
		if conn != nil {
			conn.Close()
		}
		c.Close()
	})
	rig.check()
	if !rig.n.endpoint.single() {
		t.Fatal("the endpoint was not learnt as leading to one server")
	}
	return rig
}

// holdPoolDial starts a read's pool dial that reaches rv-a and waits in
// its identity query until the returned func is called; that func
// returns once the dial is over.
func (rig *reviewRig) holdPoolDial(t *testing.T) func() {
	hold := make(chan struct{})
	reviewHold.Store(&hold)
	got := make(chan error, 1)
	go func() {
		pc, err := rig.n.acquire(context.Background())
		if err == nil {
			pc.Release()
		}
		got <- err
	}()
	<-reviewEntered
	return func() {
		close(hold)
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	}
}

func (rig *reviewRig) wantOneServerAndOneMove(t *testing.T) {
	for range 2 * endpointCheckEvery {
		rig.check() // the checker's next probes: fresh dials reach rv-b
	}
	if rig.n.endpoint.balancing() || !rig.n.endpoint.single() {
		t.Errorf("an endpoint that leads to rv-b alone: balancing %v, single %v", rig.n.endpoint.balancing(), rig.n.endpoint.single())
	}
	if m := rig.events.Load(); m != 1 {
		t.Errorf("%d EndpointMoved events after the endpoint turned from rv-a to rv-b, want 1", m)
	}
}

// A pool dial reaches the old server A just before the endpoint turns to
// B; the checker finds and confirms the move (EndpointMoved, B learnt
// alone). The pool dial's A is recorded after that: a run of an unknown
// server, which the next probe's B (known) turns into known servers: the
// endpoint is learnt as balancing over A and B, for good.
func TestEndpointStalePoolDialAfterMove(t *testing.T) {
	rig := newReviewRig(t)
	release := rig.holdPoolDial(t)
	rig.moved.Store(true)
	for i := 0; i < endpointCheckEvery && rig.events.Load() == 0; i++ {
		rig.check()
	}
	if rig.events.Load() != 1 || !rig.n.endpoint.single() {
		t.Fatalf("the move was not confirmed: %d events", rig.events.Load())
	}
	release()
	rig.wantOneServerAndOneMove(t)
}

// Two reads' pool dials race the move: the first reached A just before the
// endpoint turned to B; the second reached B and is recorded first (a run
// of one unknown server). The first's A (known) then turns the run into
// known servers: balancing over A and B for good, and the move is never
// found, so the connections still on A are never retired.
func TestEndpointRacingPoolDials(t *testing.T) {
	rig := newReviewRig(t)
	release := rig.holdPoolDial(t)
	rig.moved.Store(true)
	pc, err := rig.n.acquire(context.Background()) // another read's dial: B
	if err != nil {
		t.Fatal(err)
	}
	pc.Release()
	release()
	rig.wantOneServerAndOneMove(t)
}
