package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/cmd/rwpool/internal/embedded"
	"github.com/rwpool/rwpool/cmd/rwpool/internal/faultproxy"
	"github.com/rwpool/rwpool/cmd/rwpool/internal/live"
	"github.com/rwpool/rwpool/cmd/rwpool/internal/workload"
	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/health"
	"github.com/rwpool/rwpool/routing"
)

const demoUsage = `Usage: rwpool demo [flags]

Shows what rwpool does, on a machine with nothing installed. It starts three
MySQL-protocol servers inside the process (go-mysql-server, each its own
in-memory database on a free 127.0.0.1 port): a primary and two replicas,
kept in sync by statement-based replication from the primary's log. In
front of each server runs a fault-injecting TCP proxy, and rwpool reaches
the servers only through the proxies, with go-sql-driver/mysql, as it would
reach real ones:

  driver=mysql; primary=...; replica=...; replica=...;
  pool_size=16; check_interval=500ms; probe_timeout=300ms

Several goroutines run a mixed workload through one *sql.DB: reads
(SELECT ... WHERE id = ?) and writes (UPDATE ... SET v = v + 1). Every read
also returns the name of the server that answered it, which the demo checks
against rwpool.WithRoute. Meanwhile a scripted scenario, scaled to
--duration, injects faults through the proxies:

  15%  kill replica1     its proxy refuses connections and resets open ones
  30%  hang replica2     its proxy accepts connections but forwards nothing
  45%  bring both back
  60%  take the primary down (killed)
  75%  bring the primary back

The screen shows, refreshed live, each node's state, share of the
statements, p50/p99 latency of the last interval, pool usage (open / in
use / max), and the totals: ok, failed, replays, fallbacks. On a terminal
the view is redrawn in place; otherwise (a pipe, a file, CI) it is printed
as plain lines. At the end a summary tells what happened: failed requests,
how fast traffic moved away from each failed node and how fast each came
back.

A read attempt that outlives its deadline (1s) on the hung replica is run
again by the workload, up to 3 times, and counted as "read timeouts
retried": rwpool replays reads that fail at the connection level, but a
read whose own deadline passed has no time left to replay. Writes are never
retried.

With --dsn the same workload and live view run against a real cluster
instead (no embedded servers, no fault injection): the table rwpool_demo
(id INT PRIMARY KEY, v BIGINT) is created through rwpool if missing, with
100 rows, and updated by the workload. The drivers postgres, pgx and mysql
are built in. Ctrl-C ends the run early and still prints the summary.

Flags:
  --duration D     run time (default 30s; at least 5s for the embedded demo)
  --mix R          share of reads, 0 to 1 (default 0.9)
  --goroutines N   concurrent workers (default 8)
  --dsn DSN        run against this composite rwpool DSN instead of the
                   embedded cluster
  --refresh D      live view refresh interval (default 500ms on a terminal,
                   1s otherwise)
  --plain          plain lines even on a terminal
  --report FILE    also write an HTML report of the run to FILE: per node
                   its share of the statements, p99 latency and state over
                   time, the operations that succeeded and failed, the
                   scenario's faults marked on every chart, and the
                   summary; one self-contained file (inline SVG and CSS,
                   no script, nothing fetched), sampled every 200ms (less
                   often for runs over 5 minutes)

Examples:
  go run ./cmd/rwpool demo
  rwpool demo --duration 1m --mix 0.8 --goroutines 16
  rwpool demo --duration 8s --plain > demo.log
  rwpool demo --duration 20s --report demo.html
  rwpool demo --dsn "driver=postgres;primary='host=db1 user=app dbname=shop';replica='host=db2 user=app dbname=shop'"
`

// demoOpts are the demo's flags.
type demoOpts struct {
	duration   time.Duration
	mix        float64
	goroutines int
	dsn        string
	refresh    time.Duration
	plain      bool
	report     string // --report: the HTML report's path
}

