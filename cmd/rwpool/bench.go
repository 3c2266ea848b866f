package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const benchUsage = `Usage: rwpool bench [flags]

Measures rwpool against the bare driver, two other read/write splitters,
gorm.io/plugin/dbresolver and github.com/tsenart/nap, and two proxies,
Pgpool-II and HAProxy, on the project's real
replicated clusters (scripts/cluster.sh: a PostgreSQL primary with two
streaming standbys and a MariaDB primary with two GTID replicas on
127.0.0.1), through lib/pq and go-sql-driver/mysql.

By default it brings its own clusters up with scripts/cluster.sh (state dir
/tmp/rwpool-bench, PostgreSQL on 55632-55634, MariaDB on 55506-55508: apart
from the test clusters) and tears them down at the end, on error and on
Ctrl-C too. With --env it uses a running cluster described by an env file
written by 'cluster.sh up', and leaves it running.

1. Throughput: SELECT 1, scanned into an int, from 1, 8 and 64 goroutines
   through each variant:
     bare        database/sql straight to replica1
     bare-again  the same, measured a second time in each round: bare-again
                 over bare is the noise floor of the ratios
     rwpool      rwpool, primary + replica1 (every read lands on replica1)
     rwpool-2r   rwpool, primary + replica1 + replica2 (with --variants)
     dbresolver  gorm + dbresolver, Sources=primary, Replicas=replica1
     nap         nap.Open(driver, "primary;replica1")
     pgpool      Pgpool-II (PostgreSQL only) in front of the primary and both
                 replicas, one *sql.DB on its port
     haproxy     HAProxy: a write endpoint (primary) and a read endpoint
                 (both replicas), a *sql.DB on each, reads to the read one
   The proxies run with the configs of bench/proxies/, started by
   scripts/proxies.sh up (with --env too; Debian's pgpool2 and haproxy are
   installed with apt-get when missing), restarted before each of their
   fault and failover scenarios, and stopped at the end.
   Each measurement opens the variant afresh (closed afterwards), checks
   that its reads land on the replica, runs it for --warmup (not
   measured) and then for --duration. The variants are interleaved in
   rounds, each round starting one variant later (A B C D E, B C D E A,
   ...), and the tables show the median of the rounds with their minimum
   and maximum: queries/s, p50 and p99 latency, and allocations per
   statement (runtime.MemStats.Mallocs over the run divided by the
   statements: the driver's allocations are included). Then each
   variant's ratios to bare in the same round (median, min-max), with
   bare-again/bare as the noise floor, and rwpool against the targets:
   throughput within the noise floor, median p99 ratio <= 1.10. Then the
   latency distribution at the highest concurrency and rwpool's pool
   waits.
2. Faults, for bare (to replica1), rwpool, dbresolver, nap and the
   proxies: a steady read load (--fault-goroutines workers, a read every --fault-pace each,
   each read with its own --fault-timeout context) runs for --fault-steady;
   then replica1 meets the fault, the load goes on for --fault-window, the
   fault is undone and the cluster is waited for (status, wait-sync)
   before the next variant:
     kill         killed (cluster.sh kill-node, SIGKILL; start-node)
     hang         hung (hang-node, SIGSTOP; resume-node)
     hang-hedged  hung while holding a quarter of the reads (replica1 and
                  replica2 at weights 1:3), 1s deadlines; also rwpool with
                  hedge_after=50ms;hedge_budget=30%
     slow         answering 200ms late (both replicas behind forwarders,
                  weights 1:1); also rwpool with balance=adaptive
   Reported: reads failed, reads over 1s, the longest read, the p99 over
   the fault, the time until traffic was normal again (defined in the
   output) and rwpool's hedges per read. rwpool runs with its defaults
   check_interval=2s, probe_timeout=1s.
3. Failover, under a mixed load (4 writers, 8 readers), for the bare
   driver, dbresolver, nap and rwpool (also with failover_wait=5s, and
   with follow_promotion=on instead of an endpoint), Pgpool-II (which
   looks for the new primary itself) and HAProxy (its write server moved
   and its sessions to the old primary cut with its runtime API):
     switchover  MariaDB: the primary set read-only, replica1 promoted,
                 the endpoint in front of the primary moved to it
     promotion   PostgreSQL: the primary killed, replica1 promoted
                 (pg_promote()), the endpoint moved to it
   The topology is restored after each variant. Reported: failed writes,
   time until writes are back and normal again, acknowledged writes
   lost on the new primary, failed reads.
4. Read after write across processes, for rwpool with tokens and the
   peers' ways: --raw-goroutines writer/reader pairs, each on a row of its
   own; the writer (a *sql.DB) UPDATEs its row on the primary and hands
   over what its way needs, the reader (another *sql.DB) reads the row
   --raw-gap later:
     bare        nothing handed over; reads from replica1
     rwpool      rwpool.SessionToken after the write, WithSessionToken in
                 the reader (rwpool over the primary and both replicas)
     dbresolver  gorm + dbresolver on both sides, both replicas; nothing
                 handed over
     rails       the Rails way: the write's time handed over, reads from
                 the primary for 2s after it, else from replica1
     gitlab      the GitLab way: the primary's position after the write
                 handed over (pg_current_wal_insert_lsn(), @@gtid_binlog_pos);
                 reads from a replica that has replayed it
                 (pg_last_wal_replay_lsn(), MASTER_GTID_WAIT(pos, 0)), both
                 tried in random order, else from the primary
     bare-again  bare once more: the noise floor of the p99 differences
   under two conditions: normal (replication at its own pace) and delayed
   (replica1 applies --raw-delay late: cluster.sh delay-node, undone
   afterwards). Each variant is opened once per condition; all of them
   warm up together, then are measured in interleaved rounds as in 1.
   Reported: the share of the reads a replica served, stale reads (an
   older value than the write's), the reader's p50/p99 and its p99 minus
   bare's in the same round, the writer's p50.
5. Memory: bytes per open *sql.Conn (rwpool's are virtual) against the bare
   driver's, and bytes per node of a DSN with many replicas.

Flags:
  --duration D          measured time of each variant in each round (default 3s)
  --warmup D            unmeasured load before each measurement (default 500ms)
  --rounds N            rounds of interleaved variants; median, min and max are shown (default 5)
  --goroutines LIST     concurrency levels (default 1,8,64)
  --drivers LIST        postgres (lib/pq), mysql (go-sql-driver/mysql) (default postgres,mysql)
  --variants LIST       bare, bare-again, rwpool, rwpool-2r, dbresolver, nap, pgpool, haproxy
                        (default bare,rwpool,dbresolver,nap,pgpool,haproxy,bare-again)
  --faults LIST         kill, hang, hang-hedged, slow, or none (default: all)
  --fault-steady D      load before the fault (default 1s)
  --fault-window D      load after the fault, before undoing it (default 8s)
  --fault-goroutines N  workers of the fault load (default 8)
  --fault-timeout D     context timeout of each read of the fault load (default 5s)
  --fault-pace D        each fault worker starts a read every D, or at once after a
                        slower one (default 10ms; 0: back to back)
  --failovers LIST      switchover, promotion, or none (default switchover,promotion)
  --failover-variants LIST
                        bare, dbresolver, nap, rwpool, rwpool-wait (failover_wait=5s),
                        rwpool-follow (follow_promotion=on, no endpoint),
                        rwpool-follow-wait (both), pgpool, haproxy (default: all)
  --failover-window D   load after the endpoint moves, before the topology is
                        restored (default 8s); in the Patroni scenarios, after
                        the new leader is writable
  --patroni LIST        crash, switchover, or none (default none): issue 23's
                        scenarios on a Patroni cluster (scripts/patroni.sh up,
                        brought up and down by the bench beside its cluster),
                        for bare lib/pq, pgx multi-host, HAProxy with Patroni's
                        REST checks, and rwpool with follow_promotion=on
  --patroni-env FILE    use the running Patroni cluster of this env file (from
                        'patroni.sh up'); it is not stopped
  --read-after-write LIST
                        normal, delayed, or none (default normal,delayed)
  --raw-variants LIST   bare, rwpool, dbresolver, rails, gitlab, bare-again
                        (default: all)
  --raw-duration D      measured time of each variant in each round (default 2s)
  --raw-warmup D        unmeasured pairs of every variant at once before the
                        rounds; rwpool's go on until its health checkers know
                        every replica's lag (default 2s)
  --raw-rounds N        rounds of interleaved variants (default 3)
  --raw-goroutines N    writer/reader pairs at once (default 4)
  --raw-gap D or D-D    wait between a write's return and its read, uniformly
                        random within the range (default 1ms-5ms)
  --raw-delay D         how late replica1 applies in the delayed condition,
                        whole seconds (default 2s)
  --no-throughput       skip the throughput measurements
  --no-memory           skip the memory measurements
  --splice              with --markdown: replace only the sections this run
                        measured in the existing file, keep the others
  --env FILE            use the running cluster of this env file (from 'cluster.sh up');
                        nothing is started or stopped
  --cluster-dir DIR     state dir of the cluster to bring up (default /tmp/rwpool-bench)
  --pg-port N           PostgreSQL primary port; standbys +1, +2 (default 55632)
  --my-port N           MariaDB primary port; replicas +1, +2 (default 55506)
  --cluster-script F    scripts/cluster.sh (default: found from the current directory up)
  --keep-cluster        leave the cluster it brought up running
  --markdown FILE       also write the report as Markdown (e.g. BENCHMARKS.md), with
                        SVG charts it links to
  --charts DIR          where the charts go (default: benchmarks/ next to the
                        --markdown file); with --splice, only the charts of the
                        sections measured are written

A default run takes about 30 minutes on a 2-core machine (with the proxies).

Examples:
  go run ./cmd/rwpool bench --markdown BENCHMARKS.md     (from a clone of the repository)
  rwpool bench --duration 1s --rounds 1 --faults none
  rwpool bench --env /tmp/rwpool-cluster/env --drivers mysql --goroutines 8
  rwpool bench --env /tmp/rwpool-cluster/env --no-throughput --faults none --failovers none --no-memory
  go run ./cmd/rwpool bench --no-throughput --faults none --read-after-write none --no-memory --markdown BENCHMARKS.md --splice
`

