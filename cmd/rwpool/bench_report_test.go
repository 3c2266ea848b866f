package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// sampleReport is a report of made-up figures.
func sampleReport() *benchReport {
	o, _, _ := parseBenchFlags([]string{"--goroutines", "1,8", "--markdown", "BENCHMARKS.md", "--env", "/tmp/a b/env"}, nil, nil)
	r := &benchReport{opts: o, started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), elapsed: 7 * time.Minute,
		machine: [][2]string{{"CPU", "Some CPU @ 2GHz"}, {"cores", "2"}, {"gorm.io/plugin/dbresolver", "v1.6.2"}}}
	us := time.Microsecond
	// Three rounds each: queries/s, p50 and p99 in µs.
	for _, t := range []struct {
		g             int
		v             string
		allocs        float64
		errs          int
		qps, p50, p99 [3]float64
		pool          bool
	}{
		{1, "bare", 15, 0, [3]float64{10000, 9000, 11000}, [3]float64{90, 95, 85}, [3]float64{200, 220, 180}, false},
		{1, "rwpool", 16, 0, [3]float64{9800, 9000, 10000}, [3]float64{92, 95, 90}, [3]float64{206, 230, 190}, true},
		{1, "dbresolver", 33.1, 0, [3]float64{9000, 8000, 9900}, [3]float64{100, 110, 95}, [3]float64{230, 250, 200}, false},
		{1, "bare-again", 15, 0, [3]float64{10100, 8800, 11200}, [3]float64{90, 96, 84}, [3]float64{210, 210, 190}, false},
		{8, "bare", 15, 0, [3]float64{40000, 40000, 40000}, [3]float64{150, 150, 150}, [3]float64{1000, 1000, 1000}, false},
		{8, "rwpool", 16, 2, [3]float64{38000, 37000, 36000}, [3]float64{160, 160, 160}, [3]float64{1100, 1200, 1050}, true},
		{8, "bare-again", 15, 0, [3]float64{39000, 41000, 40000}, [3]float64{150, 150, 150}, [3]float64{1000, 990, 1010}, false},
	} {
		row := throughputRow{driver: "postgres", label: "lib/pq → PostgreSQL", goroutines: t.g, variant: t.v,
			allocs: t.allocs, errs: t.errs, rounds: 3}
		var lat []time.Duration
		for i := range 3 {
			row.perRound = append(row.perRound, roundFigures{qps: t.qps[i], p50: time.Duration(t.p50[i]) * us,
				p99: time.Duration(t.p99[i]) * us, p999: 2 * time.Duration(t.p99[i]) * us, allocs: t.allocs,
				minShare: 0.9, maxShare: 1.1})
			lat = append(lat, time.Duration(t.p50[i])*us, time.Duration(t.p99[i])*us)
			if t.pool {
				row.pool = append(row.pool, poolFigures{node: "replica1", served: int64(t.qps[i]) * 3,
					waitCount: int64(i), waitDuration: time.Duration(i) * time.Millisecond, dials: 1, open: t.g, max: 100})
			}
		}
		slices.Sort(lat)
		row.hist.addAll(lat)
		row.qps, row.p50, row.p99 = t.qps[1], time.Duration(t.p50[1])*us, time.Duration(t.p99[1])*us
		r.throughput = append(r.throughput, row)
	}
	ms := time.Millisecond
	my := "go-sql-driver/mysql → MariaDB"
	r.faults = []faultRow{
		{driver: "mysql", label: my, fault: "kill", variant: "bare", requests: 900, failed: 700,
			longest: 12 * ms, p99: 3 * ms, firstErr: "invalid connection"},
		{driver: "mysql", label: my, fault: "kill", variant: "rwpool", requests: 1600, recovered: true,
			longest: 40 * ms, p99: 2 * ms, hedgesKnown: true},
		{driver: "mysql", label: my, fault: "hang", variant: "rwpool", requests: 1200, failed: 8, hung: 8,
			recovered: true, recovery: 5030 * time.Millisecond, longest: 5 * time.Second, p99: 5 * time.Second,
			hedgesKnown: true, firstErr: "context deadline exceeded"},
		{driver: "mysql", label: my, fault: "hang", variant: "nap", requests: 100, failed: 20, hung: 28,
			longest: 25 * time.Second, p99: 5 * time.Second, stuck: 8, firstErr: "context deadline exceeded | x"},
		{driver: "mysql", label: my, fault: "hang-hedged", variant: "rwpool hedge_after=50ms hedge_budget=30%", requests: 6000,
			recovered: true, recovery: 100 * ms, longest: 120 * ms, p99: 55 * ms, hedges: 0.0423, hedgesKnown: true},
		{driver: "mysql", label: my, fault: "slow", variant: "rwpool balance=adaptive", requests: 6000,
			recovered: true, recovery: 700 * ms, longest: 230 * ms, p99: 9 * ms, hedgesKnown: true},
	}
	// Samples for the charts: a read every 10ms for 3s, failing from the
	// fault at 1s to its undo at 2s.
	for i := range r.faults {
		f := &r.faults[i]
		f.faultAt, f.undoAt = time.Second, 2*time.Second
		for at := time.Duration(0); at < 3*time.Second; at += 10 * ms {
			f.samples = append(f.samples, sample{start: at, end: at + ms, failed: at >= f.faultAt && at < f.undoAt && f.failed > 0})
		}
	}
	r.failovers = []failoverRow{
		{driver: "mysql", label: "go-sql-driver/mysql → MariaDB", scenario: "switchover", variant: "bare", moved: 400 * ms,
			writes: 3700, failedWrites: 3250, longest: 170 * ms, reads: 7300, firstWriteErr: "Error 1290 (HY000): read-only"},
		{driver: "mysql", label: "go-sql-driver/mysql → MariaDB", scenario: "switchover", variant: "rwpool failover_wait=5s", moved: 700 * ms,
			writes: 3600, back: 750 * ms, backOK: true, normal: 760 * ms, normalOK: true, longest: 770 * ms, reads: 7200},
		{driver: "postgres", label: "lib/pq → PostgreSQL", scenario: "promotion", variant: "nap", moved: 250 * ms,
			writes: 3500, failedWrites: 190, back: 280 * ms, backOK: true, longest: 100 * ms, lost: 3, lostBeforeFault: 3, reads: 7000},
	}
	for i := range r.failovers {
		f := &r.failovers[i]
		f.faultAt, f.stopAt = 1500*ms, 4*time.Second
		for at := time.Duration(0); at < f.stopAt; at += 20 * ms {
			f.writeSamples = append(f.writeSamples, sample{start: at, end: at + ms, failed: f.failedWrites > 0 && at > f.faultAt})
			f.readSamples = append(f.readSamples, sample{start: at, end: at + ms})
		}
	}
	r.patroni = []failoverRow{
		{driver: "postgres", label: "PostgreSQL under Patroni", scenario: "patroni-crash", variant: "pgx multi-host", moved: time.Second,
			writes: 3900, failedWrites: 196, back: 48 * ms, backOK: true, longest: 440 * ms, lost: 1, lostBeforeFault: 1,
			reads: 15000, stalest: 5240 * ms, faultLabel: "leader killed", moveLabel: "new leader writable", gapLabel: "no writable leader"},
		{driver: "postgres", label: "PostgreSQL under Patroni", scenario: "patroni-crash", variant: "rwpool follow_promotion=on", moved: time.Second,
			writes: 7800, failedWrites: 4120, back: 67 * ms, backOK: true, longest: 265 * ms, reads: 15400, stalest: 9 * ms,
			faultLabel: "leader killed", moveLabel: "new leader writable", gapLabel: "no writable leader"},
		{driver: "postgres", label: "PostgreSQL under Patroni", scenario: "patroni-switchover", variant: "haproxy", skip: "n/a: haproxy is not installed"},
	}
	for i := range r.patroni[:2] {
		f := &r.patroni[i]
		f.faultAt, f.stopAt = 1500*ms, 4*time.Second
		for at := time.Duration(0); at < f.stopAt; at += 20 * ms {
			f.writeSamples = append(f.writeSamples, sample{start: at, end: at + ms, failed: at > f.faultAt && at < 3*time.Second})
			f.readSamples = append(f.readSamples, sample{start: at, end: at + ms})
		}
	}
	r.memory = memoryResult{driver: "postgres", conns: 50, bareConn: 6656, rwpoolConn: 512, rwpoolStmt: 700, nodes: 64,
		perNode: 4300, perNodeHeap: 2764, perNodeStack: 1536}
	return r
}