// minEmbeddedDuration leaves the scenario's steps time for rwpool to trip
// and recover nodes (check_interval 500ms, probe_timeout 300ms).
const minEmbeddedDuration = 5 * time.Second

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo")
	var o demoOpts
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "")
	fs.Float64Var(&o.mix, "mix", 0.9, "")
	fs.IntVar(&o.goroutines, "goroutines", 8, "")
	fs.StringVar(&o.dsn, "dsn", "", "")
	fs.DurationVar(&o.refresh, "refresh", 0, "")
	fs.BoolVar(&o.plain, "plain", false, "")
	fs.StringVar(&o.report, "report", "", "")
	pos, status, done := parseFlags(fs, demoUsage, args, stdout, stderr)
	if done {
		return status
	}
	const cmd = "rwpool demo"
	switch {
	case len(pos) > 0:
		return usageErr(stderr, cmd, "unexpected argument %q (the DSN goes in --dsn)", pos[0])
	case o.duration <= 0:
		return usageErr(stderr, cmd, "--duration must be positive")
	case o.dsn == "" && o.duration < minEmbeddedDuration:
		return usageErr(stderr, cmd, "--duration must be at least %s for the embedded demo's scenario", minEmbeddedDuration)
	case o.mix < 0 || o.mix > 1:
		return usageErr(stderr, cmd, "--mix must be between 0 and 1 (the share of reads), got %g", o.mix)
	case o.goroutines < 1 || o.goroutines > 1024:
		return usageErr(stderr, cmd, "--goroutines must be between 1 and 1024, got %d", o.goroutines)
	case o.refresh < 0:
		return usageErr(stderr, cmd, "--refresh must not be negative")
	}
	var cfg *dsn.Config
	if o.dsn != "" {
		var err error
		if cfg, err = dsn.Parse(o.dsn); err != nil {
			return usageErr(stderr, cmd, "--dsn: %v", err)
		}
		if !slices.Contains(sql.Drivers(), cfg.Driver) {
			return usageErr(stderr, cmd, "--dsn: driver %q is not built into this command (have %s)",
				cfg.Driver, strings.Join(sql.Drivers(), ", "))
		}
	}

	ansi := !o.plain && isTerminal(stdout)
	if o.refresh == 0 {
		o.refresh = time.Second
		if ansi {
			o.refresh = 500 * time.Millisecond
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills the process as usual
	}()
	d := &demo{o: o, out: stdout, ansi: ansi, cfg: cfg}
	var f *os.File
	if o.report != "" {
		// Created before the run, so that a path that cannot be written
		// fails now rather than after it.
		var err error
		if f, err = os.Create(o.report); err != nil {
			fmt.Fprintf(stderr, "rwpool demo: --report: %s\n", oneLine(err.Error()))
			return exitProblem
		}
		defer f.Close() // on the error paths; the error is reported below otherwise
		d.htmlOut = f
	}
	if err := d.run(ctx); err != nil {
		fmt.Fprintf(stderr, "rwpool demo: %s\n", oneLine(err.Error()))
		return exitProblem
	}
	if f != nil {
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "rwpool demo: --report: %s\n", oneLine(err.Error()))
			return exitProblem
		}
		fmt.Fprintf(stdout, "\nreport written to %s\n", o.report)
	}
	return exitOK
}

// termWidth returns the width of the terminal w, 0 if unknown.
func termWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil {
			return width
		}
	}
	return 0
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// demo is one run of the demo.
type demo struct {
	o    demoOpts
	out  io.Writer
	ansi bool
	cfg  *dsn.Config // --dsn, parsed; nil for the embedded cluster
	// htmlOut receives the HTML report (--report); nil without one.
	htmlOut io.Writer
	tl      *timeline // the report's time series; nil without --report

	cluster *embedded.Cluster
	proxies map[string]*faultproxy.Proxy // by node name
	db      *sql.DB
	view    *live.View
	col     *live.Collector
	start   time.Time

	mu       sync.Mutex
	step     string
	steps    []stepRecord
	faults   []*faultWindow
	events   []rwpool.Event
	served   map[string][]time.Time // when each node's Served counter grew (sampled)
	failures []failure              // failed operations, for the report
	lastSnap rwpool.Snapshot
	lastLat  map[string]live.Latency // latencies of the last interval drawn
}

// stepRecord is a scenario step that ran.
type stepRecord struct {
	at    time.Duration // since start
	title string
	err   error
}

// faultWindow is one fault injected on one node, until its restore.
type faultWindow struct {
	node, kind string // kind: "killed", "hung"
	from, to   time.Time
}

// failure is one failed operation.
type failure struct {
	at, end     time.Time // when it started and failed
	kind        workload.Kind
	unavailable bool
	latency     time.Duration
	err         string
}

