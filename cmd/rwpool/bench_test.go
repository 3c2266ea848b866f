package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/testcluster"
)

func TestBenchFlags(t *testing.T) {
	o, st, done := parseBenchFlags(nil, nil, nil)
	if done || st != 0 {
		t.Fatalf("defaults: done %v, status %d", done, st)
	}
	if o.duration != 3*time.Second || o.warmup != 500*time.Millisecond || o.rounds != 5 ||
		!slices.Equal(o.goroutines, []int{1, 8, 64}) || !slices.Equal(o.drivers, []string{"postgres", "mysql"}) ||
		!slices.Equal(o.variants, []string{"bare", "rwpool", "dbresolver", "nap", "pgpool", "haproxy", "bare-again"}) ||
		!slices.Equal(o.faults, []string{"kill", "hang", "hang-hedged", "slow"}) || o.chartsDir != "" || o.faultGoroutines != 8 ||
		o.faultTimeout != 5*time.Second || o.faultWindow != 8*time.Second || o.faultSteady != time.Second ||
		o.faultPace != 10*time.Millisecond || !slices.Equal(o.failovers, []string{"switchover", "promotion"}) ||
		!slices.Equal(o.failoverVariants, []string{"bare", "dbresolver", "nap", "rwpool", "rwpool-wait", "rwpool-follow", "rwpool-follow-wait", "pgpool", "haproxy"}) ||
		o.failoverWindow != 8*time.Second || o.noThroughput || o.splice || o.clusterDir != "/tmp/rwpool-bench" || o.pgPort != 55632 || o.myPort != 55506 ||
		o.patroni != nil || o.patroniEnv != "" {
		t.Errorf("defaults: %+v", o)
	}
	// The Patroni scenarios need a cluster of their own: asked for, not run by default.
	o, st, done = parseBenchFlags([]string{"--patroni", "crash,switchover", "--patroni-env", "/p/env"}, nil, nil)
	if done || st != 0 || !slices.Equal(o.patroni, []string{"crash", "switchover"}) || o.patroniEnv != "/p/env" {
		t.Errorf("--patroni: done %v, status %d, %v %q", done, st, o.patroni, o.patroniEnv)
	}
	if o, _, _ = parseBenchFlags([]string{"--patroni", "none"}, nil, nil); o.patroni != nil {
		t.Errorf("--patroni none: %v", o.patroni)
	}
	args := []string{"--goroutines", "2, 16", "--drivers", "mysql", "--variants", "rwpool,rwpool-2r", "--faults", "none",
		"--duration", "1s", "--rounds", "5", "--env", "/x/env", "--markdown", "B.md", "--no-memory",
		"--failovers", "none", "--failover-variants", "rwpool-wait,bare", "--failover-window", "3s", "--no-throughput", "--splice"}
	o, st, done = parseBenchFlags(args, nil, nil)
	if done || st != 0 {
		t.Fatalf("status %d", st)
	}
	if !slices.Equal(o.goroutines, []int{2, 16}) || !slices.Equal(o.drivers, []string{"mysql"}) ||
		!slices.Equal(o.variants, []string{"rwpool", "rwpool-2r"}) || o.faults != nil || o.duration != time.Second ||
		o.rounds != 5 || o.envFile != "/x/env" || o.markdown != "B.md" || !o.noMemory || !slices.Equal(o.args, args) ||
		o.failovers != nil || !slices.Equal(o.failoverVariants, []string{"rwpool-wait", "bare"}) || o.failoverWindow != 3*time.Second ||
		!o.noThroughput || !o.splice {
		t.Errorf("parsed: %+v", o)
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--goroutines", "0"}, `--goroutines: "0" is not a number from 1 to 1024`},
		{[]string{"--goroutines", "a,8"}, `--goroutines: "a"`},
		{[]string{"--goroutines", ","}, "no concurrency level"},
		{[]string{"--drivers", "oracle"}, `--drivers: unknown "oracle" (have postgres, mysql)`},
		{[]string{"--variants", "bare,sqlx"}, `--variants: unknown "sqlx"`},
		{[]string{"--faults", "flood"}, `--faults: unknown "flood"`},
		{[]string{"--failovers", "crash"}, `--failovers: unknown "crash" (have switchover, promotion)`},
		{[]string{"--failover-variants", "rwpool-hedge"}, `--failover-variants: unknown "rwpool-hedge"`},
		{[]string{"--patroni", "promotion"}, `--patroni: unknown "promotion" (have crash, switchover)`},
		{[]string{"--failover-variants", ","}, "--failover-variants: no variant given"},
		{[]string{"--failover-window", "1s"}, "--failover-window must be at least 2s"},
		{[]string{"--splice"}, "--splice needs --markdown FILE"},
		{[]string{"--charts", "d"}, "--charts needs --markdown FILE"},
		{[]string{"--duration", "0s"}, "--duration must be positive"},
		{[]string{"--warmup", "-1s"}, "--warmup must not be negative"},
		{[]string{"--rounds", "0"}, "--rounds must be at least 1"},
		{[]string{"--fault-window", "1s"}, "--fault-window must be at least 2s"},
		{[]string{"--fault-timeout", "0s"}, "must be positive"},
		{[]string{"--fault-pace", "-1ms"}, "--fault-pace must not be negative"},
		{[]string{"--fault-goroutines", "0"}, "--fault-goroutines must be between 1 and 1024"},
		{[]string{"--pg-port", "70000"}, "must be ports"},
		{[]string{"--env", "f", "--keep-cluster"}, "--keep-cluster has no meaning with --env"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
	} {
		st, out, errb := runCmd(t, append([]string{"bench"}, tc.args...)...)
		if st != exitUsage || out != "" || strings.Count(errb, "\n") != 1 || !strings.Contains(errb, tc.want) ||
			!strings.HasPrefix(errb, "rwpool bench: ") {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want %q", tc.args, st, out, errb, tc.want)
		}
	}
}

// TestTimeToMostlyNormal: the slow replica's rule allows 1 % of slow
// reads per second, no failure, and needs reads in every second.
func TestTimeToMostlyNormal(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// steady returns good 5ms reads every 5ms in [from, to): 200 a second.
	steady := func(from, to int) []sample {
		var s []sample
		for t := from; t+5 <= to; t += 5 {
			s = append(s, sample{start: ms(t), end: ms(t + 5)})
		}
		return s
	}
	slow := func(at int) sample { return sample{start: ms(at), end: ms(at + 200)} }
	const fault, end = 2000, 10000
	for _, tc := range []struct {
		name    string
		samples []sample
		want    time.Duration
		ok      bool
	}{
		{"no disruption", steady(0, end), 0, true},
		{"one slow read every 500ms is normal", append(steady(0, end), slow(2100), slow(2600), slow(3100), slow(3600)), 0, true},
		{"three in one second are not", append(steady(0, end), slow(2950), slow(3000), slow(3050)), ms(1000), true},
		{"a failure", append(steady(0, end), sample{start: ms(4000), end: ms(4001), failed: true}), ms(2100), true},
		{"a failure in the last second", append(steady(0, end), sample{start: ms(9500), end: ms(9501), failed: true}), 0, false},
		{"a second without reads", append(steady(0, 4000), steady(5000, end)...), ms(2100), true},
		{"no reads in the last second", steady(0, 8900), 0, false},
	} {
		got, ok := timeToMostlyNormal(tc.samples, ms(fault), ms(end))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: timeToMostlyNormal = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var d []time.Duration
		for _, x := range xs {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		xs   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 50, 7 * time.Millisecond},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(1, 2), 50, time.Millisecond},
		{ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{ms(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{hundred, 50, 50 * time.Millisecond},
		{hundred, 99, 99 * time.Millisecond},
		{hundred, 100, 100 * time.Millisecond},
		{hundred, 1, time.Millisecond},
		{append(hundred, 5*time.Second), 99, 100 * time.Millisecond}, // 101 values: rank ceil(99.99) = 100
	} {
		if got := percentile(tc.xs, tc.p); got != tc.want {
			t.Errorf("percentile(%d values, %g) = %v, want %v", len(tc.xs), tc.p, got, tc.want)
		}
	}
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median odd = %g", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median even = %g", m)
	}
	if m := median(nil); m != 0 {
		t.Errorf("median none = %g", m)
	}
}

func TestTimeToNormal(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// steady returns good 5ms reads every 10ms in [from, to).
	steady := func(from, to int) []sample {
		var s []sample
		for t := from; t+5 <= to; t += 10 {
			s = append(s, sample{start: ms(t), end: ms(t + 5)})
		}
		return s
	}
	const fault, end = 2000, 10000
	for _, tc := range []struct {
		name    string
		samples []sample
		want    time.Duration
		ok      bool
	}{
		{"no disruption", steady(0, end), 0, true},
		{"bad before the fault only", append(steady(0, end), sample{start: ms(100), end: ms(900), failed: true}), 0, true},
		{"failures until 3.5s", append(steady(0, end),
			sample{start: ms(2100), end: ms(2101), failed: true}, sample{start: ms(3400), end: ms(3500), failed: true}), ms(1500), true},
		{"a slow read in flight at the fault", append(steady(0, end), sample{start: ms(1900), end: ms(2400)}), ms(400), true},
		{"99ms is normal, 100ms is not", append(steady(0, end),
			sample{start: ms(4000), end: ms(4099)}, sample{start: ms(5000), end: ms(5100)}), ms(3100), true},
		{"a read timing out at 7s", append(steady(0, end), sample{start: ms(2000), end: ms(7000), failed: true}), ms(5000), true},
		{"bad until 9.1s: less than 1s of normal traffic", append(steady(0, end), sample{start: ms(9000), end: ms(9100), failed: true}), 0, false},
		{"bad until exactly 1s before the end", append(steady(0, end), sample{start: ms(8900), end: ms(9000), failed: true}), ms(7000), true},
		{"a read still running at the end", append(steady(0, end), sample{start: ms(2500), end: ms(end)}), 0, false},
		{"a read ending after the end counts as ending there", append(steady(0, end), sample{start: ms(2500), end: ms(30000)}), 0, false},
		{"reads started after the end do not count", append(steady(0, end), sample{start: ms(end + 10), end: ms(end + 500), failed: true}), 0, true},
	} {
		got, ok := timeToNormal(tc.samples, ms(fault), ms(end))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: timeToNormal = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	for _, r := range []struct {
		row  faultRow
		want string
	}{
		{faultRow{recovered: true}, "0 (no disruption)"},
		{faultRow{recovered: true, recovery: 1500 * time.Millisecond}, "1.50s"},
		{faultRow{}, "never (within window)"},
	} {
		if got := r.row.recoveryText(); got != r.want {
			t.Errorf("recoveryText = %q, want %q", got, r.want)
		}
	}
}

// TestBenchDrivers: the bench reaches each engine of an env file through
// one driver, lib/pq or go-sql-driver/mysql (see internal/testcluster for
// the env file itself).
func TestBenchDrivers(t *testing.T) {
	cl := &cluster{env: map[string]string{"RWPOOL_PG_PRIMARY": "127.0.0.1:1", "RWPOOL_PG_REPLICAS": "127.0.0.1:2,127.0.0.1:3",
		"RWPOOL_MY_PRIMARY": "127.0.0.1:4", "RWPOOL_MY_REPLICAS": "127.0.0.1:5", "RWPOOL_DB_USER": "app",
		"RWPOOL_DB_PASSWORD": "pw", "RWPOOL_DB_NAME": "db"}}
	pg, my := cl.driver("postgres"), cl.driver("mysql")
	if pg.NodeDSN(pg.Replicas[1]) != "host=127.0.0.1 port=3 user=app password=pw dbname=db sslmode=disable connect_timeout=5" {
		t.Errorf("postgres DSN %q", pg.NodeDSN(pg.Replicas[1]))
	}
	if my.NodeDSN(my.Primary) != "app:pw@tcp(127.0.0.1:4)/db?timeout=5s" || len(my.Replicas) != 1 {
		t.Errorf("mysql DSN %q, replicas %v", my.NodeDSN(my.Primary), my.Replicas)
	}
	if got := rwpoolDSN(pg, 2); got != "driver=postgres;primary='"+pg.NodeDSN(pg.Primary)+"';replica='"+
		pg.NodeDSN("127.0.0.1:2")+"';replica='"+pg.NodeDSN("127.0.0.1:3")+"'" {
		t.Errorf("rwpool DSN %q", got)
	}
}

// A proxy that cannot meet a scenario gets a row saying why, and nothing
// runs (no cluster is touched).
func TestFaultProxyNotApplicable(t *testing.T) {
	for _, name := range []string{"hang-hedged", "slow"} {
		sc, ok := faultScenarioNamed(name)
		if !ok {
			t.Fatalf("no scenario %s", name)
		}
		var kinds []string
		for _, v := range sc.variants {
			if v.na == "" {
				continue
			}
			kinds = append(kinds, v.kind)
			row, err := runFault(context.Background(), benchOpts{}, nil, benchDriver{Backend: &testcluster.Backend{Driver: "postgres"}}, sc, v)
			if err != nil || !strings.HasPrefix(row.skip, "n/a: ") {
				t.Errorf("%s, %s: row %+v, %v; want an n/a row", name, v.kind, row, err)
			}
		}
		if !slices.Equal(kinds, []string{"pgpool", "haproxy"}) {
			t.Errorf("%s: n/a rows for %v, want pgpool and haproxy", name, kinds)
		}
	}
}