func TestBenchReportText(t *testing.T) {
	out := sampleReport().text()
	t.Log("\n" + out)
	for _, re := range []string{
		`(?m)^CPU: +Some CPU @ 2GHz$`,
		`(?m)^command: +go run \./cmd/rwpool bench --goroutines 1,8 --markdown BENCHMARKS\.md --env '/tmp/a b/env'$`,
		`SELECT 1 through lib/pq → PostgreSQL: median \(min–max\) of 3 rounds of 3s`,
		`(?m)^ +1 bare +10000 \(9000–11000\) +90µs \(85µs–95µs\) +200µs \(180µs–220µs\) +15\.0 +0$`,
		`(?m)^ +1 dbresolver +9000 \(8000–9900\) .* +33\.1 +0$`,
		`(?m)^ +8 rwpool +37000 \(36000–38000\) +160µs \(160µs–160µs\) +1\.10ms \(1\.05ms–1\.20ms\) +16\.0 +2$`,
		`Ratios to bare in the same round, lib/pq → PostgreSQL: median \(min–max\) over 3 rounds`,
		// rwpool at 1: 0.98, 1.00, 0.909; bare-again: 1.01, 0.978, 1.018
		`(?m)^ +1 rwpool +0\.98 \(0\.91–1\.00\) +.* \+1\.0$`,
		`(?m)^ +1 bare \(again\) +1\.01 \(0\.98–1\.02\) `,
		`(?m)^ +1 dbresolver .* \+18\.1$`,
		`rwpool against the targets, lib/pq → PostgreSQL`,
		`(?m)^ +1 +0\.98 \(0\.91–1\.00\) +1\.01 \(0\.98–1\.02\) within +1\.05 \(1\.03–1\.06\) +1\.05 \(0\.95–1\.06\) meets target$`,
		`(?m)^ +8 +0\.93 \(0\.90–0\.95\) +1\.00 \(0\.97–1\.02\) SLOWER than the noise floor +1\.10 \(1\.05–1\.20\) +1\.00 \(0\.99–1\.01\) meets target$`,
		`Latency distribution at 8 goroutines, lib/pq → PostgreSQL`,
		`(?m)^  rwpool +0 +50% +0 +50% +0 +0 +0 +2\.20ms +0\.90 / 1\.10$`,
		`(?m)^ +8 +111000 \(108000–114000\) +1 \(0–2\) +1\.00ms \(0µs–2\.00ms\) +1 \(1–1\) +8 \(8–8\) of 100$`,
		`replica1 killed \(SIGKILL\), 5s read deadlines, go-sql-driver/mysql → MariaDB`,
		`(?m)^  bare +900 +700 +0 +12\.0ms +3\.00ms never \(within window\) +— invalid connection$`,
		`(?m)^  rwpool +1600 +0 +0 +40\.0ms +2\.00ms 0 \(no disruption\) +0\.000$`,
		`replica1 hung \(SIGSTOP\), 5s read deadlines, go-sql-driver/mysql → MariaDB`,
		`(?m)^  rwpool +1200 +8 +8 +5\.00s +5\.00s 5\.03s +0\.000 context deadline exceeded$`,
		`replica1 hung \(SIGSTOP\), holding a quarter of the reads \(weights 1:3\), 1s read deadlines, go-sql-driver/mysql → MariaDB`,
		`(?m)^  rwpool hedge_after=50ms hedge_budget=30% +6000 +0 +0 +120\.0ms +55\.0ms 100\.0ms +0\.042$`,
		`replica1 slow \(\+200ms\), two equal replicas, 5s read deadlines, go-sql-driver/mysql → MariaDB`,
		`(?m)^  rwpool balance=adaptive +6000 +0 +0 +230\.0ms +9\.00ms 700\.0ms +0\.000$`,
		`8 reads still stuck`,
		`check_interval=2s, probe_timeout=1s`,
		`context deadline \(5s; 1s where the title says so\)`,
		`open \*sql\.Conn, rwpool \(virtual: nothing dialled\) +0\.5 KiB`,
		`=== failover`, `switchover behind an endpoint, go-sql-driver/mysql → MariaDB`,
		`(?m)^  bare +400\.0ms +3700 +3250 never \(within window\) never \(within window\) 170\.0ms +0 +7300 +0 write: Error 1290 \(HY000\): read-only$`,
		`(?m)^  rwpool failover_wait=5s 700\.0ms +3600 +0 750\.0ms +760\.0ms +770\.0ms +0 +7200 +0$`,
		`primary killed, replica1 promoted, lib/pq → PostgreSQL`,
		`(?m)^  nap +250\.0ms +3500 +190 280\.0ms +never \(within window\) +100\.0ms +3 +7000 +0 3 lost writes were acknowledged before the fault$`,
		`node of a DSN .* +4\.2 KiB +1 vs 65 replicas`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("text report does not match %q", re)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("trailing space: %q", line)
		}
	}
}

