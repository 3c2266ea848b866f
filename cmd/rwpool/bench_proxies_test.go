package main

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/testcluster"
)

func TestProxyRatioTable(t *testing.T) {
	us := time.Microsecond
	rows := []throughputRow{
		{driver: "postgres", goroutines: 8, variant: "rwpool", qps: 10000, p99: 1000 * us},
		{driver: "postgres", goroutines: 8, variant: "pgpool", qps: 4000, p99: 3000 * us},
		{driver: "postgres", goroutines: 8, variant: "haproxy", qps: 8000, p99: 1500 * us},
		{driver: "mysql", goroutines: 8, variant: "haproxy", qps: 1, p99: us},
	}
	tb, ok := proxyRatioTable(rows, "postgres", "lib/pq → PostgreSQL")
	if !ok || len(tb.rows) != 2 || !strings.Contains(tb.title, "proxies / rwpool,") {
		t.Fatalf("table %+v", tb)
	}
	if got := strings.Join(tb.rows[0], " "); got != "8 pgpool 0.400 3.000" {
		t.Errorf("pgpool row %q", got)
	}
	if got := strings.Join(tb.rows[1], " "); got != "8 haproxy 0.800 1.500" {
		t.Errorf("haproxy row %q", got)
	}
	// Against rwpool-2r (the same two replicas) when it ran.
	rows = append(rows, throughputRow{driver: "postgres", goroutines: 8, variant: "rwpool-2r", qps: 8000, p99: 1500 * us})
	if tb, _ := proxyRatioTable(rows, "postgres", "x"); !strings.Contains(tb.title, "rwpool-2r") || tb.rows[1][2] != "1.000" {
		t.Errorf("against rwpool-2r: %+v", tb)
	}
	// No rwpool to compare with: no table.
	if _, ok := proxyRatioTable(rows, "mysql", "x"); ok {
		t.Error("a table without rwpool")
	}
}

