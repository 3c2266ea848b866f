package rwotel_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/metricstest"
	rwotel "github.com/rwpool/rwpool/metrics/otel"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// kind is what a metric is exported as.
type kind string

const (
	upDown  kind = "up-down counter"
	counter kind = "counter"
	gauge   kind = "gauge"
	histo   kind = "histogram"
)

// instruments: every instrument with its kind and unit.
var instruments = map[string]struct {
	kind kind
	unit string
}{
	rwotel.MetricConnectionsOpen:    {upDown, "{connection}"},
	rwotel.MetricConnectionsIdle:    {upDown, "{connection}"},
	rwotel.MetricConnectionsInUse:   {upDown, "{connection}"},
	rwotel.MetricConnectionsMax:     {upDown, "{connection}"},
	rwotel.MetricWaiters:            {upDown, "{waiter}"},
	rwotel.MetricWaits:              {counter, "{wait}"},
	rwotel.MetricWaitTime:           {counter, "s"},
	rwotel.MetricStatementsServed:   {counter, "{statement}"},
	rwotel.MetricStatementErrors:    {counter, "{error}"},
	rwotel.MetricNodeTrips:          {counter, "{trip}"},
	rwotel.MetricReplays:            {counter, "{replay}"},
	rwotel.MetricFallbacks:          {counter, "{fallback}"},
	rwotel.MetricCausalReads:        {counter, "{read}"},
	rwotel.MetricCausalWaits:        {counter, "{wait}"},
	rwotel.MetricCausalWaitTime:     {counter, "s"},
	rwotel.MetricCausalFallbacks:    {counter, "{read}"},
	rwotel.MetricTooStale:           {counter, "{read}"},
	rwotel.MetricHedges:             {counter, "{hedge}"},
	rwotel.MetricHedgeWins:          {counter, "{hedge}"},
	rwotel.MetricHedgesRefused:      {counter, "{read}"},
	rwotel.MetricNodeAvailable:      {gauge, ""},
	rwotel.MetricNodeProbeLatency:   {gauge, "s"},
	rwotel.MetricNodeBalanceLatency: {gauge, "s"},
	rwotel.MetricReplicationLag:     {gauge, "s"},
	rwotel.MetricNodeRoleMismatch:   {gauge, ""},
	rwotel.MetricNodeRejoining:      {gauge, ""},
	rwotel.MetricNodeDraining:       {gauge, ""},
	rwotel.MetricNodeBehind:         {gauge, ""},
	rwotel.MetricNodeRoleSince:      {gauge, "s"},
	rwotel.MetricNodeLagging:        {gauge, ""},
	rwotel.MetricConnectionsDialed:  {counter, "{connection}"},
	rwotel.MetricConnectionsClosed:  {counter, "{connection}"},
	rwotel.MetricConnectionsReset:   {counter, "{connection}"},
	rwotel.MetricOperationDuration:  {histo, "s"},
	rwotel.MetricFailoverWaits:      {counter, "{write}"},
	rwotel.MetricFailoverWaitTime:   {counter, "s"},
}

// collected is one collection: metric name → series key → value, where
// the key is the series' attributes as "k=v,k=v" in key order.
type collected map[string]map[string]float64

// reader is a MeterProvider with a ManualReader.
type reader struct {
	t  *testing.T
	r  *sdkmetric.ManualReader
	mp *sdkmetric.MeterProvider
}

