package main

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rwpool/rwpool/internal/testcluster"
)

// sampleRawReport is sampleReport with made-up read-after-write figures:
// PostgreSQL, both conditions, three rounds each.
func sampleRawReport() *benchReport {
	r := sampleReport()
	us := time.Microsecond
	pg := "lib/pq → PostgreSQL"
	for _, t := range []struct {
		cond, v            string
		reads, rep, stale  [3]int
		p50us, p99us, wp50 [3]time.Duration
		errs               int
		firstErr           string
	}{
		{"normal", "bare", [3]int{1000, 1100, 900}, [3]int{1000, 1100, 900}, [3]int{10, 22, 0},
			[3]time.Duration{700, 720, 680}, [3]time.Duration{5000, 6000, 4000}, [3]time.Duration{800, 820, 780}, 0, ""},
		{"normal", "rwpool", [3]int{900, 950, 1000}, [3]int{900, 950, 1000}, [3]int{0, 0, 0},
			[3]time.Duration{1000, 1100, 900}, [3]time.Duration{6000, 8000, 5000}, [3]time.Duration{1200, 1300, 1100}, 0, ""},
		{"normal", "gitlab", [3]int{800, 850, 900}, [3]int{792, 850, 891}, [3]int{0, 0, 0},
			[3]time.Duration{1300, 1400, 1200}, [3]time.Duration{9000, 7000, 8000}, [3]time.Duration{1300, 1300, 1300}, 2, "read: boom | x"},
		{"normal", "bare-again", [3]int{1000, 1000, 1000}, [3]int{1000, 1000, 1000}, [3]int{12, 8, 10},
			[3]time.Duration{690, 700, 710}, [3]time.Duration{5500, 5000, 4500}, [3]time.Duration{800, 800, 800}, 0, ""},
		{"delayed", "bare", [3]int{1000, 1000, 1000}, [3]int{1000, 1000, 1000}, [3]int{1000, 1000, 1000},
			[3]time.Duration{700, 700, 700}, [3]time.Duration{5000, 5000, 5000}, [3]time.Duration{800, 800, 800}, 0, ""},
		{"delayed", "rwpool", [3]int{1000, 1000, 1000}, [3]int{990, 1000, 995}, [3]int{0, 0, 0},
			[3]time.Duration{1300, 1300, 1300}, [3]time.Duration{7000, 7000, 7000}, [3]time.Duration{1500, 1500, 1500}, 0, ""},
	} {
		row := rawRow{driver: "postgres", label: pg, condition: t.cond, variant: t.v, firstErr: t.firstErr}
		for i := range 3 {
			row.rounds = append(row.rounds, rawRound{reads: t.reads[i], onReplica: t.rep[i], stale: t.stale[i],
				p50: t.p50us[i] * us, p99: t.p99us[i] * us, writeP50: t.wp50[i] * us})
		}
		row.rounds[0].errs = t.errs
		r.raw = append(r.raw, row)
	}
	return r
}

func TestBenchReadAfterWriteFlags(t *testing.T) {
	o, st, done := parseBenchFlags(nil, nil, nil)
	if done || st != 0 {
		t.Fatalf("defaults: done %v, status %d", done, st)
	}
	if !slices.Equal(o.raw, []string{"normal", "delayed"}) ||
		!slices.Equal(o.rawVariants, []string{"bare", "rwpool", "dbresolver", "rails", "gitlab", "bare-again"}) ||
		o.rawDuration != 2*time.Second || o.rawWarmup != 2*time.Second || o.rawRounds != 3 || o.rawGoroutines != 4 ||
		o.rawGapMin != time.Millisecond || o.rawGapMax != 5*time.Millisecond || o.rawDelay != 2*time.Second {
		t.Errorf("defaults: %+v", o)
	}
	o, st, done = parseBenchFlags([]string{"--read-after-write", "delayed", "--raw-variants", "rwpool,bare", "--raw-duration", "1s",
		"--raw-warmup", "0s", "--raw-rounds", "2", "--raw-goroutines", "8", "--raw-gap", "3ms", "--raw-delay", "5s"}, nil, nil)
	if done || st != 0 {
		t.Fatalf("status %d", st)
	}
	if !slices.Equal(o.raw, []string{"delayed"}) || !slices.Equal(o.rawVariants, []string{"rwpool", "bare"}) ||
		o.rawDuration != time.Second || o.rawWarmup != 0 || o.rawRounds != 2 || o.rawGoroutines != 8 ||
		o.rawGapMin != 3*time.Millisecond || o.rawGapMax != 3*time.Millisecond || o.rawDelay != 5*time.Second {
		t.Errorf("parsed: %+v", o)
	}
	if o, _, _ = parseBenchFlags([]string{"--read-after-write", "none", "--raw-gap", "0s-20ms"}, nil, nil); o.raw != nil ||
		o.rawGapMin != 0 || o.rawGapMax != 20*time.Millisecond {
		t.Errorf("none, 0s-20ms: %+v", o)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--read-after-write", "lagging"}, `--read-after-write: unknown "lagging" (have normal, delayed)`},
		{[]string{"--raw-variants", "nap"}, `--raw-variants: unknown "nap"`},
		{[]string{"--raw-variants", ","}, "--raw-variants: no variant given"},
		{[]string{"--raw-duration", "0s"}, "--raw-duration must be positive"},
		{[]string{"--raw-warmup", "-1s"}, "--raw-warmup must not be negative"},
		{[]string{"--raw-rounds", "0"}, "--raw-rounds must be at least 1"},
		{[]string{"--raw-goroutines", "0"}, "--raw-goroutines must be between 1 and 256"},
		{[]string{"--raw-gap", "5ms-1ms"}, `want D or D-D with 0 <= D <= D <= 10s`},
		{[]string{"--raw-gap", "soon"}, `invalid value "soon" for flag -raw-gap`},
		{[]string{"--raw-delay", "1500ms"}, "--raw-delay must be whole seconds"},
		{[]string{"--raw-delay", "0s"}, "--raw-delay must be whole seconds, at least 1s"},
	} {
		st, out, errb := runCmd(t, append([]string{"bench"}, tc.args...)...)
		if st != exitUsage || out != "" || !strings.Contains(errb, tc.want) || !strings.HasPrefix(errb, "rwpool bench: ") {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want %q", tc.args, st, out, errb, tc.want)
		}
	}
}

