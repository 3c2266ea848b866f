package rwprom_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"go.uber.org/goleak"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/metricstest"
	rwprom "github.com/rwpool/rwpool/metrics/prometheus"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// metricNames are the names of every exported metric with the default
// namespace.
var metricNames = []string{
	"rwpool_connections_open",
	"rwpool_connections_idle",
	"rwpool_connections_in_use",
	"rwpool_connections_max",
	"rwpool_waiters",
	"rwpool_waits_total",
	"rwpool_wait_seconds_total",
	"rwpool_statements_served_total",
	"rwpool_statement_errors_total",
	"rwpool_node_trips_total",
	"rwpool_replays_total",
	"rwpool_fallbacks_total",
	"rwpool_causal_reads_total",
	"rwpool_causal_waits_total",
	"rwpool_causal_wait_seconds_total",
	"rwpool_causal_fallbacks_total",
	"rwpool_too_stale_total",
	"rwpool_hedges_total",
	"rwpool_hedge_wins_total",
	"rwpool_hedges_refused_total",
	"rwpool_node_available",
	"rwpool_node_probe_latency_seconds",
	"rwpool_node_balance_latency_seconds",
	lagMetric,
	"rwpool_node_role_mismatch",
	"rwpool_node_rejoining",
	"rwpool_node_draining",
	"rwpool_node_behind",
	"rwpool_node_role_since_seconds",
	"rwpool_node_lagging",
	"rwpool_connections_dialed_total",
	closedMetric,
	"rwpool_connections_reset_total",
	"rwpool_failover_waits_total",
	"rwpool_failover_wait_seconds_total",
	histogramNames[0],
}

// histogramNames are the histograms among metricNames.
var histogramNames = []string{"rwpool_statement_duration_seconds"}

// closedMetric has one series per node and cause (session, broken,
// expired).
const closedMetric = "rwpool_connections_closed_total"

// lagMetric has a series only for nodes whose lag is known, which no node
// of the plain fake ever is (its driver has no replication positions).
const lagMetric = "rwpool_replication_lag_seconds"

// seriesWithoutLag is the number of series of a 3-node cluster none of
// whose lags is known.
var seriesWithoutLag = (len(metricNames)-1-len(histogramNames))*3 + 2*3 // the closed counter has three causes; histograms have a series per kind and outcome seen