// TestProxySkips: Pgpool-II says in each MariaDB table that it is for
// PostgreSQL only.
func TestProxySkips(t *testing.T) {
	if proxySkip("pgpool", "postgres") != "" || proxySkip("haproxy", "mysql") != "" || proxySkip("pgpool", "mysql") == "" {
		t.Fatal("proxySkip")
	}
	r := sampleReport() // the default variants: pgpool among them
	r.throughput = append(r.throughput, throughputRow{driver: "mysql", label: "go-sql-driver/mysql → MariaDB", goroutines: 1, variant: "bare", qps: 1})
	r.faults = append(r.faults, faultRow{driver: "mysql", label: "go-sql-driver/mysql → MariaDB", fault: "hang", variant: "pgpool",
		skip: proxySkip("pgpool", "mysql")})
	r.failovers = append(r.failovers, failoverRow{driver: "mysql", label: "go-sql-driver/mysql → MariaDB", scenario: "switchover",
		variant: "pgpool", skip: proxySkip("pgpool", "mysql")})
	text := r.text()
	for _, want := range []string{`(?m)^ +— pgpool \(n/a: PostgreSQL only\) +— +— +— +— +—$`, `(?m)^  pgpool +— +— +— +— +n/a: Pgpool-II`} {
		if !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	// Not in the PostgreSQL table.
	pg := text[strings.Index(text, "SELECT 1 through lib/pq"):strings.Index(text, "Ratios to bare in the same round, lib/pq")]
	if strings.Contains(pg, "n/a") {
		t.Errorf("PostgreSQL table has a skip row:\n%s", pg)
	}
	if !strings.Contains(r.markdown(), "| pgpool | — | — | — | — | — | — | — | — | — | n/a: Pgpool-II is for PostgreSQL only |") {
		t.Errorf("failover markdown lacks the skip row:\n%s", r.markdown())
	}
}

// TestProxyConfigSection: the configurations of the repository are quoted
// whole, and --splice puts the section before Memory.
func TestProxyConfigSection(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	sec := proxyConfigSection(root)
	for _, f := range []string{"pgpool.conf", "haproxy.cfg"} {
		b, err := os.ReadFile(filepath.Join(root, "bench", "proxies", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(sec, string(b)) {
			t.Errorf("section does not quote %s whole", f)
		}
	}
	for _, want := range []string{"backend_clustering_mode = 'streaming_replication'", "load_balance_mode = on",
		"health_check_period = 2", "on-marked-down shutdown-sessions", "option pgsql-check", "option mysql-check"} {
		if !strings.Contains(sec, want) {
			t.Errorf("section lacks %q", want)
		}
	}
	if s := proxyConfigSection(t.TempDir()); !strings.Contains(s, "`bench/proxies/pgpool.conf`: not found") {
		t.Errorf("missing files: %s", s)
	}

	r := sampleReport()
	r.proxyCfg = sec
	r.opts.noThroughput, r.opts.noMemory, r.faults, r.failovers = true, true, nil, nil
	old := "# Benchmarks\n\n## Faults\n\nold faults\n\n## Memory\n\nold memory\n"
	md := spliceMarkdown(old, r.markdown(), r.measuredSections())
	if i, j, k := strings.Index(md, "## Faults"), strings.Index(md, "## Proxy configurations"), strings.Index(md, "## Memory"); !(i < j && j < k) {
		t.Errorf("Proxy configurations is not between Faults and Memory:\n%s", md)
	}
}

// TestHAProxyCommand talks to a stand-in of HAProxy's admin socket.
func TestHAProxyCommand(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "haproxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			mu.Lock()
			got = append(got, strings.TrimSpace(line))
			mu.Unlock()
			switch {
			case strings.Contains(line, "nosuch"):
				c.Write([]byte("No such backend.\n\n"))
			case strings.HasPrefix(line, "shutdown sessions"):
				c.Write([]byte("\n"))
			default:
				c.Write([]byte("IP changed from '127.0.0.1' to '127.0.0.1', port changed from '55432' to '55433' by 'stats socket command'\n\n"))
			}
			c.Close()
		}
	}()
	defer func() { ln.Close(); wg.Wait() }()

	ep := &proxyEndpoints{haSocket: sock, haWriteBackend: "pg_write", haWriteServer: "primary"}
	if err := moveHAProxyWrite(context.Background(), ep, "127.0.0.1:55433"); err != nil {
		t.Fatal(err)
	}
	ep.haWriteBackend = "nosuch"
	if err := moveHAProxyWrite(context.Background(), ep, "127.0.0.1:55433"); err == nil || !strings.Contains(err.Error(), "No such backend") {
		t.Errorf("error %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0] != "set server pg_write/primary addr 127.0.0.1 port 55433" ||
		got[1] != "shutdown sessions server pg_write/primary" || got[2] != "set server nosuch/primary addr 127.0.0.1 port 55433" {
		t.Errorf("commands %q", got)
	}
	if _, err := haproxyCommand(context.Background(), filepath.Join(t.TempDir(), "none"), "help"); err == nil {
		t.Error("no error without a socket")
	}
}

// TestBenchProxiesSmoke starts Pgpool-II and HAProxy in front of the test
// clusters with scripts/proxies.sh, runs a short throughput round through
// each on both engines and a kill of PostgreSQL's replica1, and stops them.
// Without pgpool or haproxy installed it skips, except under CI=true
// (scripts/test.sh installs them).
func TestBenchProxiesSmoke(t *testing.T) {
	testcluster.Backends(t) // skips without the clusters, fails under CI=true
	for _, bin := range []string{"pgpool", "haproxy"} {
		if _, err := exec.LookPath(bin); err != nil {
			if _, serr := os.Stat("/usr/sbin/" + bin); serr == nil {
				continue
			}
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true but %s is not installed (scripts/test.sh installs pgpool2 and haproxy)", bin)
			}
			t.Skipf("%s not installed: apt-get install pgpool2 haproxy", bin)
		}
	}
	dir := os.Getenv("RWPOOL_CLUSTER_DIR")
	if dir == "" {
		t.Fatal("RWPOOL_CLUSTER_DIR is not set: source the cluster's env file")
	}
	cl, err := loadCluster(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	o, st, done := parseBenchFlags([]string{"--variants", "rwpool,pgpool,haproxy", "--goroutines", "4", "--duration", "300ms",
		"--warmup", "100ms", "--rounds", "1", "--faults", "kill", "--fault-steady", "500ms", "--fault-window", "3s",
		"--fault-timeout", "1s"}, nil, nil)
	if done {
		t.Fatalf("flags: status %d", st)
	}
	ctx := context.Background()
	if err := cl.startProxies(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			cl.stopProxies()
		}
	}()
	addr := cl.proxies.vars["RWPOOL_PGPOOL"]

	rep := &benchReport{opts: o}
	for _, drv := range []string{"postgres", "mysql"} {
		rows, err := runThroughput(ctx, o, cl.driver(drv), t.Logf)
		if err != nil {
			t.Fatalf("%s: %v", drv, err)
		}
		rep.throughput = append(rep.throughput, rows...)
		want := map[string]bool{"rwpool": true, "haproxy": true, "pgpool": drv == "postgres"}
		for _, r := range rows {
			if !want[r.variant] || r.errs != 0 || r.qps <= 0 {
				t.Errorf("%s: row %+v", drv, r)
			}
			delete(want, r.variant)
		}
		for v, w := range want {
			if w {
				t.Errorf("%s: no row for %s", drv, v)
			}
		}
	}
	kill, _ := faultScenarioNamed("kill")
	rows, err := runFaults(ctx, o, cl, cl.driver("postgres"), kill, t.Logf)
	rep.faults = rows
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d fault rows, want 3 (rwpool, pgpool, haproxy)", len(rows))
	}
	for _, r := range rows {
		if r.requests == 0 || r.stuck != 0 || r.skip != "" {
			t.Errorf("fault row %+v", r)
		}
	}
	t.Logf("report:\n%s", rep.text())
	for _, want := range []string{`proxies / rwpool, lib/pq`, `proxies / rwpool, go-sql-driver/mysql`, `(?m)^ +— pgpool \(n/a: PostgreSQL only\)`} {
		if !regexp.MustCompile(want).MatchString(rep.text()) {
			t.Errorf("report lacks %q", want)
		}
	}

	stopped = true
	if err := cl.stopProxies(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("Pgpool-II still answers on %s after proxies.sh down", addr)
	}
	if _, err := os.Stat(dir + "-proxies"); !os.IsNotExist(err) {
		t.Errorf("state dir %s-proxies left behind: %v", dir, err)
	}
}