func TestBenchReadAfterWriteText(t *testing.T) {
	out := sampleRawReport().text()
	t.Log("\n" + out)
	for _, re := range []string{
		`=== read after write across processes`,
		`4 writer/reader pairs at once`, `1ms–5ms later`, `3 rounds, the variants interleaved`,
		`(?m)^  delayed  replica1 applies what it receives 2s late`,
		`(?m)^  gitlab      the GitLab way`,
		`Read after write across processes, replication at its normal pace, lib/pq → PostgreSQL: median \(min–max\) of 3 rounds of 2s`,
		`Read after write across processes, replica1 applies 2s late, lib/pq → PostgreSQL`,
		// 1000+1100+900 reads; 10+22+0 stale: 1%, 2%, 0%.
		`(?m)^  bare +3000 +100% \(100%–100%\) +32 +1\.0% \(0%–2\.0%\) +700µs \(680µs–720µs\) +5\.00ms \(4\.00ms–6\.00ms\) +— +800µs \(780µs–820µs\) +0$`,
		// p99 minus bare's: +1ms, +2ms, +1ms.
		`(?m)^  rwpool +2850 +100% \(100%–100%\) +0 +0% \(0%–0%\) +1\.00ms \(900µs–1\.10ms\) +6\.00ms \(5\.00ms–8\.00ms\) +\+1\.00ms \(\+1\.00ms–\+2\.00ms\) `,
		`(?m)^  gitlab +2550 +99\.0% \(99\.0%–100%\) +0 .* +2 +read: boom \| x$`,
		// bare again minus bare: +500µs, -1ms, +500µs.
		`(?m)^  bare \(again\) +3000 .* \+500µs \(-1\.00ms–\+500µs\) `,
		`(?m)^  rwpool +3000 +99\.5% \(99\.0%–100%\) +0 +0% `,
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
	// The section comes after the failovers and before the memory.
	if i, j, k := strings.Index(out, "=== failover"), strings.Index(out, "=== read after write"), strings.Index(out, "memory ("); !(i < j && j < k) {
		t.Errorf("sections out of order: failover %d, read after write %d, memory %d", i, j, k)
	}
}

func TestBenchReadAfterWriteMarkdown(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "BENCHMARKS.md")
	r := sampleRawReport()
	files, err := r.writeCharts(md, chartsDir(md, ""))
	if err != nil {
		t.Fatal(err)
	}
	text := r.markdown()
	for _, want := range []string{
		"## Read after write across processes\n",
		"go run ./cmd/rwpool bench --no-throughput --faults none --failovers none --no-memory --markdown BENCHMARKS.md --splice\n",
		"**Read after write across processes, replica1 applies 2s late, lib/pq → PostgreSQL: median (min–max) of 3 rounds of 2s**\n",
		"| variant | reads | on a replica | stale reads | stale | read p50 | read p99 | p99 − bare's | write p50 | errors | first error |\n",
		"| bare | 3000 | 100% (100%–100%) | 3000 | 100% (100%–100%) |",
		`| read: boom \| x |`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if i, j, k := strings.Index(text, "## Failover"), strings.Index(text, "## Read after write"), strings.Index(text, "## Memory"); !(i < j && j < k) {
		t.Errorf("sections out of order: Failover %d, Read after write %d, Memory %d", i, j, k)
	}
	// The charts: valid SVG with bars, shown under the tables.
	for _, name := range []string{"read-after-write-share-postgres.svg", "read-after-write-latency-postgres.svg"} {
		if !slices.Contains(files, filepath.Join(dir, "benchmarks", name)) {
			t.Errorf("%s not written: %q", name, files)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "benchmarks", name))
		if err != nil {
			t.Fatal(err)
		}
		root, classes := svgRoot(t, name, b)
		// 4 variants, 2 conditions; the shares chart has 2 series per
		// condition, the latency one 2 (p50, p99): 4 x 2 x 2 bars, less
		// the 2 variants not measured delayed.
		bars := len(slices.DeleteFunc(slices.Clone(classes), func(s string) bool { return s != "bar" }))
		if root != "svg" || bars != 12 {
			t.Errorf("%s: root %q, %d bars, want 12", name, root, bars)
		}
		if !regexp.MustCompile(`(?m)^!\[[^\]\n]+\]\(benchmarks/` + regexp.QuoteMeta(name) + `\)$`).MatchString(text) {
			t.Errorf("markdown does not show %s", name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "benchmarks", "read-after-write-share-postgres.svg")); !strings.Contains(string(b), "stale, replica1 2s late") {
		t.Error("the shares chart lacks the delayed condition's stale series")
	}

	// --splice of this section alone puts it between Failover and Memory.
	old := "# Benchmarks\n\n## Faults\n\nold faults\n\n## Failover\n\nold failover\n\n## Memory\n\nold memory\n"
	r.opts.noThroughput, r.opts.noMemory, r.faults, r.failovers, r.patroni = true, true, nil, nil, nil
	if got := r.measuredSections(); !slices.Equal(got, []string{rawSection}) {
		t.Fatalf("measuredSections = %q", got)
	}
	spliced := spliceMarkdown(old, r.markdown(), r.measuredSections())
	if i, j, k := strings.Index(spliced, "old failover"), strings.Index(spliced, "## Read after write"), strings.Index(spliced, "## Memory"); !(i < j && j < k) ||
		!strings.Contains(spliced, "old faults") {
		t.Errorf("spliced:\n%s", spliced)
	}
	// Without the scenario, no section.
	r.raw = nil
	if strings.Contains(r.markdown(), "## Read after write") || strings.Contains(r.text(), "=== read after write") {
		t.Error("the section is rendered without figures")
	}
}

func TestRawFormatting(t *testing.T) {
	for x, want := range map[float64]string{0: "0%", 100: "100%", 0.4166: "0.42%", 12.54: "12.5%"} {
		if got := fmtPct(x); got != want {
			t.Errorf("fmtPct(%g) = %q, want %q", x, got, want)
		}
	}
	if got := fmtSignedDur(-1500 * time.Microsecond); got != "-1.50ms" {
		t.Errorf("fmtSignedDur(-1.5ms) = %q", got)
	}
	if got := fmtSignedDur(85 * time.Microsecond); got != "+85µs" {
		t.Errorf("fmtSignedDur(85µs) = %q", got)
	}
	for range 1000 {
		if g := rawGap(time.Millisecond, 5*time.Millisecond); g < time.Millisecond || g > 5*time.Millisecond {
			t.Fatalf("rawGap = %s", g)
		}
	}
	if g := rawGap(3*time.Millisecond, 3*time.Millisecond); g != 3*time.Millisecond {
		t.Errorf("rawGap(3ms, 3ms) = %s", g)
	}
	// The GitLab way's check has the position in its text: only a
	// position goes there.
	pg := rawQueries(benchDriver{Backend: &testcluster.Backend{Name: testcluster.Postgres}})
	my := rawQueries(benchDriver{Backend: &testcluster.Backend{Name: testcluster.MariaDB}})
	for _, c := range []struct {
		q         rawSQL
		pos, want string
	}{
		{pg, "0/3000148", "SELECT COALESCE(pg_last_wal_replay_lsn() >= '0/3000148'::pg_lsn, false)"},
		{pg, "0/1'::pg_lsn; DROP TABLE x; --", ""},
		{my, "0-55606-12,1-2-3", "SELECT MASTER_GTID_WAIT('0-55606-12,1-2-3', 0) = 0"},
		{my, "0-1-2') OR SLEEP(1) -- ", ""},
		{my, "", ""},
	} {
		got, err := c.q.caughtUp(c.pos)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("caughtUp(%q) = %q, %v; want %q", c.pos, got, err, c.want)
		}
	}
}