// benchOpts are bench's flags.
type benchOpts struct {
	duration, warmup time.Duration
	rounds           int
	goroutines       []int
	drivers          []string
	variants         []string
	faults           []string
	faultSteady      time.Duration
	faultWindow      time.Duration
	faultGoroutines  int
	faultTimeout     time.Duration
	faultPace        time.Duration
	failovers        []string
	failoverVariants []string
	failoverWindow   time.Duration
	patroni          []string // Patroni scenarios (bench_patroni.go)
	patroniEnv       string
	raw              []string // read-after-write conditions
	rawVariants      []string
	rawDuration      time.Duration
	rawWarmup        time.Duration
	rawRounds        int
	rawGoroutines    int
	rawGapMin        time.Duration
	rawGapMax        time.Duration
	rawDelay         time.Duration
	noThroughput     bool
	noMemory         bool
	splice           bool
	envFile          string
	clusterDir       string
	pgPort, myPort   int
	script           string
	keepCluster      bool
	markdown         string
	chartsDir        string
	args             []string // as given, for the command line to reproduce the run
}

// Everything bench knows how to run.
var (
	benchDrivers  = []string{"postgres", "mysql"}
	benchVariants = []string{"bare", "bare-again", "rwpool", "rwpool-2r", "dbresolver", "nap", "pgpool", "haproxy"}
)

