package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rwpool/rwpool/internal/testcluster"
)

// TestBenchSmoke runs the whole bench command, with tiny durations, against
// the running test clusters (--env), including a hang of replica1 of each
// engine for every fault variant, and checks the report.
func TestBenchSmoke(t *testing.T) {
	pw := testcluster.Backends(t)[0].Password // skips without the clusters, fails under CI=true
	dir := os.Getenv("RWPOOL_CLUSTER_DIR")
	if dir == "" {
		t.Fatal("RWPOOL_CLUSTER_DIR is not set: source the cluster's env file")
	}
	md := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	st, out, errb := runCmd(t, "bench", "--env", filepath.Join(dir, "env"), "--variants", "bare,rwpool,dbresolver,nap",
		"--duration", "200ms", "--warmup", "50ms", "--rounds", "1", "--goroutines", "1,4",
		"--faults", "hang", "--fault-steady", "300ms", "--fault-window", "2s", "--fault-timeout", "1s", "--failovers", "none",
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
		`SELECT 1 through lib/pq → PostgreSQL: median of 1 rounds of 200ms`,
		`SELECT 1 through go-sql-driver/mysql → MariaDB: median of 1 rounds of 200ms`,
		`(?m)^ +4 rwpool +\d+ +[0-9.]+(µs|ms) +[0-9.]+(µs|ms) +\d+\.\d +[-+]\d+\.\d +0$`,
		`(?m)^ +1 +\d\.\d{3} (meets|MISSES) target +\d+\.\d{3} (meets|MISSES) target$`,
		`replica1 hung \(SIGSTOP\), lib/pq → PostgreSQL`,
		`replica1 hung \(SIGSTOP\), go-sql-driver/mysql → MariaDB`,
		`(?m)^  nap +\d+ +\d+ +\d+ `,
		`open \*sql\.Conn, rwpool \(virtual: nothing dialled\) +[0-9.]+ KiB`,
	} {
		if !regexp.MustCompile(re).MatchString(report) {
			t.Errorf("report does not match %q", re)
		}
	}
	// Per engine, every variant ran without errors in the throughput part.
	if n := len(regexp.MustCompile(`(?m)^ +[14] (bare|rwpool|dbresolver|nap) .* 0$`).FindAllString(report, -1)); n != 16 {
		t.Errorf("%d error-free throughput rows, want 16", n)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Benchmarks", "## Machine", "## Faults", "## Memory", "benchstat old.txt new.txt"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("markdown lacks %q", want)
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