// TestBenchReadAfterWriteSmoke runs the scenario with replica1 delayed on
// both engines of the running test clusters, for the bare driver, rwpool
// with tokens and the Rails and GitLab ways, and checks what each must
// show: the bare driver on the delayed replica misses nearly every write
// it follows; rwpool and the GitLab way miss none and still read from a
// replica (replica2) most of the time; the Rails way reads every one from
// the primary. Afterwards replica1 applies at its normal pace again.
func TestBenchReadAfterWriteSmoke(t *testing.T) {
	testcluster.Backends(t) // skips without the clusters, fails under CI=true
	dir := os.Getenv("RWPOOL_CLUSTER_DIR")
	if dir == "" {
		t.Fatal("RWPOOL_CLUSTER_DIR is not set: source the cluster's env file")
	}
	cl, err := loadCluster(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	o, st, done := parseBenchFlags([]string{"--read-after-write", "delayed", "--raw-variants", "bare,rwpool,rails,gitlab",
		"--raw-rounds", "1", "--raw-duration", "1s", "--raw-warmup", "500ms", "--raw-delay", "2s"}, nil, nil)
	if done {
		t.Fatalf("flags: status %d", st)
	}
	o.noThroughput, o.noMemory = true, true // the report shows this scenario alone
	rep := &benchReport{opts: o}
	for _, drv := range []string{"postgres", "mysql"} {
		d := cl.driver(drv)
		rows, err := runReadAfterWrite(context.Background(), o, cl, d, t.Logf)
		rep.raw = append(rep.raw, rows...)
		if err != nil {
			t.Fatalf("%s: %v", drv, err)
		}
		if len(rows) != 4 {
			t.Fatalf("%s: %d rows, want 4", drv, len(rows))
		}
		for _, row := range rows {
			f := row.rounds[0]
			errs, reads, rep1, stale := f.errs, f.reads, f.onReplica, f.stale
			switch row.variant {
			case "bare":
				if reads == 0 || stale*10 < reads*9 || rep1 != reads {
					t.Errorf("%s: bare: %d reads, %d stale, %d on a replica: want nearly all stale, all on the replica", drv, reads, stale, rep1)
				}
			case "rwpool", "gitlab":
				if reads == 0 || stale != 0 || errs != 0 || rep1*2 < reads {
					t.Errorf("%s: %s: %d reads, %d stale, %d errors, %d on a replica: want none stale, most on a replica (%s)",
						drv, row.variant, reads, stale, errs, rep1, row.firstErr)
				}
			case "rails":
				if reads == 0 || stale != 0 || rep1 != 0 {
					t.Errorf("%s: rails: %d reads, %d stale, %d on a replica: want all on the primary", drv, reads, stale, rep1)
				}
			}
		}
		// The delay is undone: a write on the primary reaches replica1 within a second.
		if err := caughtUpWithin(d, time.Second); err != nil {
			t.Errorf("%s: replica1 after the scenario: %v", drv, err)
		}
	}
	text := rep.text()
	t.Logf("report:\n%s", text)
	for _, re := range []string{
		`Read after write across processes, replica1 applies 2s late, lib/pq → PostgreSQL: median \(min–max\) of 1 round of 1s`,
		`Read after write across processes, replica1 applies 2s late, go-sql-driver/mysql → MariaDB`,
		`(?m)^  rwpool +\d+ +\d+\.?\d*% +0 +0% `,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("report does not match %q", re)
		}
	}
}