// benchFaults are the fault scenarios, by name.
func benchFaults() []string {
	var out []string
	for _, s := range faultScenarios {
		out = append(out, s.name)
	}
	return out
}

// benchFailovers and benchFailoverVariants are the failover scenarios and
// their variants, by name.
func benchFailovers() []string {
	var out []string
	for _, s := range failoverScenarios {
		out = append(out, s.name)
	}
	return out
}

func benchFailoverVariants() []string {
	var out []string
	for _, v := range failoverVariants {
		out = append(out, v.id)
	}
	return out
}

// listFlag is a comma-separated list flag.
type listFlag struct{ v *[]string }

func (l listFlag) String() string {
	if l.v == nil {
		return ""
	}
	return strings.Join(*l.v, ",")
}

func (l listFlag) Set(s string) error {
	*l.v = nil
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*l.v = append(*l.v, f)
		}
	}
	return nil
}

// parseBenchFlags parses and checks bench's flags. done is set when the
// command must stop with status (help, or a usage error already printed).
func parseBenchFlags(args []string, stdout, stderr io.Writer) (o benchOpts, status int, done bool) {
	fs := newFlagSet("bench")
	var gor []string
	o = benchOpts{
		drivers:  slices.Clone(benchDrivers),
		variants: []string{"bare", "rwpool", "dbresolver", "nap", "pgpool", "haproxy", "bare-again"},
		faults:   benchFaults(),
		args:     args,

		failovers:        benchFailovers(),
		failoverVariants: benchFailoverVariants(),

		raw:         slices.Clone(rawConditions),
		rawVariants: slices.Clone(rawVariants),
		rawGapMin:   time.Millisecond,
		rawGapMax:   5 * time.Millisecond,
	}
	gor = []string{"1", "8", "64"}
	fs.DurationVar(&o.duration, "duration", 3*time.Second, "")
	fs.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "")
	fs.IntVar(&o.rounds, "rounds", 5, "")
	fs.Var(listFlag{&gor}, "goroutines", "")
	fs.Var(listFlag{&o.drivers}, "drivers", "")
	fs.Var(listFlag{&o.variants}, "variants", "")
	fs.Var(listFlag{&o.faults}, "faults", "")
	fs.DurationVar(&o.faultSteady, "fault-steady", time.Second, "")
	fs.DurationVar(&o.faultWindow, "fault-window", 8*time.Second, "")
	fs.IntVar(&o.faultGoroutines, "fault-goroutines", 8, "")
	fs.DurationVar(&o.faultTimeout, "fault-timeout", 5*time.Second, "")
	fs.DurationVar(&o.faultPace, "fault-pace", 10*time.Millisecond, "")
	fs.Var(listFlag{&o.failovers}, "failovers", "")
	fs.Var(listFlag{&o.failoverVariants}, "failover-variants", "")
	fs.DurationVar(&o.failoverWindow, "failover-window", 8*time.Second, "")
	fs.Var(listFlag{&o.patroni}, "patroni", "")
	fs.StringVar(&o.patroniEnv, "patroni-env", "", "")
	fs.Var(listFlag{&o.raw}, "read-after-write", "")
	fs.Var(listFlag{&o.rawVariants}, "raw-variants", "")
	fs.DurationVar(&o.rawDuration, "raw-duration", 2*time.Second, "")
	fs.DurationVar(&o.rawWarmup, "raw-warmup", 2*time.Second, "")
	fs.IntVar(&o.rawRounds, "raw-rounds", 3, "")
	fs.IntVar(&o.rawGoroutines, "raw-goroutines", 4, "")
	fs.Var(gapFlag{&o.rawGapMin, &o.rawGapMax}, "raw-gap", "")
	fs.DurationVar(&o.rawDelay, "raw-delay", 2*time.Second, "")
	fs.BoolVar(&o.noThroughput, "no-throughput", false, "")
	fs.BoolVar(&o.noMemory, "no-memory", false, "")
	fs.BoolVar(&o.splice, "splice", false, "")
	fs.StringVar(&o.envFile, "env", "", "")
	fs.StringVar(&o.clusterDir, "cluster-dir", "/tmp/rwpool-bench", "")
	fs.IntVar(&o.pgPort, "pg-port", 55632, "")
	fs.IntVar(&o.myPort, "my-port", 55506, "")
	fs.StringVar(&o.script, "cluster-script", "", "")
	fs.BoolVar(&o.keepCluster, "keep-cluster", false, "")
	fs.StringVar(&o.markdown, "markdown", "", "")
	fs.StringVar(&o.chartsDir, "charts", "", "")
	pos, status, done := parseFlags(fs, benchUsage, args, stdout, stderr)
	if done {
		return o, status, true
	}
	const cmd = "rwpool bench"
	bad := func(format string, a ...any) (benchOpts, int, bool) {
		return o, usageErr(stderr, cmd, format, a...), true
	}
	if len(pos) > 0 {
		return bad("unexpected argument %q", pos[0])
	}
	for _, g := range gor {
		n, err := strconv.Atoi(g)
		if err != nil || n < 1 || n > 1024 {
			return bad("--goroutines: %q is not a number from 1 to 1024", g)
		}
		o.goroutines = append(o.goroutines, n)
	}
	if slices.Equal(o.faults, []string{"none"}) {
		o.faults = nil
	}
	if slices.Equal(o.failovers, []string{"none"}) {
		o.failovers = nil
	}
	if slices.Equal(o.patroni, []string{"none"}) {
		o.patroni = nil
	}
	if slices.Equal(o.raw, []string{"none"}) {
		o.raw = nil
	}
	for _, c := range []struct {
		flag      string
		got, have []string
	}{{"--drivers", o.drivers, benchDrivers}, {"--variants", o.variants, benchVariants}, {"--faults", o.faults, benchFaults()},
		{"--failovers", o.failovers, benchFailovers()}, {"--failover-variants", o.failoverVariants, benchFailoverVariants()},
		{"--patroni", o.patroni, benchPatroni()},
		{"--read-after-write", o.raw, rawConditions}, {"--raw-variants", o.rawVariants, rawVariants}} {
		for _, v := range c.got {
			if !slices.Contains(c.have, v) {
				return bad("%s: unknown %q (have %s)", c.flag, v, strings.Join(c.have, ", "))
			}
		}
	}
	switch {
	case len(o.goroutines) == 0:
		return bad("--goroutines: no concurrency level given")
	case len(o.drivers) == 0:
		return bad("--drivers: no driver given")
	case len(o.variants) == 0:
		return bad("--variants: no variant given")
	case o.duration <= 0:
		return bad("--duration must be positive")
	case o.warmup < 0:
		return bad("--warmup must not be negative")
	case o.rounds < 1:
		return bad("--rounds must be at least 1")
	case o.faultSteady <= 0 || o.faultWindow <= 0 || o.faultTimeout <= 0:
		return bad("--fault-steady, --fault-window and --fault-timeout must be positive")
	case o.faultPace < 0:
		return bad("--fault-pace must not be negative")
	case o.faultWindow < 2*time.Second && len(o.faults) > 0:
		return bad("--fault-window must be at least 2s (recovery needs 1s of normal traffic)")
	case len(o.failovers) > 0 && len(o.failoverVariants) == 0:
		return bad("--failover-variants: no variant given")
	case o.failoverWindow < 2*time.Second && len(o.failovers) > 0:
		return bad("--failover-window must be at least 2s (writes are normal again after 1s of normal traffic)")
	case o.splice && o.markdown == "":
		return bad("--splice needs --markdown FILE")
	case o.chartsDir != "" && o.markdown == "":
		return bad("--charts needs --markdown FILE")
	case o.faultGoroutines < 1 || o.faultGoroutines > 1024:
		return bad("--fault-goroutines must be between 1 and 1024, got %d", o.faultGoroutines)
	case o.pgPort < 1 || o.pgPort > 65533 || o.myPort < 1 || o.myPort > 65533:
		return bad("--pg-port and --my-port must be ports (the two next ones are used too)")
	case o.envFile != "" && o.keepCluster:
		return bad("--keep-cluster has no meaning with --env (nothing is started)")
	case len(o.raw) > 0 && len(o.rawVariants) == 0:
		return bad("--raw-variants: no variant given")
	case o.rawDuration <= 0:
		return bad("--raw-duration must be positive")
	case o.rawWarmup < 0:
		return bad("--raw-warmup must not be negative")
	case o.rawRounds < 1:
		return bad("--raw-rounds must be at least 1")
	case o.rawGoroutines < 1 || o.rawGoroutines > 256:
		return bad("--raw-goroutines must be between 1 and 256, got %d", o.rawGoroutines)
	case o.rawDelay < time.Second || o.rawDelay%time.Second != 0:
		return bad("--raw-delay must be whole seconds, at least 1s (cluster.sh delay-node takes seconds)")
	}
	return o, 0, false
}