func TestBenchReportMarkdown(t *testing.T) {
	md := sampleReport().markdown()
	for _, want := range []string{
		"# Benchmarks\n",
		"on 2026-01-02 03:04 UTC, in 7m0s",
		"    go run ./cmd/rwpool bench --goroutines 1,8 --markdown BENCHMARKS.md --env '/tmp/a b/env'\n",
		"## Machine\n", "| CPU | Some CPU @ 2GHz |\n", "| gorm.io/plugin/dbresolver | v1.6.2 |\n",
		"- `nap`: github.com/tsenart/nap",
		"**SELECT 1 through lib/pq → PostgreSQL: median (min–max) of 3 rounds of 3s**\n",
		"| goroutines | variant | queries/s | p50 | p99 | allocs/stmt | errors |\n|---:|---|---:|---:|---:|---:|---:|\n",
		"| 1 | dbresolver | 9000 (8000–9900) | 100µs (95µs–110µs) | 230µs (200µs–250µs) | 33.1 | 0 |\n",
		"- `bare-again`: bare once more in each round",
		"| 8 | 0.93 (0.90–0.95) | 1.00 (0.97–1.02) | SLOWER than the noise floor | 1.10 (1.05–1.20) | 1.00 (0.99–1.01) | meets target |\n",
		"## Faults\n", "| rwpool | 1200 | 8 | 8 | 5.00s | 5.00s | 5.03s | 0.000 | context deadline exceeded |\n",
		"go run ./cmd/rwpool bench --no-throughput --failovers none --read-after-write none --no-memory --markdown BENCHMARKS.md --splice\n",
		`context deadline exceeded \| x |`, // a | in a cell is escaped
		"## Failover\n", "go run ./cmd/rwpool bench --no-throughput --faults none --read-after-write none --no-memory --markdown BENCHMARKS.md --splice\n",
		"| rwpool failover_wait=5s | 700.0ms | 3600 | 0 | 750.0ms | 760.0ms | 770.0ms | 0 | 7200 | 0 |  |\n",
		"## Under Patroni\n", "--patroni crash,switchover --markdown BENCHMARKS.md --splice\n",
		"| pgx multi-host | 1.00s | 3900 | 196 | 48.0ms | 440.0ms | 0 | 1 | 0 | 0 | 15000 | 0 | 5.24s | 0 |  |\n",
		"| haproxy | — | — | — | — | — | — | — | — | — | — | — | — | — | n/a: haproxy is not installed |\n",
		"## Memory\n", "| open *sql.Conn, bare driver (one real connection each) | 6.5 KiB | 50 conns held open |\n",
		"## Comparing changes with benchstat\n",
		"go test -run '^$' -bench 'Query|Classify|Pick|AcquireRelease' -count 10 . ./routing/ ./pool/ > old.txt\n",
		"go test -run '^$' -bench E2E -benchtime 3s -count 10 . > old.txt",
		"benchstat old.txt new.txt\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	// Every table row has as many cells as its header.
	var cols int
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = 0
			continue
		}
		n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
		if cols == 0 {
			cols = n
		} else if n != cols {
			t.Errorf("row with %d separators under a header of %d: %q", n, cols, line)
		}
	}
	// Without faults or memory, those sections are left out.
	r := sampleReport()
	r.faults, r.failovers, r.patroni, r.opts.noMemory = nil, nil, nil, true
	md = r.markdown()
	if strings.Contains(md, "## Faults") || strings.Contains(md, "## Failover") || strings.Contains(md, "## Memory") ||
		strings.Contains(md, "## Under Patroni") {
		t.Error("empty sections rendered")
	}
}