func newReader(t *testing.T) *reader {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() {
		if err := mp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return &reader{t: t, r: r, mp: mp}
}

func (r *reader) raw() metricdata.ResourceMetrics {
	r.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.r.Collect(context.Background(), &rm); err != nil {
		r.t.Fatal(err)
	}
	return rm
}

// collect collects once, checks the scope, kind and unit of every rwpool
// instrument and returns the values.
func (r *reader) collect() collected {
	r.t.Helper()
	return r.decode(r.raw())
}

func (r *reader) decode(rm metricdata.ResourceMetrics) collected {
	t := r.t
	t.Helper()
	out := collected{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != rwotel.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			want, ok := instruments[m.Name]
			if !ok {
				t.Errorf("unexpected metric %q", m.Name)
				continue
			}
			if m.Unit != want.unit {
				t.Errorf("%s: unit %q, want %q", m.Name, m.Unit, want.unit)
			}
			if m.Description == "" {
				t.Errorf("%s: no description", m.Name)
			}
			series := map[string]float64{}
			add := func(attrs attribute.Set, v float64) {
				var kv []string
				for _, a := range attrs.ToSlice() {
					kv = append(kv, string(a.Key)+"="+a.Value.Emit())
				}
				series[strings.Join(kv, ",")] = v
			}
			var got kind
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				got = sumKind(d.IsMonotonic, d.Temporality, m.Name, t)
				for _, p := range d.DataPoints {
					add(p.Attributes, float64(p.Value))
				}
			case metricdata.Sum[float64]:
				got = sumKind(d.IsMonotonic, d.Temporality, m.Name, t)
				for _, p := range d.DataPoints {
					add(p.Attributes, p.Value)
				}
			case metricdata.Gauge[int64]:
				got = gauge
				for _, p := range d.DataPoints {
					add(p.Attributes, float64(p.Value))
				}
			case metricdata.Gauge[float64]:
				got = gauge
				for _, p := range d.DataPoints {
					add(p.Attributes, p.Value)
				}
			case metricdata.Histogram[float64]:
				// The series' value is its count of statements.
				got = histo
				if d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: temporality %v", m.Name, d.Temporality)
				}
				for _, p := range d.DataPoints {
					add(p.Attributes, float64(p.Count))
				}
			default:
				t.Errorf("%s: data %T", m.Name, m.Data)
			}
			if got != want.kind {
				t.Errorf("%s: %s, want %s", m.Name, got, want.kind)
			}
			out[m.Name] = series
		}
	}
	return out
}

func sumKind(monotonic bool, temp metricdata.Temporality, name string, t *testing.T) kind {
	if temp != metricdata.CumulativeTemporality {
		t.Errorf("%s: temporality %v", name, temp)
	}
	if monotonic {
		return counter
	}
	return upDown
}

const (
	p  = "node=primary,role=primary"
	r1 = "node=replica1,role=replica"
	r2 = "node=replica2,role=replica"
)

