package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/testcluster"
)

// TestDemo runs the embedded demo for 8s with its output captured (so not a
// terminal: plain lines) and checks what the summary says. It runs 4
// workers instead of 8: under the race detector on a small machine, the
// servers, the workload and rwpool's 300ms probes share two cores.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo runs for 8s")
	}
	start := time.Now()
	st, out, errb := runCmd(t, "demo", "--duration", "8s", "--goroutines", "2")
	t.Logf("demo ran in %s", time.Since(start).Round(time.Millisecond))
	if st != exitOK || errb != "" {
		t.Fatalf("status %d, stderr %q, stdout:\n%s", st, errb, out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("ANSI escape codes in non-terminal output")
	}
	i := strings.Index(out, "=== What happened")
	if i < 0 {
		t.Fatalf("no summary:\n%s", out)
	}
	live, summary := out[:i], out[i:]
	t.Logf("summary:\n%s", summary)

	// The live part: periodic plain frames, a line per node, and events.
	for _, want := range []string{"] step: kill replica1 |", "] step: hang replica2 |", "    primary   primary available",
		"    replica1  replica ", "    replica2  replica ", "p50 ", "p99 ", "pool ", "share ", "event ",
		"replica1 (replica) -> UNAVAILABLE"} {
		if !strings.Contains(live, want) {
			t.Errorf("live output lacks %q", want)
		}
	}
	for _, step := range scenario {
		if !strings.Contains(summary, step.title+"\n") {
			t.Errorf("summary does not mention the step %q", step.title)
		}
		if strings.Contains(summary, step.title+" (FAILED") {
			t.Errorf("step %q failed", step.title)
		}
	}
	// No read failed.
	m := regexp.MustCompile(`reads:  (\d+) ok, (\d+) failed`).FindStringSubmatch(summary)
	if m == nil {
		t.Fatal("summary lacks the reads line")
	}
	if ok, _ := strconv.Atoi(m[1]); ok < 300 {
		t.Errorf("only %d reads", ok)
	}
	if m[2] != "0" {
		t.Errorf("%s reads failed", m[2])
	}
	for _, want := range []string{
		// Writes failed fast while the primary was down.
		"failed fast with rwpool.ErrUnavailable while the primary was down",
		// The servers' own names agree with rwpool.WithRoute.
		"0 mismatches",
		"Failover: how fast traffic moved away from each failed node",
		"Recovery: how fast each node came back",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	for _, node := range []string{"replica1", "replica2", "primary"} {
		for _, re := range []string{
			node + ` +(killed|hung) at [0-9.]+s: tripped after [0-9.]+(µs|ms|s);`,
			node + ` +restored at [0-9.]+s: available again after [0-9.]+(µs|ms|s); first statement served`,
		} {
			if !regexp.MustCompile(re).MatchString(summary) {
				t.Errorf("summary has no line matching %q", re)
			}
		}
	}
	if !regexp.MustCompile(`the replicas are 0 behind at the end`).MatchString(summary) {
		t.Error("replicas not caught up at the end")
	}
	// Only writes fail, and only while the primary is down.
	for _, line := range strings.Split(summary, "\n") {
		if strings.Contains(line, "outside any injected fault") {
			t.Errorf("failure outside the faults: %s", line)
		}
	}
}

// TestDemoDSN runs the workload and view against the real test clusters,
// after dropping the demo table, which the demo must create again.
func TestDemoDSN(t *testing.T) {
	for _, b := range testcluster.Backends(t) {
		if b.Name == testcluster.Pgx {
			continue // the same servers as lib/pq
		}
		drv, pw := b.Driver, b.Password
		t.Run(b.Name, func(t *testing.T) {
			db, err := sql.Open(drv, b.NodeDSN(b.Primary))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS rwpool_demo"); err != nil {
				t.Fatal(err)
			}
			report := filepath.Join(t.TempDir(), "report.html")
			st, out, errb := runCmd(t, "demo", "--duration", "3s", "--goroutines", "4",
				"--dsn", b.DSN(""), "--report", report)
			if st != exitOK || errb != "" {
				t.Fatalf("status %d, stderr %q, stdout:\n%s", st, errb, out)
			}
			if strings.Contains(out, pw) {
				t.Errorf("the password is shown:\n%s", out)
			}
			doc, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(doc), pw) {
				t.Errorf("the password (%d bytes) is in the report", len(pw))
			}
			svgs := checkReport(t, parseReport(t, doc))
			if n := len(svgs[0].all(withClass("marker"))); n != 0 {
				t.Errorf("%d fault markers without fault injection", n)
			}
			for _, want := range []string{
				"step: workload against " + drv, " 0 failed\n", "writes: ", "none: every node stayed available",
				"    replica1  replica available",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if m := regexp.MustCompile(`writes: (\d+) ok, 0 failed`).FindStringSubmatch(out); m == nil || m[1] == "0" {
				t.Errorf("no successful write, or failed ones:\n%s", out)
			}
			var n int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM rwpool_demo").Scan(&n); err != nil || n != 100 {
				t.Errorf("rwpool_demo: %d rows, %v; want 100", n, err)
			}
			var sum int64
			if err := db.QueryRowContext(ctx, "SELECT sum(v) FROM rwpool_demo").Scan(&sum); err != nil || sum == 0 {
				t.Errorf("rwpool_demo: sum(v) = %d, %v: the writes did not land", sum, err)
			}
		})
	}
}