const maxFailuresKept = 100000

func (d *demo) elapsed() time.Duration { return time.Since(d.start) }

func (d *demo) setStep(s string) {
	d.mu.Lock()
	d.step = s
	d.mu.Unlock()
}

// run sets everything up, runs the workload with the live view and the
// scenario, and prints the summary.
func (d *demo) run(ctx context.Context) error {
	d.served = map[string][]time.Time{}
	d.col = live.NewCollector()
	d.view = live.NewView(d.out, d.ansi, func() int { return termWidth(d.out) })

	var dsnText string
	if d.cfg == nil {
		fmt.Fprintln(d.out, "starting an embedded primary and two replicas (go-mysql-server), each behind a fault-injecting proxy...")
		c, err := embedded.Start(embedded.Options{Replicas: 2})
		if err != nil {
			return err
		}
		d.cluster = c
		defer c.Close()
		d.proxies = map[string]*faultproxy.Proxy{}
		for _, s := range c.Servers() {
			p, err := faultproxy.New("127.0.0.1:0", s.Addr)
			if err != nil {
				return err
			}
			d.proxies[s.Name] = p
			defer p.Close()
		}
		dsnText = d.embeddedDSN()
		fmt.Fprintf(d.out, "rwpool DSN:\n  %s\n", strings.ReplaceAll(dsnText, ";", ";\n  "))
	} else {
		dsnText = d.o.dsn
		fmt.Fprintf(d.out, "rwpool DSN: %s\n", d.cfg.String())
	}

	db, err := sql.Open("rwpool", dsnText)
	if err != nil {
		return err
	}
	d.db = db
	defer db.Close()
	events := make(chan rwpool.Event, 256)
	if err := rwpool.Configure(db, rwpool.WithEventHandler(func(e rwpool.Event) {
		d.mu.Lock()
		d.events = append(d.events, e)
		d.mu.Unlock()
		select {
		case events <- e:
		default: // the view is behind: the report still has it
		}
	})); err != nil {
		return err
	}

	dialect := routing.DialectMySQL
	if d.cfg != nil {
		dialect = routing.DialectOf(d.cfg.Driver)
	}
	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = workload.Setup(setupCtx, db, dialect, 100)
	if err == nil && d.cluster != nil {
		err = d.cluster.WaitCaughtUp(setupCtx)
	}
	cancel()
	if err != nil {
		return fmt.Errorf("setting up the table: %w", err)
	}

	d.start = time.Now()
	runCtx, cancelRun := context.WithTimeout(ctx, d.o.duration)
	defer cancelRun()
	var bg sync.WaitGroup
	bgCtx, stopBG := context.WithCancel(context.Background())
	bg.Add(3)
	if d.htmlOut != nil {
		d.tl = newTimeline(sampleInterval(d.o.duration))
		bg.Add(1)
		go func() {
			defer bg.Done()
			d.tl.run(bgCtx, d.start, func() (rwpool.Snapshot, error) { return rwpool.Stats(d.db) })
		}()
	}
	go func() { defer bg.Done(); d.sample(bgCtx) }()
	go func() { defer bg.Done(); d.refresh(bgCtx) }()
	go func() {
		defer bg.Done()
		for {
			select {
			case <-bgCtx.Done():
				return
			case e := <-events:
				d.view.Event(e.At.Sub(d.start), describeEvent(e))
			}
		}
	}()
	var scen sync.WaitGroup
	if d.cluster != nil {
		scen.Add(1)
		go func() { defer scen.Done(); d.scenario(runCtx) }()
	} else {
		d.setStep("workload against " + d.cfg.Driver + " (no fault injection on a real cluster)")
	}

	workload.Run(runCtx, workload.Config{
		DB: db, Dialect: dialect, Goroutines: d.o.goroutines, ReadRatio: d.o.mix, Rows: 100,
		Identity: d.cluster != nil, IdentityTable: embedded.NodeTable,
		Timeout: time.Second, Retries: 3,
		Record: d.record,
	})
	end := time.Now()
	scen.Wait()
	stopBG()
	bg.Wait()
	if d.cluster != nil {
		// Let the last writes land and replicate before the report.
		waitCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		d.cluster.WaitQuiet(waitCtx, 200*time.Millisecond)
		cancel()
	}
	if d.ansi {
		d.drawFrame(end.Sub(d.start), nil) // the final state stays on screen
	}
	d.view.Close()
	fmt.Fprintln(d.out)
	summary := d.report(end)
	fmt.Fprint(d.out, summary)
	if d.htmlOut != nil {
		if err := renderHTML(d.htmlOut, d.htmlReport(end, summary)); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	}
	return nil
}