// caughtUpWithin makes a write on d's primary and waits up to limit for
// replica1 to have replayed it, with the GitLab way's queries.
func caughtUpWithin(d benchDriver, limit time.Duration) error {
	ctx := context.Background()
	q := rawQueries(d)
	p, err := sql.Open(d.Driver, d.NodeDSN(d.Primary))
	if err != nil {
		return err
	}
	defer p.Close()
	r, err := sql.Open(d.Driver, d.NodeDSN(d.Replicas[0]))
	if err != nil {
		return err
	}
	defer r.Close()
	const tbl = "rwpool_bench_raw_undone"
	for _, s := range []string{"DROP TABLE IF EXISTS " + tbl, "CREATE TABLE " + tbl + " (id INT)"} {
		if _, err := p.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	defer p.ExecContext(ctx, "DROP TABLE IF EXISTS "+tbl)
	var pos string
	if err := p.QueryRowContext(ctx, q.position).Scan(&pos); err != nil {
		return err
	}
	start := time.Now()
	for {
		check, err := q.caughtUp(pos)
		if err != nil {
			return err
		}
		var ok bool
		if err := r.QueryRowContext(ctx, check).Scan(&ok); err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Since(start) > limit {
			return errors.New("a write on the primary was not replayed within " + limit.String() + ": is replica1 still delayed?")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
