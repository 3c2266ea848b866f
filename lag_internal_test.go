package rwpool

import (
	"errors"
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/fakedriver"
	"github.com/rwpool/rwpool/internal/replication"
)

// These tests drive the health state by hand and never run a statement:
// the fake driver's nodes are never dialled.
func init() { fakedriver.Register("rwpool-internal-fake", fakedriver.Options{}) }

func newTestConnector(t *testing.T, maxLag time.Duration) (*Connector, *[]Event) {
	t.Helper()
	cfg := dsn.NewConfig()
	cfg.Driver = "rwpool-internal-fake"
	cfg.Primary = dsn.Node{Name: "primary", DSN: "p", Weight: 1, Role: dsn.RolePrimary}
	cfg.Replicas = []dsn.Node{{Name: "replica1", DSN: "r", Weight: 1, Role: dsn.RoleReplica}}
	cfg.CheckInterval = time.Hour // no probe runs: the test is the checker
	cfg.MaxLag = maxLag
	var events []Event
	c, err := NewConnector(cfg, WithEventHandler(func(e Event) { events = append(events, e) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, &events
}

func lsnPos(t *testing.T, s string) replication.Position {
	t.Helper()
	p, err := replication.ParseLSN(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMaxLagHysteresis: a replica goes out of reads above max_lag and comes
// back only under half of it, so one hovering around the limit does not
// flap.
func TestMaxLagHysteresis(t *testing.T) {
	c, events := newTestConnector(t, time.Second)
	primary, replica := c.primaryNode(), c.topo().replicas[0]
	t0 := time.Now()
	primary.observe(t0, replication.Status{Pos: lsnPos(t, "0/10"), ReplayAge: -1}, nil)
	primary.observe(t0.Add(time.Second), replication.Status{Pos: lsnPos(t, "0/100"), ReplayAge: -1}, nil)
	// The replica is between the two samples, about 9.7s behind by the
	// history; PostgreSQL's replay age, smaller, is the measure.
	behind := replication.Status{ReadOnly: true, Pos: lsnPos(t, "0/50")}
	for _, step := range []struct {
		replayAge time.Duration
		want      State
	}{
		{200 * time.Millisecond, Available},
		{999 * time.Millisecond, Available},
		{1500 * time.Millisecond, Lagging}, // over max_lag: out
		{900 * time.Millisecond, Lagging},  // under max_lag, over half: still out
		{600 * time.Millisecond, Lagging},
		{1200 * time.Millisecond, Lagging},
		{400 * time.Millisecond, Available}, // under half: back
		{900 * time.Millisecond, Available}, // under max_lag: stays
	} {
		behind.ReplayAge = step.replayAge
		replica.observe(t0.Add(10*time.Second), behind, nil)
		if got := replica.health.State(); got != step.want {
			t.Fatalf("lag %s: state %s, want %s", step.replayAge, got, step.want)
		}
		if lag, ok := replica.health.Lag(); !ok || lag != step.replayAge {
			t.Fatalf("lag %s: measured %s, %v", step.replayAge, lag, ok)
		}
	}
	if len(*events) != 2 || (*events)[0].To != Lagging || (*events)[1].From != Lagging {
		t.Errorf("events %+v; want one out, one back", *events)
	}
	// A replica that has everything the primary had is not lagging,
	// whatever the age of its last replayed commit (an idle primary).
	caughtUp := replication.Status{ReadOnly: true, Pos: lsnPos(t, "0/100"), ReplayAge: time.Hour}
	replica.observe(t0.Add(time.Minute), caughtUp, nil)
	if lag, _ := replica.health.Lag(); lag != 0 || replica.health.State() != Available {
		t.Errorf("caught-up replica: lag %s, state %s", lag, replica.health.State())
	}
}

// TestMaxLagOff: without max_lag the lag is measured and shown, and never
// takes a replica out.
func TestMaxLagOff(t *testing.T) {
	c, events := newTestConnector(t, 0)
	t0 := time.Now()
	c.primaryNode().observe(t0, replication.Status{Pos: lsnPos(t, "0/100"), ReplayAge: -1}, nil)
	c.topo().replicas[0].observe(t0, replication.Status{ReadOnly: true, Pos: lsnPos(t, "0/1"), ReplayAge: time.Hour}, nil)
	if lag, ok := c.topo().replicas[0].health.Lag(); !ok || lag == 0 || c.topo().replicas[0].health.State() != Available || len(*events) != 0 {
		t.Errorf("lag %s %v, state %s, events %v", lag, ok, c.topo().replicas[0].health.State(), *events)
	}
	if s := c.Stats(); !s.Nodes[1].LagKnown || s.Nodes[1].Position != "0/1" || s.Nodes[1].Reports != "read-only" {
		t.Errorf("stats %+v", s.Nodes[1])
	}
}

// TestStatusErrorKept: a status query that fails leaves the node in
// rotation and says why in Stats; the next success clears it.
func TestStatusErrorKept(t *testing.T) {
	c, _ := newTestConnector(t, time.Second)
	r := c.topo().replicas[0]
	r.observe(time.Now(), replication.Status{}, errors.New("status query: permission denied"))
	if s := c.Stats().Nodes[1]; s.StatusError == "" || s.State != Available {
		t.Errorf("after a failed status: %+v", s)
	}
	r.observe(time.Now(), replication.Status{}, errNoFlavor) // a driver without positions: not an error
	r.observe(time.Now(), replication.Status{ReadOnly: true, ReplayAge: -1}, nil)
	if s := c.Stats().Nodes[1]; s.StatusError != "" {
		t.Errorf("after a good status: StatusError %q", s.StatusError)
	}
}