func TestMarkdownIncludesMeasuredChanges(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "benchstat"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"02-b.md": "### second\n", "01-a.md": "### first\n"} {
		if err := os.WriteFile(filepath.Join(root, "benchstat", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	changes := loadChanges(root)
	if len(changes) != 2 || !strings.Contains(changes[0], "first") {
		t.Fatalf("loadChanges = %q, want both files in name order", changes)
	}
	r := &benchReport{opts: benchOpts{noMemory: true}, changes: changes}
	md := r.markdown()
	i, j := strings.Index(md, "### first"), strings.Index(md, "### second")
	if !strings.Contains(md, "## Speed-ups, measured with benchstat") || i < 0 || j < i {
		t.Errorf("markdown lacks the measured changes in order:\n%s", md)
	}
	if loadChanges(filepath.Join(root, "missing")) != nil {
		t.Error("a missing benchstat/ gave changes")
	}
}

// TestSpliceMarkdown: --splice replaces the measured sections and keeps
// the others; a section the file lacks goes where the report puts it.
func TestSpliceMarkdown(t *testing.T) {
	old := "# Benchmarks\n\nold header\n\n## Machine\n\nold machine\n\n## Throughput and latency\n\nold figures\n\n" +
		"## Faults\n\nold faults\n\n## Memory\n\nold memory\n\n## Comparing changes with benchstat\n\nhow\n"
	r := sampleReport()
	r.opts.noThroughput, r.opts.noMemory, r.faults, r.patroni = true, true, nil, nil
	if got := r.measuredSections(); len(got) != 1 || got[0] != "Failover" {
		t.Fatalf("measuredSections = %q", got)
	}
	md := spliceMarkdown(old, r.markdown(), r.measuredSections())
	for _, want := range []string{"old header", "old machine", "old figures", "old faults", "old memory", "how\n",
		"## Failover\n", "| rwpool failover_wait=5s |"} {
		if !strings.Contains(md, want) {
			t.Errorf("spliced file lacks %q:\n%s", want, md)
		}
	}
	if i, j, k := strings.Index(md, "## Faults"), strings.Index(md, "## Failover"), strings.Index(md, "## Memory"); !(i < j && j < k) {
		t.Errorf("Failover is not between Faults and Memory:\n%s", md)
	}
	if strings.Contains(md, "Some CPU") {
		t.Errorf("the new Machine section replaced the old one:\n%s", md)
	}
	// Spliced again: replaced in place, not added twice.
	r.failovers = r.failovers[:1]
	again := spliceMarkdown(md, r.markdown(), r.measuredSections())
	if strings.Count(again, "## Failover") != 1 || strings.Contains(again, "| rwpool failover_wait=5s |") {
		t.Errorf("second splice:\n%s", again)
	}
}

// svgRoot parses b strictly as XML and returns its root element's name
// and the values of every class attribute, in document order.
func svgRoot(t *testing.T, name string, b []byte) (root string, classes []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: invalid XML: %v", name, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if root != "" {
					t.Fatalf("%s: more than one root element", name)
				}
				root = tok.Name.Local
			}
			depth++
			for _, a := range tok.Attr {
				if a.Name.Local == "class" {
					classes = append(classes, a.Value)
				}
			}
		case xml.EndElement:
			depth--
		}
	}
	return root, classes
}