func register(t *testing.T, db *sql.DB, mp metric.MeterProvider, opts ...rwotel.Option) metric.Registration {
	t.Helper()
	reg, err := rwotel.Register(db, mp, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestRegisterReportsSnapshot runs known traffic and checks every
// instrument's exact value.
func TestRegisterReportsSnapshot(t *testing.T) {
	c := newCluster(t, "pool_size=1;check_interval=20ms;acquire_timeout=10s")
	rd := newReader(t)
	reg := register(t, c.DB, rd.mp)
	defer reg.Unregister()

	waitFor(t, c.DB, "a first probe of every node", func(s rwpool.Snapshot) bool {
		for _, n := range s.Nodes {
			if n.ProbeLatency <= 0 {
				return false
			}
		}
		return true
	})
	for k, v := range rd.collect()[rwotel.MetricNodeProbeLatency] {
		if v <= 0 || v > 10 {
			t.Errorf("probe latency of %s = %g s", k, v)
		}
	}

	const reads, writes = 5, 2
	for range reads {
		mustQuery(t, c.DB, "SELECT 1")
	}
	for range writes {
		mustExec(t, c.DB, "INSERT INTO t VALUES (1)")
	}
	got := rd.collect()[rwotel.MetricStatementsServed]
	if got[r1] != reads || got[p] != writes || got[r2] != 0 {
		t.Fatalf("served = %v, want %s %d, %s %d", got, r1, reads, p, writes)
	}

	// Replayed on replica1, then replica2, then the primary (fallback).
	mustQuery(t, c.DB, boomQuery)

	// A transaction holds the primary's only connection; a write waits.
	tx, err := c.DB.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := c.DB.Exec("INSERT INTO t VALUES (2)"); err != nil {
			t.Errorf("waiting write: %v", err)
		}
	}()
	waitFor(t, c.DB, "a waiter on the primary", func(s rwpool.Snapshot) bool { return s.Nodes[0].Waiting == 1 })
	during := rd.collect()
	// The primary's one connection is in use, none idle; one write waits.
	for name, want := range map[string]float64{
		rwotel.MetricWaiters: 1, rwotel.MetricConnectionsOpen: 1,
		rwotel.MetricConnectionsIdle: 0, rwotel.MetricConnectionsInUse: 1,
	} {
		if got := during[name][p]; got != want {
			t.Errorf("%s{primary} = %g while a write waits, want %g", name, got, want)
		}
	}
	if got := during[rwotel.MetricWaiters][r1]; got != 0 {
		t.Errorf("%s{replica1} = %g, want 0", rwotel.MetricWaiters, got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	fake.SetDown(c.Rep2, true)
	waitFor(t, c.DB, "replica2 to trip", func(s rwpool.Snapshot) bool { return !s.Nodes[2].Available })

	all := rd.collect()
	if wt := all[rwotel.MetricWaitTime]; wt[p] <= 0 || wt[r1] != 0 {
		t.Errorf("wait time = %v", wt)
	}
	delete(all, rwotel.MetricWaitTime)
	delete(all, rwotel.MetricNodeProbeLatency)
	// How many connections the pools dialled and closed depends on the
	// run: compare with the snapshot instead.
	s, err := rwpool.Stats(c.DB)
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{p, r1, r2} {
		n := s.Nodes[i]
		for name, want := range map[string]float64{
			rwotel.MetricConnectionsDialed + " " + key:               float64(n.Dials),
			rwotel.MetricConnectionsClosed + " cause=session," + key: float64(n.ClosedSession),
			rwotel.MetricConnectionsClosed + " cause=broken," + key:  float64(n.ClosedBroken),
			rwotel.MetricConnectionsClosed + " cause=expired," + key: float64(n.ClosedExpired),
			rwotel.MetricConnectionsReset + " " + key:                float64(n.Resets),
		} {
			metric, series, _ := strings.Cut(name, " ")
			if got, ok := all[metric][series]; !ok || got != want {
				t.Errorf("%s{%s} = %v (observed: %v), want %v", metric, series, got, ok, want)
			}
		}
	}
	// db.client.operation.duration counts each node's statements by kind
	// and outcome as its rwpool.NodeStats.Latency does (a failure's
	// series also says its error.type).
	counted := map[string]float64{}
	for key, v := range all[rwotel.MetricOperationDuration] {
		var node, kind, outcome string
		for _, kv := range strings.Split(key, ",") {
			k, val, _ := strings.Cut(kv, "=")
			switch k {
			case "rwpool.node":
				node = val
			case "rwpool.kind":
				kind = val
			case "rwpool.outcome":
				outcome = val
			case "db.system.name":
				if val != "other_sql" {
					t.Errorf("db.system.name=%s for the fake driver, want other_sql", val)
				}
			}
		}
		counted[node+" "+kind+" "+outcome] += v
		if !strings.Contains(key, "server.address="+node+".") || !strings.Contains(key, "server.port=5432") {
			t.Errorf("%s series %q: no server.address and server.port of %s", rwotel.MetricOperationDuration, key, node)
		}
	}
	wantCounted := map[string]float64{}
	for _, n := range s.Nodes {
		for _, l := range n.Latency {
			wantCounted[n.Name+" "+l.Kind+" "+l.Outcome] = float64(l.Count)
		}
	}
	if len(wantCounted) == 0 || !maps.Equal(counted, wantCounted) {
		t.Errorf("%s counts %v, want the snapshot's %v", rwotel.MetricOperationDuration, counted, wantCounted)
	}
	delete(all, rwotel.MetricOperationDuration)
	delete(all, rwotel.MetricConnectionsDialed)
	delete(all, rwotel.MetricConnectionsClosed)
	delete(all, rwotel.MetricConnectionsReset)
	series := func(primary, replica1, replica2 float64) map[string]float64 {
		return map[string]float64{p: primary, r1: replica1, r2: replica2}
	}
	want := collected{
		rwotel.MetricConnectionsOpen:  series(1, 0, 0),
		rwotel.MetricConnectionsIdle:  series(1, 0, 0),
		rwotel.MetricConnectionsInUse: series(0, 0, 0),
		rwotel.MetricConnectionsMax:   series(1, 1, 1),
		rwotel.MetricWaiters:          series(0, 0, 0),
		rwotel.MetricWaits:            series(1, 0, 0),
		// primary: 2 writes, 1 fallback read, 1 transaction, 1 waiting write.
		rwotel.MetricStatementsServed:   series(5, reads+1, 1),
		rwotel.MetricStatementErrors:    series(0, 1, 1),
		rwotel.MetricNodeTrips:          series(0, 0, 1),
		rwotel.MetricReplays:            series(0, 1, 1),
		rwotel.MetricFallbacks:          series(1, 0, 0),
		rwotel.MetricCausalReads:        series(0, 0, 0), // no session, no bound
		rwotel.MetricCausalWaits:        series(0, 0, 0),
		rwotel.MetricCausalWaitTime:     series(0, 0, 0),
		rwotel.MetricCausalFallbacks:    series(0, 0, 0),
		rwotel.MetricTooStale:           series(0, 0, 0),
		rwotel.MetricHedges:             series(0, 0, 0),
		rwotel.MetricHedgeWins:          series(0, 0, 0),
		rwotel.MetricHedgesRefused:      series(0, 0, 0),
		rwotel.MetricNodeAvailable:      series(1, 1, 0),
		rwotel.MetricNodeBalanceLatency: series(0, 0, 0), // balance=weighted measures nothing
		rwotel.MetricNodeRoleMismatch:   series(0, 0, 0),
		rwotel.MetricNodeRejoining:      series(0, 0, 0),
		rwotel.MetricNodeDraining:       series(0, 0, 0),
		rwotel.MetricNodeBehind:         series(0, 0, 0),
		rwotel.MetricNodeRoleSince:      series(0, 0, 0), // the DSN's roles
		rwotel.MetricNodeLagging:        series(0, 0, 0),
		rwotel.MetricFailoverWaits:      series(0, 0, 0), // no failover_wait
		rwotel.MetricFailoverWaitTime:   series(0, 0, 0),
		// No rwpool.replication.lag: the fake driver has no replication
		// positions, so no lag is known and none is observed.
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !maps.Equal(all[name], want[name]) {
			t.Errorf("%s = %v, want %v", name, all[name], want[name])
		}
	}
	if len(all) != len(want) {
		t.Errorf("%d metrics, want %d", len(all), len(want))
	}
	if lag, ok := all[rwotel.MetricReplicationLag]; ok {
		t.Errorf("%s observed with no lag known: %v", rwotel.MetricReplicationLag, lag)
	}
	if t.Failed() {
		s, _ := rwpool.Stats(c.DB)
		t.Logf("snapshot:\n%s", s)
	}

	// replica2's trip cause echoes its DSN; nothing of a DSN is reported.
	if s, _ := rwpool.Stats(c.DB); s.Nodes[2].LastError == "" {
		t.Fatalf("replica2 tripped without a cause:\n%s", s)
	}
	text := fmt.Sprintf("%+v", rd.raw())
	if !strings.Contains(text, "replica1") {
		t.Fatalf("dump names no node: %s", text)
	}
	for _, secret := range []string{sentinel, "postgres://", ".test:5432", "fake: dial"} {
		if strings.Contains(text, secret) {
			t.Errorf("metrics contain %q: %s", secret, text)
		}
	}
}

func TestRegisterRejects(t *testing.T) {
	rd := newReader(t)
	foreign, err := sql.Open(fakeDriverName, "not rwpool")
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	if _, err := rwotel.Register(foreign, rd.mp); !errors.Is(err, rwpool.ErrNotRWPool) {
		t.Errorf("Register(foreign db) = %v, want ErrNotRWPool", err)
	}
	if _, err := rwotel.Register(nil, rd.mp); err == nil {
		t.Error("Register(nil db): no error")
	}
	if _, err := rwotel.RegisterConnector(nil, rd.mp); err == nil {
		t.Error("RegisterConnector(nil): no error")
	}
	c := newCluster(t, "breaker=off")
	if _, err := rwotel.Register(c.DB, nil); err == nil {
		t.Error("Register(nil MeterProvider): no error")
	}
	for _, k := range []string{"node", "role"} {
		if _, err := rwotel.Register(c.DB, rd.mp, rwotel.WithAttributes(attribute.String(k, "x"))); err == nil {
			t.Errorf("reserved attribute %q accepted", k)
		}
	}
	if got := rd.collect(); len(got) != 0 {
		t.Errorf("a rejected Register reports: %v", got)
	}
}

// TestTwoDatabases: WithAttributes tells two databases apart; Unregister
// stops reporting one.
func TestTwoDatabases(t *testing.T) {
	a := newCluster(t, "breaker=off")
	b := newCluster(t, "breaker=off")
	rd := newReader(t)
	regA := register(t, a.DB, rd.mp, rwotel.WithAttributes(attribute.String("db", "a")))
	regB := register(t, b.DB, rd.mp, rwotel.WithAttributes(attribute.String("db", "b")))
	defer regB.Unregister()
	mustQuery(t, b.DB, "SELECT 1")
	mustQuery(t, b.DB, "SELECT 1")
	mustQuery(t, a.DB, "SELECT 1")
	want := map[string]float64{
		"db=a," + p: 0, "db=a," + r1: 1, "db=a," + r2: 0,
		"db=b," + p: 0, "db=b," + r1: 2, "db=b," + r2: 0,
	}
	if got := rd.collect()[rwotel.MetricStatementsServed]; !maps.Equal(got, want) {
		t.Fatalf("served = %v, want %v", got, want)
	}
	// db.client.operation.duration, recorded by each one's statement
	// observer, counts each database's own statements.
	recorded := func(db string) float64 {
		var n float64
		for key, v := range rd.collect()[rwotel.MetricOperationDuration] {
			if strings.HasPrefix(key, "db="+db+",") {
				n += v
			}
		}
		return n
	}
	if a, b := recorded("a"), recorded("b"); a != 1 || b != 2 {
		t.Fatalf("%s counts %v statements of a and %v of b, want 1 and 2", rwotel.MetricOperationDuration, a, b)
	}
	if err := regA.Unregister(); err != nil {
		t.Fatal(err)
	}
	want = map[string]float64{"db=b," + p: 0, "db=b," + r1: 2, "db=b," + r2: 0}
	if got := rd.collect()[rwotel.MetricStatementsServed]; !maps.Equal(got, want) {
		t.Fatalf("served after Unregister of a = %v, want %v", got, want)
	}
	mustQuery(t, a.DB, "SELECT 1")
	if n := recorded("a"); n != 1 {
		t.Errorf("a statement of a after its Unregister was recorded: %v", n)
	}
}

func TestRegisterConnector(t *testing.T) {
	cfg := dsn.NewConfig()
	cfg.Driver = fakeDriverName
	cfg.Primary.DSN = nodeDSN(t, "primary")
	cfg.Replicas = []dsn.Node{{DSN: nodeDSN(t, "replica1"), Weight: 1, Name: "r1"}}
	cfg.Breaker = false
	conn, err := rwpool.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	rd := newReader(t)
	reg, err := rwotel.RegisterConnector(conn, rd.mp)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	for range 3 {
		mustQuery(t, db, "SELECT 1")
	}
	want := map[string]float64{p: 0, "node=r1,role=replica": 3}
	if got := rd.collect()[rwotel.MetricStatementsServed]; !maps.Equal(got, want) {
		t.Fatalf("served = %v, want %v", got, want)
	}
}

// TestClosedDatabase: a registration of a closed database still reports
// its last state.
func TestClosedDatabase(t *testing.T) {
	c := newCluster(t, "breaker=off")
	rd := newReader(t)
	reg := register(t, c.DB, rd.mp)
	defer reg.Unregister()
	mustQuery(t, c.DB, "SELECT 1")
	if err := c.DB.Close(); err != nil {
		t.Fatal(err)
	}
	all := rd.collect()
	if got := all[rwotel.MetricStatementsServed][r1]; got != 1 {
		t.Fatalf("served by replica1 after Close = %g, want 1", got)
	}
	if got := all[rwotel.MetricConnectionsOpen][r1]; got != 0 {
		t.Fatalf("open on replica1 after Close = %g, want 0", got)
	}
}

// TestConcurrentCollections: two readers collect while traffic runs, for
// the race detector.
func TestConcurrentCollections(t *testing.T) {
	c := newCluster(t, "pool_size=4;check_interval=10ms")
	ra, rb := sdkmetric.NewManualReader(), sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(ra), sdkmetric.WithReader(rb))
	defer mp.Shutdown(context.Background())
	reg := register(t, c.DB, mp)
	defer reg.Unregister()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				if _, err := c.DB.Exec(fmt.Sprintf("SELECT %d", i*100+j)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for _, r := range []*sdkmetric.ManualReader{ra, rb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				var rm metricdata.ResourceMetrics
				if err := r.Collect(context.Background(), &rm); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	rd := &reader{t: t, r: ra, mp: mp}
	if got := rd.collect()[rwotel.MetricStatementsServed][r1]; got != 200 {
		t.Fatalf("served by replica1 = %g, want 200", got)
	}
}

// TestRegisterReplication: over a fake PostgreSQL whose replica1 replays
// 42 s behind and whose replica2 reports writable, the lag of both
// replicas is observed (not the primary's, which is never known),
// replica1 is lagging (max_lag=10s) and replica2's role is flagged; no
// position nor status error text is reported.
func TestRegisterReplication(t *testing.T) {
	pgFake.SetStatus(nodeDSN(t, "primary"), metricstest.Status{LSN: "0/2000", ReplayAge: -1})
	pgFake.SetStatus(nodeDSN(t, "replica1"), metricstest.Status{ReadOnly: true, LSN: "0/1000", ReplayAge: 42})
	pgFake.SetStatus(nodeDSN(t, "replica2"), metricstest.Status{LSN: "0/2000", ReplayAge: -1})
	c := metricstest.NewCluster(t, pgFake, "check_interval=10ms;max_lag=10s")
	rd := newReader(t)
	reg := register(t, c.DB, rd.mp)
	defer reg.Unregister()
	waitFor(t, c.DB, "replica1 lagging, replica2's lag known and its role flagged", func(s rwpool.Snapshot) bool {
		return s.Nodes[1].State == rwpool.Lagging && s.Nodes[2].LagKnown && s.Nodes[2].RoleMismatch()
	})
	all := rd.collect()
	// replica1 is behind every sample of the primary's history, so its
	// lag is the standby's own replay age, 42 s; replica2 has the
	// primary's newest position: lag 0.
	for name, want := range map[string]map[string]float64{
		rwotel.MetricReplicationLag:   {r1: 42, r2: 0},
		rwotel.MetricNodeRoleMismatch: {p: 0, r1: 0, r2: 1},
		rwotel.MetricNodeLagging:      {p: 0, r1: 1, r2: 0},
		rwotel.MetricNodeAvailable:    {p: 1, r1: 0, r2: 1},
	} {
		if !maps.Equal(all[name], want) {
			t.Errorf("%s = %v, want %v", name, all[name], want)
		}
	}
	if t.Failed() {
		s, _ := rwpool.Stats(c.DB)
		t.Logf("snapshot:\n%s", s)
	}

	// A status that cannot be parsed is a status error; its text, which
	// quotes the answer, is not reported, nor is any position.
	pgFake.SetStatus(c.Rep2, metricstest.Status{LSN: "bogus-lsn-4e1d", ReplayAge: -1})
	waitFor(t, c.DB, "a status error on replica2", func(s rwpool.Snapshot) bool {
		return strings.Contains(s.Nodes[2].StatusError, "bogus-lsn-4e1d")
	})
	text := fmt.Sprintf("%+v", rd.raw())
	if !strings.Contains(text, "replica1") {
		t.Fatalf("dump names no node: %s", text)
	}
	for _, secret := range []string{"bogus-lsn-4e1d", "0/1000", "0/2000", sentinel, "postgres://"} {
		if strings.Contains(text, secret) {
			t.Errorf("metrics contain %q: %s", secret, text)
		}
	}
}
