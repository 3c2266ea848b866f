package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/testcluster"
)

// TestBenchSmoke runs the whole bench command, with tiny durations, against
// the running test clusters (--env), including a hang of replica1 of each
// engine for every fault variant and a short read-after-write run at the
// normal pace, and checks the report.
func TestBenchSmoke(t *testing.T) {
	pw := testcluster.Backends(t)[0].Password // skips without the clusters, fails under CI=true
	dir := os.Getenv("RWPOOL_CLUSTER_DIR")
	if dir == "" {
		t.Fatal("RWPOOL_CLUSTER_DIR is not set: source the cluster's env file")
	}
	md := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	st, out, errb := runCmd(t, "bench", "--env", filepath.Join(dir, "env"), "--variants", "bare,rwpool,dbresolver,nap,bare-again",
		"--duration", "200ms", "--warmup", "50ms", "--rounds", "1", "--goroutines", "1,4",
		"--faults", "hang", "--fault-steady", "300ms", "--fault-window", "2s", "--fault-timeout", "1s", "--failovers", "none",
		"--read-after-write", "normal", "--raw-variants", "bare,rwpool", "--raw-rounds", "1", "--raw-duration", "300ms", "--raw-warmup", "100ms",
		"--markdown", md)
	if st != exitOK || errb != "" {
		t.Fatalf("status %d, stderr %q, stdout:\n%s", st, errb, out)
	}
	i := strings.Index(out, "=== rwpool bench")
	if i < 0 {
		t.Fatalf("no report:\n%s", out)
	}
	report := out[i:]
	t.Logf("report:\n%s", report)
	if strings.Contains(out, pw) {
		t.Errorf("the password is shown:\n%s", out)
	}
	for _, re := range []string{
		`(?m)^PostgreSQL: +PostgreSQL \d+`, `(?m)^MariaDB: +\d+\.\d+`, `(?m)^github.com/lib/pq: +v\d`,
		`SELECT 1 through lib/pq → PostgreSQL: median \(min–max\) of 1 rounds of 200ms`,
		`SELECT 1 through go-sql-driver/mysql → MariaDB: median \(min–max\) of 1 rounds of 200ms`,
		`(?m)^ +4 rwpool +\d+ +[0-9.]+(µs|ms) +[0-9.]+(µs|ms) +\d+\.\d +0$`,
		`(?m)^ +1 +\d+\.\d\d +\d+\.\d\d +(within|SLOWER than the noise floor) +\d+\.\d\d +\d+\.\d\d +(meets|MISSES) target$`,
		`(?m)^ +4 bare \(again\) +\d+\.\d\d +\d+\.\d\d +\d+\.\d\d +\d+\.\d\d +[-+]\d+\.\d$`,
		`Latency distribution at 4 goroutines, go-sql-driver/mysql → MariaDB`,
		`(?m)^ +4 +\d+ +\d+ +[0-9.]+(µs|ms) +\d+ +\d+ of 100$`,
		`replica1 hung \(SIGSTOP\), 1s read deadlines, lib/pq → PostgreSQL`,
		`replica1 hung \(SIGSTOP\), 1s read deadlines, go-sql-driver/mysql → MariaDB`,
		`(?m)^  nap +\d+ +\d+ +\d+ `,
		`open \*sql\.Conn, rwpool \(virtual: nothing dialled\) +[0-9.]+ KiB`,
		`Read after write across processes, replication at its normal pace, lib/pq → PostgreSQL: median \(min–max\) of 1 round of 300ms`,
		`Read after write across processes, replication at its normal pace, go-sql-driver/mysql → MariaDB`,
		`(?m)^  rwpool +\d+ +\d+\.?\d*% +0 +0% .* 0$`,
	} {
		if !regexp.MustCompile(re).MatchString(report) {
			t.Errorf("report does not match %q", re)
		}
	}
	// Per engine, every variant (bare twice) ran without errors in the
	// throughput part.
	if n := len(regexp.MustCompile(`(?m)^ +[14] (bare|rwpool|dbresolver|nap|bare \(again\)) +\d+ .* 0$`).FindAllString(report, -1)); n != 20 {
		t.Errorf("%d error-free throughput rows, want 20", n)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Benchmarks", "## Machine", "## Faults", "## Read after write across processes", "## Memory", "benchstat old.txt new.txt"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	// The charts, next to the Markdown file, valid and shown.
	for _, name := range []string{"throughput-postgres.svg", "p99-postgres.svg", "throughput-mysql.svg", "p99-mysql.svg",
		"fault-hang-postgres.svg", "fault-hang-mysql.svg", "read-after-write-share-postgres.svg", "read-after-write-latency-postgres.svg",
		"read-after-write-share-mysql.svg", "read-after-write-latency-mysql.svg"} {
		svg, err := os.ReadFile(filepath.Join(filepath.Dir(md), "benchmarks", name))
		if err != nil {
			t.Error(err)
			continue
		}
		if root, _ := svgRoot(t, name, svg); root != "svg" {
			t.Errorf("%s: root element %q", name, root)
		}
		if !strings.Contains(string(b), "](benchmarks/"+name+")") {
			t.Errorf("markdown does not show %s", name)
		}
	}
}

// TestBenchSlowAndHedgedSmoke runs the hedged hang on MariaDB and the slow
// replica on PostgreSQL with short windows, for rwpool's variants only,
// and checks what hedging and balance=adaptive must show.
func TestBenchSlowAndHedgedSmoke(t *testing.T) {
	testcluster.Backends(t) // skips without the clusters, fails under CI=true
	dir := os.Getenv("RWPOOL_CLUSTER_DIR")
	if dir == "" {
		t.Fatal("RWPOOL_CLUSTER_DIR is not set: source the cluster's env file")
	}
	cl, err := loadCluster(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	o, st, done := parseBenchFlags([]string{"--variants", "rwpool", "--fault-steady", "500ms", "--fault-window", "2s", "--warmup", "100ms"}, nil, nil)
	if done {
		t.Fatalf("flags: status %d", st)
	}
	rep := &benchReport{opts: o}
	for _, c := range []struct{ scenario, driver string }{{"hang-hedged", "mysql"}, {"slow", "postgres"}} {
		sc, _ := faultScenarioNamed(c.scenario)
		rows, err := runFaults(context.Background(), o, cl, cl.driver(c.driver), sc, t.Logf)
		rep.faults = append(rep.faults, rows...)
		if err != nil {
			t.Fatalf("%s: %v", c.scenario, err)
		}
		if len(rows) != 2 || rows[0].variant != "rwpool" || !rows[0].hedgesKnown {
			t.Fatalf("%s: rows %+v", c.scenario, rows)
		}
		plain, tuned := rows[0], rows[1]
		if tuned.failed != 0 || tuned.stuck != 0 || len(tuned.samples) == 0 {
			t.Errorf("%s: %s: %d failed, %d stuck, %d samples", c.scenario, tuned.variant, tuned.failed, tuned.stuck, len(tuned.samples))
		}
		if c.scenario == "hang-hedged" && (tuned.hedges <= 0 || tuned.longest >= time.Second) {
			t.Errorf("hang-hedged: %s: %.3f hedges per read, longest %s", tuned.variant, tuned.hedges, tuned.longest)
		}
		if c.scenario == "slow" {
			// The slow reads during the fault: about half of them with
			// weights alone, a trickle with balance=adaptive.
			slow := func(f faultRow) (n int) {
				for _, s := range f.samples {
					if s.start >= f.faultAt && s.start < f.undoAt && s.end-s.start >= slowBy {
						n++
					}
				}
				return n
			}
			if a, w := slow(tuned), slow(plain); plain.failed != 0 || a*2 >= w {
				t.Errorf("slow: %d reads over %s with %s, %d with %s (%d failed): want under half", a, slowBy, tuned.variant, w, plain.variant, plain.failed)
			}
		}
	}
	text := rep.text()
	t.Logf("report:\n%s", text)
	for _, re := range []string{
		`replica1 hung \(SIGSTOP\), holding a quarter of the reads \(weights 1:3\), 1s read deadlines, go-sql-driver/mysql → MariaDB`,
		`(?m)^  rwpool hedge_after=50ms hedge_budget=30% +\d+ +0 +0 +\S+ +\S+ .* 0\.\d{3}$`,
		`replica1 slow \(\+200ms\), two equal replicas, 5s read deadlines, lib/pq → PostgreSQL`,
		`(?m)^  rwpool balance=adaptive +\d+ +0 +0 `,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("report does not match %q", re)
		}
	}
}

// TestBenchFailoverSmoke runs both failover scenarios with short windows
// for the bare driver (through the endpoint) and rwpool with
// failover_wait=5s, checks what each must show, and that the topology is
// back afterwards (rwpool check on the cluster's own DSN passes).
func TestBenchFailoverSmoke(t *testing.T) {
	backends := testcluster.Backends(t)
	dir := os.Getenv("RWPOOL_CLUSTER_DIR")
	if dir == "" {
		t.Fatal("RWPOOL_CLUSTER_DIR is not set: source the cluster's env file")
	}
	cl, err := loadCluster(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--failover-variants", "bare,rwpool-wait", "--failover-window", "3s", "--fault-steady", "500ms", "--no-throughput", "--faults", "none", "--no-memory"}
	o, st, done := parseBenchFlags(args, nil, nil)
	if done {
		t.Fatalf("flags: status %d", st)
	}
	rep := &benchReport{opts: o}
	for _, s := range failoverScenarios {
		rows, err := runFailovers(context.Background(), o, cl, cl.driver(s.driver), s, t.Logf)
		rep.failovers = append(rep.failovers, rows...)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if len(rows) != 2 {
			t.Fatalf("%s: %d rows, want 2", s.name, len(rows))
		}
		bare, wait := rows[0], rows[1]
		if wait.variant != "rwpool failover_wait=5s" || bare.variant != "bare" {
			t.Fatalf("%s: variants %q, %q", s.name, bare.variant, wait.variant)
		}
		// rwpool waits the failover out: nothing fails, nothing is lost. A
		// write in flight when PostgreSQL is killed may fail (it may have
		// been applied: it cannot be retried), and one acknowledged just
		// before may not have been replicated; nothing issued afterwards.
		failed, lost := wait.failedWrites, wait.lost
		if s.name == "promotion" {
			failed -= wait.failedInFlight
			lost -= wait.lostBeforeFault
		}
		if wait.writes == 0 || failed != 0 || lost != 0 || wait.failedReads != 0 || !wait.backOK || wait.stuck != 0 {
			t.Errorf("%s: rwpool failover_wait=5s: %+v", s.name, wait)
		}
		if !bare.backOK && bare.failedWrites == 0 {
			t.Errorf("%s: bare: no write came back, yet none failed: %+v", s.name, bare)
		}
		// Behind the endpoint the bare driver keeps its connections to the
		// read-only primary: its writes never come back.
		if s.name == "switchover" && (bare.failedWrites == 0 || bare.backOK) {
			t.Errorf("switchover: bare: %d writes failed, back %v: want failures and no recovery (the pool stays on the old primary)",
				bare.failedWrites, bare.backOK)
		}
		// The writes issued around a PostgreSQL kill through the bare driver fail.
		if s.name == "promotion" && bare.failedWrites == 0 {
			t.Errorf("promotion: bare: no write failed")
		}
	}
	text := rep.text()
	t.Logf("report:\n%s", text)
	for _, want := range []string{"=== failover", "switchover behind an endpoint, go-sql-driver/mysql → MariaDB",
		"primary killed, replica1 promoted, lib/pq → PostgreSQL", "rwpool failover_wait=5s"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The topology is back: every engine's DSN checks out.
	for _, b := range backends {
		if st, out, errb := runCmd(t, "check", "--timeout", "20s", b.DSN("")); st != exitOK {
			t.Errorf("%s after the failovers: check status %d, stderr %q:\n%s", b.Name, st, errb, out)
		}
	}
}