// embeddedDSN is the composite DSN over the proxies.
func (d *demo) embeddedDSN() string {
	node := func(name string) string {
		return fmt.Sprintf("'root@tcp(%s)/%s?interpolateParams=true&timeout=1s' name=%s",
			d.proxies[name].Addr(), embedded.Database, name)
	}
	var b strings.Builder
	b.WriteString("driver=mysql;primary=" + node("primary") + ";")
	for _, r := range d.cluster.Replicas {
		b.WriteString("replica=" + node(r.Name) + ";")
	}
	b.WriteString("pool_size=16;check_interval=500ms;probe_timeout=300ms")
	return b.String()
}

// record takes every workload attempt.
func (d *demo) record(a workload.Attempt) {
	d.col.Record(a)
	if d.tl != nil {
		d.tl.record(a)
	}
	if a.Err == nil || a.Retried {
		return
	}
	d.mu.Lock()
	if len(d.failures) < maxFailuresKept {
		d.failures = append(d.failures, failure{at: a.Start, end: a.Start.Add(a.Latency), kind: a.Kind, unavailable: a.Unavailable(),
			latency: a.Latency, err: oneLine(a.Err.Error())})
	}
	d.mu.Unlock()
}

// sampleEvery is how often the demo reads rwpool.Stats to see when each
// node last received a statement.
const sampleEvery = 10 * time.Millisecond