// gapFlag is --raw-gap: a duration, or a range of them ("1ms-5ms").
type gapFlag struct{ lo, hi *time.Duration }

func (g gapFlag) String() string {
	if g.lo == nil {
		return ""
	}
	if *g.lo == *g.hi {
		return g.lo.String()
	}
	return g.lo.String() + "-" + g.hi.String()
}

func (g gapFlag) Set(s string) error {
	a, b, isRange := strings.Cut(s, "-")
	lo, err := time.ParseDuration(strings.TrimSpace(a))
	if err != nil {
		return err
	}
	hi := lo
	if isRange {
		if hi, err = time.ParseDuration(strings.TrimSpace(b)); err != nil {
			return err
		}
	}
	if lo < 0 || hi < lo || hi > 10*time.Second {
		return fmt.Errorf("%q: want D or D-D with 0 <= D <= D <= 10s", s)
	}
	*g.lo, *g.hi = lo, hi
	return nil
}

// runBench is the bench subcommand.
func runBench(args []string, stdout, stderr io.Writer) int {
	o, status, done := parseBenchFlags(args, stdout, stderr)
	if done {
		return status
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := benchMain(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "rwpool bench: %s\n", oneLine(err.Error()))
		return exitProblem
	}
	return exitOK
}

// benchMain brings the cluster up (or loads --env), runs every part and
// prints the report; the cluster it brought up is torn down whatever
// happens.
func benchMain(ctx context.Context, o benchOpts, out io.Writer) (err error) {
	start := time.Now()
	logf := func(format string, a ...any) {
		fmt.Fprintf(out, "[bench %6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
	var cl *cluster
	if o.envFile != "" {
		if cl, err = loadCluster(o.envFile); err != nil {
			return err
		}
		logf("using the running cluster of %s", o.envFile)
	} else {
		script := o.script
		if script == "" {
			if script, err = findClusterScript(); err != nil {
				return err
			}
		}
		logf("bringing the clusters up: %s up (dir %s, PostgreSQL %d-%d, MariaDB %d-%d)",
			script, o.clusterDir, o.pgPort, o.pgPort+2, o.myPort, o.myPort+2)
		cl, err = clusterUp(ctx, script, o.clusterDir, o.pgPort, o.myPort)
		defer func() {
			if o.keepCluster {
				logf("--keep-cluster: cluster left running; env file %s/env", o.clusterDir)
				return
			}
			logf("tearing the clusters down")
			if derr := clusterDown(script, o.clusterDir); derr != nil {
				err = errors.Join(err, derr)
			}
		}()
		if err != nil {
			return err
		}
	}
	if usesProxies(o) {
		logf("starting the proxies: %s up", cl.proxyScript())
		if err := cl.startProxies(ctx); err != nil {
			return err
		}
		defer func() {
			logf("stopping the proxies")
			if derr := cl.stopProxies(); derr != nil {
				err = errors.Join(err, derr)
			}
		}()
	}
	rep := &benchReport{opts: o, started: start}
	if usesProxies(o) {
		rep.proxyCfg = proxyConfigSection(filepath.Dir(filepath.Dir(cl.script)))
	}
	rep.machine = describeMachine(ctx, cl)
	rep.changes = loadChanges(filepath.Dir(filepath.Dir(cl.script)))
	rep.shimCost = loadShimCost(filepath.Dir(filepath.Dir(cl.script)))
	for _, drv := range o.drivers {
		if o.noThroughput {
			break
		}
		res, err := runThroughput(ctx, o, cl.driver(drv), logf)
		rep.throughput = append(rep.throughput, res...)
		if err != nil {
			return err
		}
	}
	for _, drv := range o.drivers {
		for _, f := range o.faults {
			sc, _ := faultScenarioNamed(f)
			res, err := runFaults(ctx, o, cl, cl.driver(drv), sc, logf)
			rep.faults = append(rep.faults, res...)
			if err != nil {
				return err
			}
		}
	}
	for _, s := range failoverScenarios {
		if !slices.Contains(o.failovers, s.name) || !slices.Contains(o.drivers, s.driver) {
			continue
		}
		res, err := runFailovers(ctx, o, cl, cl.driver(s.driver), s, logf)
		rep.failovers = append(rep.failovers, res...)
		if err != nil {
			return err
		}
	}
	if len(o.patroni) > 0 {
		pc, stop, err := patroniUp(ctx, o, cl, logf)
		defer func() {
			if serr := stop(); serr != nil {
				err = errors.Join(err, serr)
			}
		}()
		if err != nil {
			return err
		}
		for _, s := range patroniScenarios {
			if !slices.Contains(o.patroni, s.name) {
				continue
			}
			res, err := runPatroni(ctx, o, pc, s, logf)
			rep.patroni = append(rep.patroni, res...)
			if err != nil {
				return err
			}
		}
	}
	for _, drv := range o.drivers {
		if len(o.raw) == 0 {
			break
		}
		res, err := runReadAfterWrite(ctx, o, cl, cl.driver(drv), logf)
		rep.raw = append(rep.raw, res...)
		if err != nil {
			return err
		}
	}
	if !o.noMemory {
		logf("memory")
		if rep.memory, err = measureMemory(ctx, cl.driver(o.drivers[0])); err != nil {
			return err
		}
	}
	rep.elapsed = time.Since(start)
	fmt.Fprintln(out)
	fmt.Fprint(out, rep.text())
	if o.markdown != "" {
		files, err := rep.writeCharts(o.markdown, chartsDir(o.markdown, o.chartsDir))
		if err != nil {
			return err
		}
		logf("wrote %d charts into %s", len(files), chartsDir(o.markdown, o.chartsDir))
		md := rep.markdown()
		if o.splice {
			old, err := os.ReadFile(o.markdown)
			if err != nil {
				return fmt.Errorf("--splice: %w", err)
			}
			md = spliceMarkdown(string(old), md, rep.measuredSections())
		}
		if err := os.WriteFile(o.markdown, []byte(md), 0o644); err != nil {
			return err
		}
		logf("wrote %s", o.markdown)
	}
	return nil
}
