package main

import (
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
	st, out, errb := runCmd(t, "bench", "--env", filepath.Join(dir, "env"),
		"--duration", "200ms", "--warmup", "50ms", "--rounds", "1", "--goroutines", "1,4",
		"--faults", "hang", "--fault-steady", "300ms", "--fault-window", "2s", "--fault-timeout", "1s",
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
