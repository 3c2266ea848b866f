package rwexpvar_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/metricstest"
	rwexpvar "github.com/rwpool/rwpool/metrics/expvar"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const fakeDriverName = "rwexpvar-test-fake"

var (
	fake = metricstest.Register(fakeDriverName)
	// pgFake is the same fake under a name containing "postgres": rwpool
	// sends its nodes the PostgreSQL status query, which they answer as
	// SetStatus says.
	pgFake = metricstest.Register("rwexpvar-test-postgres-fake")
)

// varJSON is the JSON that Publish's variable renders.
type varJSON struct {
	Nodes []struct {
		Name                string     `json:"name"`
		Role                string     `json:"role"`
		RoleSince           *time.Time `json:"role_since"`
		Weight              int        `json:"weight"`
		Available           bool       `json:"available"`
		State               string     `json:"state"`
		Since               time.Time  `json:"since"`
		UnavailableSince    *time.Time `json:"unavailable_since"`
		Trips               int64      `json:"trips"`
		LastError           string     `json:"last_error"`
		ProbeLatencySeconds float64    `json:"probe_latency_seconds"`
		MaxOpen             int        `json:"max_open"`
		Open                int        `json:"open"`
		Idle                int        `json:"idle"`
		InUse               int        `json:"in_use"`
		Waiting             int        `json:"waiting"`
		Served              int64      `json:"served"`
		Errors              int64      `json:"errors"`
		WaitCount           int64      `json:"wait_count"`
		WaitSeconds         float64    `json:"wait_seconds"`
		Replays             int64      `json:"replays"`
		Fallbacks           int64      `json:"fallbacks"`
		CausalReads         int64      `json:"causal_reads"`
		CausalWaits         int64      `json:"causal_waits"`
		CausalWaitSeconds   float64    `json:"causal_wait_seconds"`
		CausalFallbacks     int64      `json:"causal_fallbacks"`
		TooStale            int64      `json:"too_stale"`
		Hedges              int64      `json:"hedges"`
		HedgeWins           int64      `json:"hedge_wins"`
		HedgesRefused       int64      `json:"hedges_refused"`
		Dials               int64      `json:"dials"`
		ClosedSession       int64      `json:"closed_session"`
		ClosedBroken        int64      `json:"closed_broken"`
		ClosedExpired       int64      `json:"closed_expired"`
		Resets              int64      `json:"resets"`
		LagSeconds          *float64   `json:"lag_seconds"`
		LagKnown            bool       `json:"lag_known"`
		Position            string     `json:"position"`
		Reports             string     `json:"reports"`
		RoleMismatch        bool       `json:"role_mismatch"`
		Rejoining           bool       `json:"rejoining"`
		Behind              bool       `json:"behind"`
		Source              string     `json:"source"`
		Draining            bool       `json:"draining"`
		StatusError         string     `json:"status_error"`
		FailoverWaits       int64      `json:"failover_waits"`
		FailoverWaitSeconds float64    `json:"failover_wait_seconds"`
		Latency             []struct {
			Kind       string  `json:"kind"`
			Outcome    string  `json:"outcome"`
			Count      int64   `json:"count"`
			SumSeconds float64 `json:"sum_seconds"`
			P50Seconds float64 `json:"p50_seconds"`
			P99Seconds float64 `json:"p99_seconds"`
		} `json:"latency"`
	} `json:"nodes"`
	Discovery []struct {
		Name      string            `json:"name"`
		Source    string            `json:"source"`
		Members   int64             `json:"members"`
		Rounds    int64             `json:"rounds"`
		Failures  int64             `json:"failures"`
		LastError string            `json:"last_error"`
		LastOK    time.Time         `json:"last_ok"`
		Pending   map[string]string `json:"pending"`
	} `json:"discovery"`
}

var seq atomic.Int64

// varName returns a name no other test (nor another run of this one, with
// -count) publishes: expvar is process-global and never forgets.
func varName(t *testing.T) string {
	return fmt.Sprintf("rwexpvar_test_%s_%d", t.Name(), seq.Add(1))
}

func read(t *testing.T, name string) (varJSON, string) {
	t.Helper()
	v := expvar.Get(name)
	if v == nil {
		t.Fatalf("expvar %q not published", name)
	}
	raw := v.String()
	var got varJSON
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("expvar %q: %v\n%s", name, err, raw)
	}
	return got, raw
}