// sample records when each node's Served counter grows, until ctx ends.
func (d *demo) sample(ctx context.Context) {
	last := map[string]int64{}
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		s, err := rwpool.Stats(d.db)
		if err == nil {
			now := time.Now()
			d.mu.Lock()
			for _, n := range s.Nodes {
				if n.Served > last[n.Name] {
					d.served[n.Name] = append(d.served[n.Name], now)
				}
				last[n.Name] = n.Served
			}
			d.lastSnap = s
			d.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refresh draws the live view every refresh interval until ctx ends.
func (d *demo) refresh(ctx context.Context) {
	prev := map[string]int64{}
	t := time.NewTicker(d.o.refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.drawFrame(d.elapsed(), prev)
		}
	}
}

// drawFrame draws one frame; prev holds each node's Served at the previous
// frame (for the share of this interval) and is updated. The final frame
// passes nil: the share of the whole run and the last interval's
// latencies.
func (d *demo) drawFrame(elapsed time.Duration, prev map[string]int64) {
	s, err := rwpool.Stats(d.db)
	if err != nil {
		return
	}
	d.mu.Lock()
	step := d.step
	lat := d.lastLat
	d.mu.Unlock()
	if prev != nil {
		lat = d.col.Interval()
		d.mu.Lock()
		d.lastLat = lat
		d.mu.Unlock()
	}
	f := live.Frame{
		Title:    "rwpool demo",
		Elapsed:  min(elapsed, d.o.duration),
		Duration: d.o.duration,
		Step:     step,
		Totals:   d.col.Totals(),
	}
	if d.cluster != nil {
		f.Title += ": embedded primary + 2 replicas behind fault proxies"
	} else {
		f.Title += ": " + d.cfg.Driver + " cluster"
	}
	var total int64
	delta := map[string]int64{}
	for _, n := range s.Nodes {
		delta[n.Name] = n.Served - prev[n.Name]
		total += delta[n.Name]
		f.Replays += n.Replays
		f.Fallback += n.Fallbacks
	}
	for _, n := range s.Nodes {
		row := live.NodeRow{
			Name: n.Name, Role: n.Role, State: n.State.String(), Available: n.Available,
			Latency: lat[n.Name], Open: n.Open, InUse: n.InUse, Max: n.MaxOpen,
			Served: n.Served, Errors: n.Errors, Trips: n.Trips,
		}
		if n.State == rwpool.Unavailable {
			row.Down = time.Since(n.Since)
		}
		if total > 0 {
			row.Share = float64(delta[n.Name]) / float64(total)
		}
		if p := d.proxies[n.Name]; p != nil && p.Mode() != faultproxy.Pass {
			row.Note = "proxy: " + p.Mode().String()
		}
		if d.cluster != nil && n.Role == "replica" {
			if behind := d.cluster.Behind(n.Name); behind > 0 {
				if row.Note != "" {
					row.Note += ", "
				}
				row.Note += fmt.Sprintf("replication: %d behind", behind)
			}
		}
		f.Nodes = append(f.Nodes, row)
		if prev != nil {
			prev[n.Name] = n.Served
		}
	}
	d.view.Draw(f)
}

// describeEvent is one line for a node transition.
func describeEvent(e rwpool.Event) string {
	switch {
	case e.Kind == rwpool.RoleChanged && e.Cause != nil:
		return fmt.Sprintf("%s (%s) -> UNEXPECTED ROLE: %s", e.Node, e.Role, oneLine(e.Cause.Error()))
	case e.Kind == rwpool.RoleChanged:
		return fmt.Sprintf("%s (%s) -> reports its configured role again", e.Node, e.Role)
	case e.To == rwpool.Lagging:
		return fmt.Sprintf("%s (%s) -> LAGGING, out of reads: %s", e.Node, e.Role, oneLine(fmt.Sprint(e.Cause)))
	case e.From == rwpool.Lagging && e.To == rwpool.Available:
		return fmt.Sprintf("%s (%s) -> caught up, back in reads", e.Node, e.Role)
	}
	if e.To == health.Unavailable {
		cause := "unknown cause"
		if e.Cause != nil {
			cause = oneLine(e.Cause.Error())
		}
		return fmt.Sprintf("%s (%s) -> UNAVAILABLE: %s", e.Node, e.Role, cause)
	}
	return fmt.Sprintf("%s (%s) -> available again after %s down", e.Node, e.Role, fmtDur(e.Downtime))
}

// scenarioStep is one step of the scripted scenario.
type scenarioStep struct {
	at    float64 // share of --duration
	title string
	do    func(d *demo, now time.Time) error
}

// scenario is the fault script of the embedded demo.
var scenario = []scenarioStep{
	{0, "steady: reads on the replicas, writes on the primary", nil},
	{0.15, "kill replica1", func(d *demo, now time.Time) error { return d.fault("replica1", "killed", now) }},
	{0.30, "hang replica2", func(d *demo, now time.Time) error { return d.fault("replica2", "hung", now) }},
	{0.45, "bring replica1 and replica2 back", func(d *demo, now time.Time) error {
		return errors.Join(d.restore("replica1", now), d.restore("replica2", now))
	}},
	{0.60, "take the primary down", func(d *demo, now time.Time) error { return d.fault("primary", "killed", now) }},
	{0.75, "bring the primary back", func(d *demo, now time.Time) error { return d.restore("primary", now) }},
}

// scenario runs the steps at their times, until ctx ends.
func (d *demo) scenario(ctx context.Context) {
	for _, st := range scenario {
		wait := time.Until(d.start.Add(time.Duration(st.at * float64(d.o.duration))))
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		now := time.Now()
		var err error
		if st.do != nil {
			err = st.do(d, now)
		}
		d.mu.Lock()
		d.step = st.title
		d.steps = append(d.steps, stepRecord{at: now.Sub(d.start), title: st.title, err: err})
		d.mu.Unlock()
		msg := "step: " + st.title
		if err != nil {
			msg += " FAILED: " + err.Error()
		}
		d.view.Event(now.Sub(d.start), msg)
	}
}

// fault injects a fault on a node's proxy.
func (d *demo) fault(node, kind string, now time.Time) error {
	p := d.proxies[node]
	var err error
	if kind == "killed" {
		err = p.Kill()
	} else {
		err = p.Hang()
	}
	d.mu.Lock()
	d.faults = append(d.faults, &faultWindow{node: node, kind: kind, from: now})
	d.mu.Unlock()
	return err
}

// restore ends a node's fault.
func (d *demo) restore(node string, now time.Time) error {
	err := d.proxies[node].Restore()
	d.mu.Lock()
	for _, f := range d.faults {
		if f.node == node && f.to.IsZero() {
			f.to = now
		}
	}
	d.mu.Unlock()
	return err
}