func newRegistry(t *testing.T, db *sql.DB, opts ...rwprom.Option) *prometheus.Registry {
	t.Helper()
	c, err := rwprom.NewCollector(db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return reg
}

// gatherText returns everything reg exports, in the text format.
func gatherText(t *testing.T, reg prometheus.Gatherer) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// value returns the value of the one series of name with the given node
// label.
func value(t *testing.T, reg prometheus.Gatherer, name, node string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "node" && l.GetValue() == node {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series %s{node=%q}", name, node)
	return 0
}

// TestCollectorExportsSnapshot runs known traffic and compares every metric
// with its exact expected value.
func TestCollectorExportsSnapshot(t *testing.T) {
	c := newCluster(t, "pool_size=1;check_interval=20ms;acquire_timeout=10s")
	reg := newRegistry(t, c.DB)

	// Every node answers health probes: the probe latency gauge is set.
	waitFor(t, c.DB, "a first probe of every node", func(s rwpool.Snapshot) bool {
		for _, n := range s.Nodes {
			if n.ProbeLatency <= 0 {
				return false
			}
		}
		return true
	})
	for _, node := range []string{"primary", "replica1", "replica2"} {
		if v := value(t, reg, "rwpool_node_probe_latency_seconds", node); v <= 0 || v > 10 {
			t.Errorf("probe latency of %s = %g s", node, v)
		}
	}

	// 5 reads go to replica1 (replica2 is a spare), 2 writes to the primary.
	const reads, writes = 5, 2
	for range reads {
		mustQuery(t, c.DB, "SELECT 1")
	}
	for range writes {
		mustExec(t, c.DB, "INSERT INTO t VALUES (1)")
	}
	if got := value(t, reg, "rwpool_statements_served_total", "replica1"); got != reads {
		t.Fatalf("served by replica1 = %g, want %d", got, reads)
	}
	if got := value(t, reg, "rwpool_statements_served_total", "primary"); got != writes {
		t.Fatalf("served by primary = %g, want %d", got, writes)
	}

	// A read failing at the connection level on both replicas is replayed:
	// replica1, then the spare replica2, then the primary as a fallback.
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
	err = testutil.CollectAndCompare(mustCollector(t, c.DB), strings.NewReader(`
# HELP rwpool_waiters Borrowers waiting now for a connection to the node.
# TYPE rwpool_waiters gauge
rwpool_waiters{node="primary",role="primary"} 1
rwpool_waiters{node="replica1",role="replica"} 0
rwpool_waiters{node="replica2",role="replica"} 0
`), "rwpool_waiters")
	if err != nil {
		t.Error(err)
	}
	// The primary's one connection is in use, none idle.
	for name, want := range map[string]float64{
		"rwpool_connections_open": 1, "rwpool_connections_idle": 0, "rwpool_connections_in_use": 1,
	} {
		if got := value(t, reg, name, "primary"); got != want {
			t.Errorf("%s{node=primary} = %g while a write waits, want %g", name, got, want)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := value(t, reg, "rwpool_wait_seconds_total", "primary"); got <= 0 {
		t.Errorf("wait seconds on primary = %g, want > 0", got)
	}

	// replica2 goes down: the health checker takes it out of rotation.
	fake.SetDown(c.Rep2, true)
	waitFor(t, c.DB, "replica2 to trip", func(s rwpool.Snapshot) bool { return !s.Nodes[2].Available })

	// Served: primary 2 writes + 1 fallback read + 1 transaction + 1
	// write that waited; replica1 5 reads + 1 failed; replica2 1 failed.
	// The connections that failed were closed, not returned to the pool.
	want := `
# HELP rwpool_causal_fallbacks_total Causal reads served by the node (the primary) because no replica had their position, or it could not be known.
# TYPE rwpool_causal_fallbacks_total counter
rwpool_causal_fallbacks_total{node="primary",role="primary"} 0
rwpool_causal_fallbacks_total{node="replica1",role="replica"} 0
rwpool_causal_fallbacks_total{node="replica2",role="replica"} 0
# HELP rwpool_causal_reads_total Reads served by the node that had to see a position: a causal session's writes, a resumed token, what the session read before, or a staleness bound.
# TYPE rwpool_causal_reads_total counter
rwpool_causal_reads_total{node="primary",role="primary"} 0
rwpool_causal_reads_total{node="replica1",role="replica"} 0
rwpool_causal_reads_total{node="replica2",role="replica"} 0
# HELP rwpool_causal_wait_seconds_total Total time those checks took, in seconds.
# TYPE rwpool_causal_wait_seconds_total counter
rwpool_causal_wait_seconds_total{node="primary",role="primary"} 0
rwpool_causal_wait_seconds_total{node="replica1",role="replica"} 0
rwpool_causal_wait_seconds_total{node="replica2",role="replica"} 0
# HELP rwpool_causal_waits_total Checks of the node allowed to wait (causal_wait) for a read's position.
# TYPE rwpool_causal_waits_total counter
rwpool_causal_waits_total{node="primary",role="primary"} 0
rwpool_causal_waits_total{node="replica1",role="replica"} 0
rwpool_causal_waits_total{node="replica2",role="replica"} 0
# HELP rwpool_connections_idle Real connections idle in the node's pool.
# TYPE rwpool_connections_idle gauge
rwpool_connections_idle{node="primary",role="primary"} 1
rwpool_connections_idle{node="replica1",role="replica"} 0
rwpool_connections_idle{node="replica2",role="replica"} 0
# HELP rwpool_connections_in_use Real connections of the node borrowed by statements.
# TYPE rwpool_connections_in_use gauge
rwpool_connections_in_use{node="primary",role="primary"} 0
rwpool_connections_in_use{node="replica1",role="replica"} 0
rwpool_connections_in_use{node="replica2",role="replica"} 0
# HELP rwpool_connections_max Maximum number of real connections open to the node (pool_size).
# TYPE rwpool_connections_max gauge
rwpool_connections_max{node="primary",role="primary"} 1
rwpool_connections_max{node="replica1",role="replica"} 1
rwpool_connections_max{node="replica2",role="replica"} 1
# HELP rwpool_connections_open Real connections open to the node: idle, in use and being dialed.
# TYPE rwpool_connections_open gauge
rwpool_connections_open{node="primary",role="primary"} 1
rwpool_connections_open{node="replica1",role="replica"} 0
rwpool_connections_open{node="replica2",role="replica"} 0
# HELP rwpool_failover_wait_seconds_total Total time those writes waited for a writable primary, in seconds.
# TYPE rwpool_failover_wait_seconds_total counter
rwpool_failover_wait_seconds_total{node="primary",role="primary"} 0
rwpool_failover_wait_seconds_total{node="replica1",role="replica"} 0
rwpool_failover_wait_seconds_total{node="replica2",role="replica"} 0
# HELP rwpool_failover_waits_total Writes sent to the node after waiting for a writable primary (failover_wait).
# TYPE rwpool_failover_waits_total counter
rwpool_failover_waits_total{node="primary",role="primary"} 0
rwpool_failover_waits_total{node="replica1",role="replica"} 0
rwpool_failover_waits_total{node="replica2",role="replica"} 0
# HELP rwpool_fallbacks_total Reads served by the node (the primary) because no replica was available.
# TYPE rwpool_fallbacks_total counter
rwpool_fallbacks_total{node="primary",role="primary"} 1
rwpool_fallbacks_total{node="replica1",role="replica"} 0
rwpool_fallbacks_total{node="replica2",role="replica"} 0
# HELP rwpool_hedge_wins_total Reads on the node whose hedge on another node answered first.
# TYPE rwpool_hedge_wins_total counter
rwpool_hedge_wins_total{node="primary",role="primary"} 0
rwpool_hedge_wins_total{node="replica1",role="replica"} 0
rwpool_hedge_wins_total{node="replica2",role="replica"} 0
# HELP rwpool_hedges_refused_total Reads on the node that had no answer after hedge_after and whose hedge was refused, over hedge_budget (at first: such a read asks again every 100 ms).
# TYPE rwpool_hedges_refused_total counter
rwpool_hedges_refused_total{node="primary",role="primary"} 0
rwpool_hedges_refused_total{node="replica1",role="replica"} 0
rwpool_hedges_refused_total{node="replica2",role="replica"} 0
# HELP rwpool_hedges_total Reads on the node that had no answer after hedge_after and were also started on another node.
# TYPE rwpool_hedges_total counter
rwpool_hedges_total{node="primary",role="primary"} 0
rwpool_hedges_total{node="replica1",role="replica"} 0
rwpool_hedges_total{node="replica2",role="replica"} 0
# HELP rwpool_node_available 1 if routing may choose the node, 0 while it is unavailable or lagging.
# TYPE rwpool_node_available gauge
rwpool_node_available{node="primary",role="primary"} 1
rwpool_node_available{node="replica1",role="replica"} 1
rwpool_node_available{node="replica2",role="replica"} 0
# HELP rwpool_node_behind 1 while the replica, with no writable primary (a failover under way), has applied less than another available replica and serves no read, else 0.
# TYPE rwpool_node_behind gauge
rwpool_node_behind{node="primary",role="primary"} 0
rwpool_node_behind{node="replica1",role="replica"} 0
rwpool_node_behind{node="replica2",role="replica"} 0
# HELP rwpool_node_draining 1 while the node, a replica a discover source found, has left its source and finishes the statements running on it (it takes no new one), else 0.
# TYPE rwpool_node_draining gauge
rwpool_node_draining{node="primary",role="primary"} 0
rwpool_node_draining{node="replica1",role="replica"} 0
rwpool_node_draining{node="replica2",role="replica"} 0
# HELP rwpool_node_lagging 1 while the replica is out of reads because its replication lag exceeds max_lag, else 0.
# TYPE rwpool_node_lagging gauge
rwpool_node_lagging{node="primary",role="primary"} 0
rwpool_node_lagging{node="replica1",role="replica"} 0
rwpool_node_lagging{node="replica2",role="replica"} 0
# HELP rwpool_node_rejoining 1 while the node, after a promotion rwpool followed, is not yet seen following the new primary and serves no read, else 0.
# TYPE rwpool_node_rejoining gauge
rwpool_node_rejoining{node="primary",role="primary"} 0
rwpool_node_rejoining{node="replica1",role="replica"} 0
rwpool_node_rejoining{node="replica2",role="replica"} 0
# HELP rwpool_node_role_mismatch 1 if the node reports a role its configuration does not expect (a writable replica or a read-only primary), else 0.
# TYPE rwpool_node_role_mismatch gauge
rwpool_node_role_mismatch{node="primary",role="primary"} 0
rwpool_node_role_mismatch{node="replica1",role="replica"} 0
rwpool_node_role_mismatch{node="replica2",role="replica"} 0
# HELP rwpool_node_role_since_seconds Unix time when the node was given its current role by a promotion (follow_promotion); 0 while it has the DSN's role.
# TYPE rwpool_node_role_since_seconds gauge
rwpool_node_role_since_seconds{node="primary",role="primary"} 0
rwpool_node_role_since_seconds{node="replica1",role="replica"} 0
rwpool_node_role_since_seconds{node="replica2",role="replica"} 0
# HELP rwpool_node_trips_total Times the node became unavailable.
# TYPE rwpool_node_trips_total counter
rwpool_node_trips_total{node="primary",role="primary"} 0
rwpool_node_trips_total{node="replica1",role="replica"} 0
rwpool_node_trips_total{node="replica2",role="replica"} 1
# HELP rwpool_replays_total Reads that failed on the node and were replayed on another node.
# TYPE rwpool_replays_total counter
rwpool_replays_total{node="primary",role="primary"} 0
rwpool_replays_total{node="replica1",role="replica"} 1
rwpool_replays_total{node="replica2",role="replica"} 1
# HELP rwpool_statement_errors_total Statements that failed on the node, including borrows refused because it was unavailable.
# TYPE rwpool_statement_errors_total counter
rwpool_statement_errors_total{node="primary",role="primary"} 0
rwpool_statement_errors_total{node="replica1",role="replica"} 1
rwpool_statement_errors_total{node="replica2",role="replica"} 1
# HELP rwpool_statements_served_total Statements and transactions routed to the node.
# TYPE rwpool_statements_served_total counter
rwpool_statements_served_total{node="primary",role="primary"} 5
rwpool_statements_served_total{node="replica1",role="replica"} 6
rwpool_statements_served_total{node="replica2",role="replica"} 1
# HELP rwpool_too_stale_total Causal reads that failed with ErrTooStale (causal_fallback=error) instead of going to the node (the primary).
# TYPE rwpool_too_stale_total counter
rwpool_too_stale_total{node="primary",role="primary"} 0
rwpool_too_stale_total{node="replica1",role="replica"} 0
rwpool_too_stale_total{node="replica2",role="replica"} 0
# HELP rwpool_waiters Borrowers waiting now for a connection to the node.
# TYPE rwpool_waiters gauge
rwpool_waiters{node="primary",role="primary"} 0
rwpool_waiters{node="replica1",role="replica"} 0
rwpool_waiters{node="replica2",role="replica"} 0
# HELP rwpool_waits_total Borrows from the node's pool that had to wait for a connection.
# TYPE rwpool_waits_total counter
rwpool_waits_total{node="primary",role="primary"} 1
rwpool_waits_total{node="replica1",role="replica"} 0
rwpool_waits_total{node="replica2",role="replica"} 0
`
	// The lag is compared too: with no expected series, its absence is
	// checked (the fake driver has no replication positions).
	exact := []string{}
	for _, n := range metricNames {
		switch n {
		case "rwpool_wait_seconds_total", "rwpool_node_probe_latency_seconds", "rwpool_node_balance_latency_seconds",
			"rwpool_connections_dialed_total", closedMetric, "rwpool_connections_reset_total", histogramNames[0]:
			// timing, and how many connections the pools happened to dial:
			// checked against the snapshot below (the histograms in
			// TestStatementDurationHistogram)
		default:
			exact = append(exact, n)
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), exact...); err != nil {
		t.Fatalf("%v\nsnapshot:\n%s", err, mustStats(t, c.DB))
	}
	s := mustStats(t, c.DB)
	for _, n := range s.Nodes {
		for metric, v := range map[string]int64{
			`rwpool_connections_dialed_total{node="` + n.Name + `",role="` + n.Role + `"}`:                 n.Dials,
			`rwpool_connections_closed_total{cause="broken",node="` + n.Name + `",role="` + n.Role + `"}`:  n.ClosedBroken,
			`rwpool_connections_closed_total{cause="session",node="` + n.Name + `",role="` + n.Role + `"}`: n.ClosedSession,
			`rwpool_connections_reset_total{node="` + n.Name + `",role="` + n.Role + `"}`:                  n.Resets,
			// balance=weighted (the default) measures nothing
			`rwpool_node_balance_latency_seconds{node="` + n.Name + `",role="` + n.Role + `"}`: n.BalanceLatency.Nanoseconds(),
		} {
			if text := gatherText(t, reg); !strings.Contains(text, fmt.Sprintf("%s %d\n", metric, v)) {
				t.Errorf("no %s %d in:\n%s", metric, v, text)
			}
		}
	}
	histograms := 0 // rwpool_statement_duration_seconds: a series per node, kind and outcome seen
	for _, n := range s.Nodes {
		histograms += len(n.Latency)
	}
	if n := testutil.CollectAndCount(mustCollector(t, c.DB)); n != seriesWithoutLag+histograms {
		t.Errorf("%d series, want %d (%d metrics × 3 nodes, no lag, and %d histograms)", n, seriesWithoutLag+histograms, len(metricNames)-1, histograms)
	}
	if n, err := testutil.GatherAndCount(reg, metricNames...); err != nil || n != seriesWithoutLag+histograms {
		t.Errorf("GatherAndCount = %d, %v", n, err)
	}
	if n, err := testutil.GatherAndCount(reg, lagMetric); err != nil || n != 0 {
		t.Errorf("%d %s series with no lag known (%v), want none", n, lagMetric, err)
	}

	// replica2's trip cause is a dial error that echoes its DSN: neither the
	// password nor any other part of a DSN is exported.
	if s := mustStats(t, c.DB); s.Nodes[2].LastError == "" {
		t.Fatalf("replica2 tripped without a cause:\n%s", s)
	}
	text := gatherText(t, reg)
	for _, secret := range []string{sentinel, "postgres://", ".test:5432", "fake: dial"} {
		if strings.Contains(text, secret) {
			t.Errorf("metrics contain %q:\n%s", secret, text)
		}
	}
}

func mustCollector(t *testing.T, db *sql.DB, opts ...rwprom.Option) prometheus.Collector {
	t.Helper()
	c, err := rwprom.NewCollector(db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustStats(t *testing.T, db *sql.DB) rwpool.Snapshot {
	t.Helper()
	s, err := rwpool.Stats(db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewCollectorRejectsForeignDB(t *testing.T) {
	db, err := sql.Open(fakeDriverName, "not rwpool")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := rwprom.NewCollector(db); !errors.Is(err, rwpool.ErrNotRWPool) {
		t.Fatalf("NewCollector(foreign db) = %v, want ErrNotRWPool", err)
	}
	if _, err := rwprom.NewCollector(nil); err == nil {
		t.Fatal("NewCollector(nil): no error")
	}
	if _, err := rwprom.NewConnectorCollector(nil); err == nil {
		t.Fatal("NewConnectorCollector(nil): no error")
	}
}

func TestOptions(t *testing.T) {
	c := newCluster(t, "breaker=off")
	reg := newRegistry(t, c.DB, rwprom.WithNamespace("shop"), rwprom.WithConstLabels(prometheus.Labels{"db": "orders"}))
	mustQuery(t, c.DB, "SELECT 1")
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP shop_statements_served_total Statements and transactions routed to the node.
# TYPE shop_statements_served_total counter
shop_statements_served_total{db="orders",node="primary",role="primary"} 0
shop_statements_served_total{db="orders",node="replica1",role="replica"} 1
shop_statements_served_total{db="orders",node="replica2",role="replica"} 0
`), "shop_statements_served_total")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := testutil.GatherAndCount(reg); n != seriesWithoutLag+1 { // and replica1's histogram of reads
		t.Fatalf("%d series, want %d", n, seriesWithoutLag+1)
	}

	for _, l := range []string{"node", "role"} {
		if _, err := rwprom.NewCollector(c.DB, rwprom.WithConstLabels(prometheus.Labels{l: "x"})); err == nil {
			t.Errorf("const label %q accepted", l)
		}
	}
	if _, err := rwprom.NewCollector(c.DB, rwprom.WithNamespace("bad\xffname")); err == nil {
		t.Error("invalid namespace accepted")
	}
}

// TestTwoDatabases: two rwpool databases in one registry need distinct
// constant labels.
func TestTwoDatabases(t *testing.T) {
	a := newCluster(t, "breaker=off")
	b := newCluster(t, "breaker=off")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(mustCollector(t, a.DB, rwprom.WithConstLabels(prometheus.Labels{"db": "a"})))
	reg.MustRegister(mustCollector(t, b.DB, rwprom.WithConstLabels(prometheus.Labels{"db": "b"})))
	if err := reg.Register(mustCollector(t, b.DB, rwprom.WithConstLabels(prometheus.Labels{"db": "a"}))); err == nil {
		t.Fatal("a second collector with the same labels was registered")
	}
	mustQuery(t, b.DB, "SELECT 1")
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP rwpool_statements_served_total Statements and transactions routed to the node.
# TYPE rwpool_statements_served_total counter
rwpool_statements_served_total{db="a",node="primary",role="primary"} 0
rwpool_statements_served_total{db="a",node="replica1",role="replica"} 0
rwpool_statements_served_total{db="a",node="replica2",role="replica"} 0
rwpool_statements_served_total{db="b",node="primary",role="primary"} 0
rwpool_statements_served_total{db="b",node="replica1",role="replica"} 1
rwpool_statements_served_total{db="b",node="replica2",role="replica"} 0
`), "rwpool_statements_served_total")
	if err != nil {
		t.Fatal(err)
	}
}

func TestConnectorCollector(t *testing.T) {
	cfg := dsn.NewConfig()
	cfg.Driver = fakeDriverName
	cfg.Primary.DSN = nodeDSN(t, "primary")
	cfg.Replicas = []dsn.Node{{DSN: nodeDSN(t, "replica1"), Weight: 1}}
	cfg.Breaker = false
	conn, err := rwpool.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	col, err := rwprom.NewConnectorCollector(conn, rwprom.WithNamespace(""))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		mustQuery(t, db, "SELECT 1")
	}
	err = testutil.CollectAndCompare(col, strings.NewReader(`
# HELP statements_served_total Statements and transactions routed to the node.
# TYPE statements_served_total counter
statements_served_total{node="primary",role="primary"} 0
statements_served_total{node="replica1",role="replica"} 3
`), "statements_served_total")
	if err != nil {
		t.Fatal(err)
	}
}

// TestClosedDatabase: a collector of a closed database still answers, with
// its last state.
func TestClosedDatabase(t *testing.T) {
	c := newCluster(t, "breaker=off")
	reg := newRegistry(t, c.DB)
	mustQuery(t, c.DB, "SELECT 1")
	if err := c.DB.Close(); err != nil {
		t.Fatal(err)
	}
	if got := value(t, reg, "rwpool_statements_served_total", "replica1"); got != 1 {
		t.Fatalf("served by replica1 after Close = %g, want 1", got)
	}
	if got := value(t, reg, "rwpool_connections_open", "replica1"); got != 0 {
		t.Fatalf("open on replica1 after Close = %g, want 0", got)
	}
}

// TestLint runs the Prometheus metric linter over everything exported.
func TestLint(t *testing.T) {
	c := newCluster(t, "breaker=off")
	problems, err := testutil.CollectAndLint(mustCollector(t, c.DB))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestConcurrentScrapes scrapes while traffic runs, for the race detector.
func TestConcurrentScrapes(t *testing.T) {
	c := newCluster(t, "pool_size=4;check_interval=10ms")
	reg := newRegistry(t, c.DB)
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
	for range 20 {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if got := value(t, reg, "rwpool_statements_served_total", "replica1"); got != 200 {
		t.Fatalf("served by replica1 = %g, want 200", got)
	}
}

// TestCollectorReplication: over a fake PostgreSQL whose replica1 replays
// 42 s behind and whose replica2 reports writable, the lag of both
// replicas is exported (not the primary's, which is never known),
// replica1 is lagging (max_lag=10s) and replica2's role is flagged; no
// position nor status error text is exported.
func TestCollectorReplication(t *testing.T) {
	pgFake.SetStatus(nodeDSN(t, "primary"), metricstest.Status{LSN: "0/2000", ReplayAge: -1})
	pgFake.SetStatus(nodeDSN(t, "replica1"), metricstest.Status{ReadOnly: true, LSN: "0/1000", ReplayAge: 42})
	pgFake.SetStatus(nodeDSN(t, "replica2"), metricstest.Status{LSN: "0/2000", ReplayAge: -1})
	c := metricstest.NewCluster(t, pgFake, "check_interval=10ms;max_lag=10s")
	reg := newRegistry(t, c.DB)
	waitFor(t, c.DB, "replica1 lagging, replica2's lag known and its role flagged", func(s rwpool.Snapshot) bool {
		return s.Nodes[1].State == rwpool.Lagging && s.Nodes[2].LagKnown && s.Nodes[2].RoleMismatch()
	})
	// replica1 is behind every sample of the primary's history, so its
	// lag is the standby's own replay age, 42 s; replica2 has the
	// primary's newest position: lag 0.
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP rwpool_node_available 1 if routing may choose the node, 0 while it is unavailable or lagging.
# TYPE rwpool_node_available gauge
rwpool_node_available{node="primary",role="primary"} 1
rwpool_node_available{node="replica1",role="replica"} 0
rwpool_node_available{node="replica2",role="replica"} 1
# HELP rwpool_node_behind 1 while the replica, with no writable primary (a failover under way), has applied less than another available replica and serves no read, else 0.
# TYPE rwpool_node_behind gauge
rwpool_node_behind{node="primary",role="primary"} 0
rwpool_node_behind{node="replica1",role="replica"} 0
rwpool_node_behind{node="replica2",role="replica"} 0
# HELP rwpool_node_lagging 1 while the replica is out of reads because its replication lag exceeds max_lag, else 0.
# TYPE rwpool_node_lagging gauge
rwpool_node_lagging{node="primary",role="primary"} 0
rwpool_node_lagging{node="replica1",role="replica"} 1
rwpool_node_lagging{node="replica2",role="replica"} 0
# HELP rwpool_node_rejoining 1 while the node, after a promotion rwpool followed, is not yet seen following the new primary and serves no read, else 0.
# TYPE rwpool_node_rejoining gauge
rwpool_node_rejoining{node="primary",role="primary"} 0
rwpool_node_rejoining{node="replica1",role="replica"} 0
rwpool_node_rejoining{node="replica2",role="replica"} 0
# HELP rwpool_node_role_mismatch 1 if the node reports a role its configuration does not expect (a writable replica or a read-only primary), else 0.
# TYPE rwpool_node_role_mismatch gauge
rwpool_node_role_mismatch{node="primary",role="primary"} 0
rwpool_node_role_mismatch{node="replica1",role="replica"} 0
rwpool_node_role_mismatch{node="replica2",role="replica"} 1
# HELP rwpool_replication_lag_seconds Replication lag of the replica behind the primary, in seconds, as last measured (no series until measured, none for the primary).
# TYPE rwpool_replication_lag_seconds gauge
rwpool_replication_lag_seconds{node="replica1",role="replica"} 42
rwpool_replication_lag_seconds{node="replica2",role="replica"} 0
`), "rwpool_node_available", "rwpool_node_lagging", "rwpool_node_role_mismatch", lagMetric)
	if err != nil {
		t.Fatalf("%v\nsnapshot:\n%s", err, mustStats(t, c.DB))
	}
	if n, _ := testutil.GatherAndCount(reg); n != seriesWithoutLag+2 {
		t.Errorf("%d series, want %d (every metric × 3 nodes, but no lag for the primary)", n, seriesWithoutLag+2)
	}

	// A status that cannot be parsed is a status error; its text, which
	// quotes the answer, is not exported, nor is any position.
	pgFake.SetStatus(c.Rep2, metricstest.Status{LSN: "bogus-lsn-4e1d", ReplayAge: -1})
	waitFor(t, c.DB, "a status error on replica2", func(s rwpool.Snapshot) bool {
		return strings.Contains(s.Nodes[2].StatusError, "bogus-lsn-4e1d")
	})
	text := gatherText(t, reg)
	for _, secret := range []string{"bogus-lsn-4e1d", "0/1000", "0/2000", sentinel, "postgres://"} {
		if strings.Contains(text, secret) {
			t.Errorf("metrics contain %q:\n%s", secret, text)
		}
	}
	if problems, err := testutil.CollectAndLint(mustCollector(t, c.DB)); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v, %v", problems, err)
	}
}