// waitVar reads the variable until ok accepts it, for at most 10 s.
func waitVar(t *testing.T, name, what string, ok func(varJSON) bool) (varJSON, string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, raw := read(t, name)
		if ok(got) {
			return got, raw
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s:\n%s", what, raw)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPublish(t *testing.T) {
	c := metricstest.NewCluster(t, fake, "pool_size=7;breaker=off")
	name := varName(t)
	if err := rwexpvar.Publish(name, c.DB); err != nil {
		t.Fatal(err)
	}
	// Reads go to replica1 (replica2 is a spare of weight 0), the write to
	// the primary.
	for range 3 {
		metricstest.MustQuery(t, c.DB, "SELECT 1")
	}
	metricstest.MustExec(t, c.DB, "DELETE FROM t")

	// The variable reads a fresh Snapshot each time.
	got, raw := read(t, name)
	if len(got.Nodes) != 3 {
		t.Fatalf("%d nodes, want 3:\n%s", len(got.Nodes), raw)
	}
	p, r, spare := got.Nodes[0], got.Nodes[1], got.Nodes[2]
	if p.Name != "primary" || p.Role != "primary" || p.Weight != 1 ||
		r.Name != "replica1" || r.Role != "replica" || r.Weight != 1 ||
		spare.Name != "replica2" || spare.Role != "replica" || spare.Weight != 0 {
		t.Fatalf("names, roles, weights:\n%s", raw)
	}
	if p.Served != 1 || r.Served != 3 || spare.Served != 0 || p.MaxOpen != 7 || r.MaxOpen != 7 ||
		!p.Available || p.State != "available" || p.Since.IsZero() || p.UnavailableSince != nil ||
		r.Open != 1 || r.Idle != 1 || r.InUse != 0 || p.Errors != 0 || p.Trips != 0 || p.LastError != "" {
		t.Fatalf("values:\n%s", raw)
	}
	// The statements' times: replica1's three reads, the primary's write,
	// nothing on the spare.
	if l := r.Latency; len(l) != 1 || l[0].Kind != "read" || l[0].Outcome != "ok" || l[0].Count != 3 ||
		l[0].SumSeconds <= 0 || l[0].P50Seconds <= 0 || l[0].P99Seconds < l[0].P50Seconds {
		t.Errorf("replica1's latency:\n%s", raw)
	}
	if l := p.Latency; len(l) != 1 || l[0].Kind != "write" || l[0].Count != 1 || spare.Latency != nil {
		t.Errorf("the primary's and the spare's latency:\n%s", raw)
	}
	if strings.Contains(raw, "last_error") || strings.Contains(raw, "unavailable_since") ||
		strings.Contains(raw, "lag_seconds") || strings.Contains(raw, "status_error") {
		t.Errorf("empty optional fields rendered:\n%s", raw)
	}
	// With breaker=off (and a driver without positions) no status is read:
	// no lag, no position, no reported role.
	for _, n := range got.Nodes {
		if n.LagSeconds != nil || n.LagKnown || n.Position != "" || n.Reports != "" || n.RoleMismatch {
			t.Errorf("replication fields of %s without a status:\n%s", n.Name, raw)
		}
	}
	for _, key := range []string{`"lag_known":false`, `"position":""`, `"reports":""`, `"role_mismatch":false`} {
		if strings.Count(raw, key) != 3 {
			t.Errorf("%s not rendered for every node:\n%s", key, raw)
		}
	}
	// The DSNs never appear.
	for _, secret := range []string{metricstest.Sentinel, "postgres://", ".test:5432"} {
		if strings.Contains(raw, secret) {
			t.Errorf("expvar shows %q:\n%s", secret, raw)
		}
	}

	// Publishing a name twice is an error, not expvar's panic.
	if err := rwexpvar.Publish(name, c.DB); err == nil || !strings.Contains(err.Error(), "already published") {
		t.Fatalf("second Publish(%q) = %v", name, err)
	}
	taken := varName(t)
	expvar.NewInt(taken)
	if err := rwexpvar.Publish(taken, c.DB); err == nil {
		t.Fatal("Publish over another package's variable: no error")
	}

	// A closed database still answers, with its last state.
	if err := c.DB.Close(); err != nil {
		t.Fatal(err)
	}
	got, raw = read(t, name)
	if len(got.Nodes) != 3 || got.Nodes[1].Served != 3 || got.Nodes[1].Open != 0 || got.Nodes[0].Open != 0 {
		t.Fatalf("after Close:\n%s", raw)
	}
}

// TestPublishReplication: over a fake PostgreSQL the health checker reads
// every node's status; the replicas' lag, every position and every
// reported role are shown, a replica that reports writable is flagged,
// one behind max_lag is lagging, and a failed status query is shown.
func TestPublishReplication(t *testing.T) {
	pgFake.SetStatus(metricstest.NodeDSN(t, "primary"), metricstest.Status{LSN: "0/2000", ReplayAge: -1})
	pgFake.SetStatus(metricstest.NodeDSN(t, "replica1"), metricstest.Status{ReadOnly: true, LSN: "0/1000", ReplayAge: 42})
	pgFake.SetStatus(metricstest.NodeDSN(t, "replica2"), metricstest.Status{LSN: "0/2000", ReplayAge: -1})
	c := metricstest.NewCluster(t, pgFake, "check_interval=10ms;max_lag=10s")
	name := varName(t)
	if err := rwexpvar.Publish(name, c.DB); err != nil {
		t.Fatal(err)
	}
	got, raw := waitVar(t, name, "replica1 lagging, replica2's lag known and its role flagged", func(v varJSON) bool {
		return v.Nodes[1].State == "lagging" && v.Nodes[2].LagKnown && v.Nodes[2].RoleMismatch && v.Nodes[0].Position != ""
	})
	p, r1, r2 := got.Nodes[0], got.Nodes[1], got.Nodes[2]
	if p.LagSeconds != nil || p.LagKnown || p.Position != "0/2000" || p.Reports != "writable" || p.RoleMismatch || p.StatusError != "" {
		t.Errorf("primary:\n%s", raw)
	}
	// replica1 is behind every sample of the primary's history: its lag is
	// its own replay age. It is out of reads, but not unavailable.
	if r1.LagSeconds == nil || *r1.LagSeconds != 42 || r1.Position != "0/1000" || r1.Reports != "read-only" ||
		r1.RoleMismatch || r1.StatusError != "" || r1.Available || r1.UnavailableSince != nil {
		t.Errorf("replica1:\n%s", raw)
	}
	if r2.LagSeconds == nil || *r2.LagSeconds != 0 || r2.Reports != "writable" || !r2.RoleMismatch {
		t.Errorf("replica2:\n%s", raw)
	}
	if strings.Count(raw, "lag_seconds") != 2 {
		t.Errorf("lag_seconds not rendered twice (for the replicas only):\n%s", raw)
	}

	// A status that cannot be parsed is shown as a status error.
	pgFake.SetStatus(c.Rep2, metricstest.Status{LSN: "bogus-lsn-4e1d", ReplayAge: -1})
	waitVar(t, name, "a status error on replica2", func(v varJSON) bool {
		return strings.Contains(v.Nodes[2].StatusError, "bogus-lsn-4e1d")
	})
}

func TestPublishRejects(t *testing.T) {
	c := metricstest.NewCluster(t, fake, "breaker=off")
	foreignDB, err := sql.Open(fakeDriverName, "not rwpool")
	if err != nil {
		t.Fatal(err)
	}
	defer foreignDB.Close()
	foreign, nilDB := varName(t), varName(t)
	if err := rwexpvar.Publish(foreign, foreignDB); !errors.Is(err, rwpool.ErrNotRWPool) {
		t.Errorf("foreign *sql.DB: %v, want ErrNotRWPool", err)
	}
	if err := rwexpvar.Publish(nilDB, nil); err == nil {
		t.Error("nil *sql.DB: no error")
	}
	if err := rwexpvar.Publish("", c.DB); err == nil {
		t.Error("empty name: no error")
	}
	for _, name := range []string{foreign, nilDB, ""} {
		if expvar.Get(name) != nil {
			t.Errorf("%q published after an error", name)
		}
	}
}

// TestPublishUnavailable: a node whose dial error echoes its DSN trips;
// its state, the time since when it is unavailable and its last error are
// shown, the DSN's password is not.
func TestPublishUnavailable(t *testing.T) {
	c := metricstest.NewCluster(t, fake, "check_interval=20ms")
	name := varName(t)
	if err := rwexpvar.Publish(name, c.DB); err != nil {
		t.Fatal(err)
	}
	fake.SetDown(c.Primary, true)
	got, raw := waitVar(t, name, "the primary to trip and replica1 to answer a probe", func(v varJSON) bool {
		return !v.Nodes[0].Available && v.Nodes[1].ProbeLatencySeconds > 0
	})
	p, r := got.Nodes[0], got.Nodes[1]
	if p.State != "unavailable" || p.Trips != 1 || p.UnavailableSince == nil || !p.UnavailableSince.Equal(p.Since) ||
		!strings.Contains(p.LastError, "connection refused") {
		t.Errorf("tripped primary:\n%s", raw)
	}
	// rwpool redacts the password of a DSN quoted in an error.
	if strings.Contains(raw, metricstest.Sentinel) {
		t.Errorf("expvar shows the password:\n%s", raw)
	}
	if !r.Available || r.State != "available" || r.Trips != 0 || r.LastError != "" || r.UnavailableSince != nil {
		t.Errorf("replica1:\n%s", raw)
	}

	// Back up: available again, no unavailable_since, the last error kept.
	fake.SetDown(c.Primary, false)
	got, raw = waitVar(t, name, "the primary to recover", func(v varJSON) bool { return v.Nodes[0].Available })
	if p := got.Nodes[0]; p.State != "available" || p.UnavailableSince != nil || p.Trips != 1 || p.LastError == "" {
		t.Errorf("recovered primary:\n%s", raw)
	}
}