// TestBenchCharts: writeCharts writes a valid SVG file for the throughput
// of each driver and for each fault and failover scenario (a panel per
// variant), and the Markdown report links every one of them.
func TestBenchCharts(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "BENCHMARKS.md")
	if got := chartsDir(md, ""); got != filepath.Join(dir, "benchmarks") {
		t.Errorf("default charts dir %q", got)
	}
	r := sampleReport()
	files, err := r.writeCharts(md, filepath.Join(dir, "docs", "bench"))
	if err != nil {
		t.Fatal(err)
	}
	panels := map[string]int{
		"throughput-postgres.svg": 0, "p99-postgres.svg": 0,
		"fault-kill-mysql.svg": 2, "fault-hang-mysql.svg": 2, "fault-hang-hedged-mysql.svg": 1, "fault-slow-mysql.svg": 1,
		"failover-switchover-mysql.svg": 2, "failover-promotion-postgres.svg": 1,
		"failover-patroni-crash-postgres.svg": 2, // the switchover's only variant was skipped: no chart
	}
	if len(files) != len(panels) {
		t.Errorf("wrote %d files, want %d: %q", len(files), len(panels), files)
	}
	text := r.markdown()
	for name, want := range panels {
		f := filepath.Join(dir, "docs", "bench", name)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		root, classes := svgRoot(t, name, b)
		if root != "svg" {
			t.Errorf("%s: root element %q", name, root)
		}
		count := func(c string) int {
			return len(slices.DeleteFunc(slices.Clone(classes), func(s string) bool { return s != c }))
		}
		if want == 0 {
			if count("bar") == 0 {
				t.Errorf("%s: no bars", name)
			}
		} else if got := count("panel"); got != want {
			t.Errorf("%s: %d panels, want %d", name, got, want)
		} else if count("marker") != 2*want || count("span") != want || count("series") < 2*want {
			t.Errorf("%s: markers, spans or series missing: %q", name, classes)
		}
		if !regexp.MustCompile(`(?m)^!\[[^\]\n]+\]\(docs/bench/` + regexp.QuoteMeta(name) + `\)$`).MatchString(text) {
			t.Errorf("markdown does not show %s", name)
		}
	}
	// Without --markdown charts (and the report with none) link nothing.
	if strings.Contains(sampleReport().markdown(), "![") {
		t.Error("a report whose charts were not written links some")
	}
}

// TestPerBucket: operations are counted per 100 ms by their end, the
// failed ones apart; those ending after the range are left out.
func TestPerBucket(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	ok, failed := perBucket([]sample{{end: ms(10)}, {end: ms(99)}, {end: ms(100), failed: true}, {end: ms(250)}, {end: ms(300)}}, ms(300))
	if len(ok) != 3 || ok[0].Y != 2 || ok[1].Y != 0 || ok[2].Y != 1 || failed[1].Y != 1 || failed[0].Y != 0 || ok[2].X != 0.2 {
		t.Errorf("perBucket: ok %v, failed %v", ok, failed)
	}
}
