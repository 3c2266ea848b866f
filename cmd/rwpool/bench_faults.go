package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/cmd/rwpool/internal/faultproxy"
)

// Thresholds of the fault report.
const (
	hungAfter    = time.Second            // a request slower than this is counted as hung
	normalBelow  = 100 * time.Millisecond // a normal request succeeds faster than this
	normalWindow = time.Second            // normal traffic must last this long to count
)

// faultVariant is one client of the fault scenarios: a kind (bare,
// rwpool, dbresolver, nap) and, for rwpool, DSN items on top of its
// defaults. Another configuration is one more line in a scenario's list.
type faultVariant struct {
	kind  string // bare, rwpool, dbresolver, nap, pgpool or haproxy; --variants selects by kind
	extra string // DSN items appended to rwpool's DSN ("key=value;key=value")
	na    string // why the variant cannot meet the scenario: shown as its row, nothing run
}

// name is the variant in the report: the kind and its DSN extras.
func (v faultVariant) name() string {
	if v.extra == "" {
		return v.kind
	}
	return v.kind + " " + strings.ReplaceAll(v.extra, ";", " ")
}

// faultScenario is one fault of replica1 and the variants that meet it.
type faultScenario struct {
	name  string // for --faults
	title string // in the report
	op    string // "kill", "hang" (cluster.sh on the server) or "slow" (a delaying forwarder)
	// timeout is each read's deadline; 0 for --fault-timeout.
	timeout time.Duration
	// weights are the replicas' weights, replica1 first: nil for replica1
	// alone. dbresolver and nap, which have no weights, list a replica
	// as many times as its weight.
	weights []int
	// mostly: "normal again" allows 1 % of slow reads per second (a
	// balancer that keeps measuring a slow replica sends it a read now
	// and then); otherwise it allows none.
	mostly   bool
	variants []faultVariant
}

// slowBy is how much later the slow replica answers.
const slowBy = 200 * time.Millisecond

// plainFaultVariants meet a kill or a hang of the only replica (the
// proxies balance over both replicas, as configured in bench/proxies).
// The proxies have no per-replica weights and no slow forwarder in front
// of one replica: in the other scenarios their rows say so (proxyNA).
var plainFaultVariants = []faultVariant{{kind: "bare"}, {kind: "rwpool"}, {kind: "dbresolver"}, {kind: "nap"}, {kind: "pgpool"}, {kind: "haproxy"}}

// faultScenarios are the fault scenarios, in order.
var faultScenarios = []faultScenario{
	{name: "kill", op: "kill", title: "replica1 killed (SIGKILL)", variants: plainFaultVariants},
	{name: "hang", op: "hang", title: "replica1 hung (SIGSTOP)", variants: plainFaultVariants},
	{name: "hang-hedged", op: "hang", title: "replica1 hung (SIGSTOP), holding a quarter of the reads (weights 1:3)",
		timeout: time.Second, weights: []int{1, 3}, variants: []faultVariant{
			{kind: "bare"}, {kind: "dbresolver"}, {kind: "nap"}, {kind: "rwpool"},
			{kind: "rwpool", extra: "hedge_after=50ms;hedge_budget=30%"},
			{kind: "pgpool", na: proxyNAWeights}, {kind: "haproxy", na: proxyNAWeights},
		}},
	{name: "slow", op: "slow", title: "replica1 slow (+200ms), two equal replicas", weights: []int{1, 1}, mostly: true,
		variants: []faultVariant{
			{kind: "bare"}, {kind: "dbresolver"}, {kind: "nap"}, {kind: "rwpool"},
			{kind: "rwpool", extra: "balance=adaptive"},
			{kind: "pgpool", na: proxyNASlow}, {kind: "haproxy", na: proxyNASlow},
		}},
}

// Why the proxies, as bench/proxies configures them, cannot meet a
// scenario.
const (
	proxyNAWeights = "n/a: its configuration balances the replicas 1:1 (no 1:3 weights), and it has no hedging"
	proxyNASlow    = "n/a: its backends are the servers themselves, with no slow forwarder in front of replica1"
)

// faultScenarioNamed returns the scenario called name.
func faultScenarioNamed(name string) (faultScenario, bool) {
	i := slices.IndexFunc(faultScenarios, func(s faultScenario) bool { return s.name == name })
	if i < 0 {
		return faultScenario{}, false
	}
	return faultScenarios[i], true
}

// deadline is the scenario's read deadline under o.
func (sc faultScenario) deadline(o benchOpts) time.Duration {
	if sc.timeout > 0 {
		return sc.timeout
	}
	return o.faultTimeout
}

// faultOps are cluster.sh's command for each fault, and its undo.
var faultOps = map[string][2]string{
	"kill": {"kill-node", "start-node"},
	"hang": {"hang-node", "resume-node"},
}

// sample is one request of the fault load, in time since the load began.
type sample struct {
	start, end time.Duration
	failed     bool
}

func (s sample) bad() bool { return s.failed || s.end-s.start >= normalBelow }

// timeToNormal returns how long after fault traffic was normal again: the
// first moment T >= fault from which every request in flight at any time
// in [T, end) succeeded in under normalBelow, provided at least
// normalWindow of such traffic followed T before end (then ok is true).
// Requests that ended before fault do not count; a request still running
// at end must be given with end (or later) as its end. With no bad request
// after fault it returns 0.
func timeToNormal(samples []sample, fault, end time.Duration) (d time.Duration, ok bool) {
	t := fault
	for _, s := range samples {
		if s.end <= fault || s.start >= end || !s.bad() {
			continue
		}
		t = max(t, min(s.end, end))
	}
	if end-t < normalWindow {
		return 0, false
	}
	return t - fault, true
}

// mostlyShare is the share of slow reads a second of mostly normal
// traffic may have.
const mostlyShare = 0.01

// timeToMostlyNormal is timeToNormal for a scenario that keeps a trickle
// of slow reads: the reads are taken by their start in 100 ms steps from
// fault, and it returns the first step T from which every 1 s window
// (normalWindow) up to end had reads, none failed and at most mostlyShare
// of them took normalBelow or longer; ok is false when the last window is
// not so.
func timeToMostlyNormal(samples []sample, fault, end time.Duration) (d time.Duration, ok bool) {
	const step = 100 * time.Millisecond
	nb, per := int((end-fault)/step), int(normalWindow/step)
	if nb < per {
		return 0, false
	}
	total, bad, failed := make([]int, nb), make([]int, nb), make([]int, nb)
	for _, s := range samples {
		if s.start < fault || s.start >= fault+time.Duration(nb)*step {
			continue
		}
		i := int((s.start - fault) / step)
		total[i]++
		if s.failed {
			failed[i]++
		} else if s.end-s.start >= normalBelow {
			bad[i]++
		}
	}
	first := -1
	for j := nb - per; j >= 0; j-- {
		var t, b, f int
		for i := j; i < j+per; i++ {
			t, b, f = t+total[i], b+bad[i], f+failed[i]
		}
		if t == 0 || f > 0 || float64(b) > mostlyShare*float64(t) {
			break
		}
		first = j
	}
	if first < 0 {
		return 0, false
	}
	return time.Duration(first) * step, true
}

// faultRow is the outcome of one fault scenario for one variant.
type faultRow struct {
	driver, label, fault, variant string
	requests, failed, hung        int
	recovery                      time.Duration
	recovered                     bool
	stuck                         int // requests still running when the bench gave up on them
	firstErr                      string
	longest                       time.Duration // the slowest read, failed or not
	p99                           time.Duration // of the reads started between the fault and its undo
	hedges                        float64       // rwpool: NodeStats.Hedges summed over the nodes, per read
	hedgesKnown                   bool          // hedges is measured (rwpool)
	// For the charts: every read, and the fault's start and undo, in time
	// since the load began.
	samples         []sample
	faultAt, undoAt time.Duration
	skip            string // why the variant cannot run this scenario ("" if it ran)
}

// runFaults runs one fault scenario on replica1 of driver d for each of
// its variants whose kind --variants selects, waiting for the cluster to
// be healthy between variants.
func runFaults(ctx context.Context, o benchOpts, cl *cluster, d benchDriver, sc faultScenario, logf func(string, ...any)) ([]faultRow, error) {
	var rows []faultRow
	for _, v := range sc.variants {
		if !slices.Contains(o.variants, v.kind) {
			continue
		}
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
		logf("fault %s replica1 (%s): %s, %d workers, a read every %s each with a %s deadline, %s steady + %s window",
			sc.name, d.Driver, v.name(), o.faultGoroutines, o.faultPace, sc.deadline(o), o.faultSteady, o.faultWindow)
		row, err := runFault(ctx, o, cl, d, sc, v)
		if err != nil {
			return rows, fmt.Errorf("fault %s, %s: %w", sc.name, v.name(), err)
		}
		if row.skip != "" {
			logf("  %s", row.skip)
			rows = append(rows, row)
			continue
		}
		logf("  %d requests, %d failed, %d over 1s, longest %s, p99 %s, normal again: %s%s", row.requests, row.failed, row.hung,
			fmtDur(row.longest), fmtDur(row.p99), row.recoveryText(), row.hedgeText(", hedges per read "))
		rows = append(rows, row)
	}
	return rows, nil
}

// hedgeText is the hedges per read after prefix, or "" for a variant that
// does not hedge.
func (r faultRow) hedgeText(prefix string) string {
	if !r.hedgesKnown {
		return ""
	}
	return prefix + fmt.Sprintf("%.3f", r.hedges)
}

// replicasOf lists the replicas a variant of sc reads from, repeated by
// weight for those without weights (dbresolver, nap), with the weights
// for rwpool (nil for replica1 alone, as the throughput part has it).
func (sc faultScenario) replicasOf(kind string, addrs []string) (replicas []string, weights []int) {
	switch {
	case kind == "bare" || sc.weights == nil:
		return addrs[:1], nil
	case kind == "rwpool":
		return addrs[:len(sc.weights)], sc.weights
	}
	for i, w := range sc.weights {
		for range w {
			replicas = append(replicas, addrs[i])
		}
	}
	return replicas, nil
}

// openFaultVariant opens v against d's primary and the given replicas
// (real addresses or forwarders).
func openFaultVariant(sc faultScenario, v faultVariant, d benchDriver, addrs []string) (reader, error) {
	reps, weights := sc.replicasOf(v.kind, addrs)
	switch v.kind {
	case "bare":
		return openSQL(d.Driver, d.NodeDSN(reps[0]))
	case "rwpool":
		return openSQL("rwpool", d.DSNOver(d.Primary, reps, v.extra, weights...))
	}
	return openPeer(v.kind, d, d.Primary, reps)
}

// checkReplicaRoute makes sure a read of r lands on one of want (host:port).
func checkReplicaRoute(ctx context.Context, r reader, d benchDriver, want []string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	port, err := r.scanInt(ctx, d.PortQuery)
	if err != nil {
		return fmt.Errorf("route check: %w", err)
	}
	for _, addr := range want {
		if portOf(addr) == strconv.FormatInt(port, 10) {
			return nil
		}
	}
	return fmt.Errorf("route check: a read landed on port %d, not on %s", port, strings.Join(want, " or "))
}

// hedgesSoFar is the hedges rwpool started so far, summed over the nodes;
// -1 for another variant.
func hedgesSoFar(r reader) int64 {
	sr, ok := r.(sqlReader)
	if !ok {
		return -1
	}
	snap, err := rwpool.Stats(sr.db)
	if err != nil {
		return -1 // the bare driver
	}
	var n int64
	for _, s := range snap.Nodes {
		n += s.Hedges
	}
	return n
}

func (r faultRow) recoveryText() string {
	switch {
	case !r.recovered:
		return "never (within window)"
	case r.recovery == 0:
		return "0 (no disruption)"
	}
	return fmtDur(r.recovery)
}

// runFault runs one variant through one fault and its undo.
func runFault(ctx context.Context, o benchOpts, cl *cluster, d benchDriver, sc faultScenario, v faultVariant) (row faultRow, err error) {
	row = faultRow{driver: d.Driver, label: d.label, fault: sc.name, variant: v.name()}
	if row.skip = v.na; row.skip != "" {
		return row, nil
	}
	if row.skip = proxySkip(v.kind, d.Driver); row.skip != "" {
		return row, nil
	}
	if err := cl.freshProxy(ctx, v.kind); err != nil {
		return row, err
	}
	nrep := max(len(sc.weights), 1)
	if len(d.Replicas) < nrep {
		return row, fmt.Errorf("%s: the cluster has %d replicas, the scenario needs %d", d.Driver, len(d.Replicas), nrep)
	}
	// The slow scenario reaches every replica through a forwarder, so
	// that both cost the same extra hop.
	addrs := slices.Clone(d.Replicas[:nrep])
	var fwd []*faultproxy.Proxy
	defer func() {
		for _, p := range fwd {
			p.Close()
		}
	}()
	if sc.op == "slow" {
		for i, a := range addrs {
			p, err := faultproxy.New("127.0.0.1:0", a)
			if err != nil {
				return row, err
			}
			fwd = append(fwd, p)
			addrs[i] = p.Addr()
		}
	}
	r, err := openFaultVariant(sc, v, d, addrs)
	if err != nil {
		return row, err
	}
	defer r.Close()
	if slices.Contains(proxyVariants, v.kind) {
		err = checkRoute(ctx, r, v.kind, d) // a proxy's reads land on either replica
	} else {
		reps, _ := sc.replicasOf(v.kind, d.Replicas)
		err = checkReplicaRoute(ctx, r, d, reps)
	}
	if err != nil {
		return row, err
	}
	runLoad(ctx, r, o.faultGoroutines, o.warmup) // open the pools
	hedges0 := hedgesSoFar(r)
	timeout := sc.deadline(o)

	var (
		mu      sync.Mutex
		samples []sample
		first   error
		stop    atomic.Bool
		wg      sync.WaitGroup
		cur     = make([]atomic.Int64, o.faultGoroutines) // start of each worker's read in flight, +1; 0 when idle
	)
	begin := time.Now()
	for w := range o.faultGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paced(&stop, o.faultPace, begin, &cur[w], timeout, func(ctx context.Context) error {
				_, err := r.scanInt(ctx, "SELECT 1")
				return err
			}, func(s sample, err error) {
				mu.Lock()
				samples = append(samples, s)
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			})
		}()
	}

	inject := func(ctx context.Context) error {
		if sc.op == "slow" {
			fwd[0].SetDelay(slowBy)
			return nil
		}
		return cl.nodeOp(ctx, faultOps[sc.op][0], d.Replicas[0])
	}
	undo := func(ctx context.Context) error {
		if sc.op == "slow" {
			fwd[0].SetDelay(0)
			return nil
		}
		return cl.nodeOp(ctx, faultOps[sc.op][1], d.Replicas[0])
	}
	injected, finished := false, false
	// finish stops the load, undoes the fault and waits for the workers
	// and the cluster; it returns the starts of the reads still running
	// when it gave up waiting for them.
	finish := func() (stuck []time.Duration, err error) {
		finished = true
		stop.Store(true)
		if injected {
			err = undo(context.Background())
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(timeout + 20*time.Second):
			// A driver that does not let go: its goroutines end when it does.
			for w := range cur {
				if s := cur[w].Load(); s != 0 {
					stuck = append(stuck, time.Duration(s-1))
				}
			}
		}
		return stuck, errors.Join(err, cl.waitHealthy(context.Background()))
	}
	defer func() {
		if !finished {
			_, ferr := finish()
			err = errors.Join(err, ferr)
		}
	}()

	if !sleepCtx(ctx, o.faultSteady) {
		return row, ctx.Err()
	}
	faultAt := time.Since(begin)
	injected = true // even a failed kill-node may have done something
	if err := inject(ctx); err != nil {
		return row, err
	}
	if !sleepCtx(ctx, faultAt+o.faultWindow-time.Since(begin)) {
		return row, ctx.Err()
	}
	undoAt := time.Since(begin)
	stuck, err := finish()
	if err != nil {
		return row, err
	}

	// Reads still running at the undo count as ending there, judged by
	// their time in flight until then.
	mu.Lock()
	all := append([]sample(nil), samples...)
	mu.Unlock()
	var window, during []sample
	for _, s := range all {
		if s.start >= undoAt {
			continue
		}
		if s.start >= faultAt {
			during = append(during, s)
		}
		if s.end > undoAt {
			s.end, s.failed = undoAt, false
		}
		window = append(window, s)
	}
	for _, start := range stuck {
		s := sample{start: start, end: undoAt}
		window, during = append(window, s), append(during, s)
		row.longest = max(row.longest, s.end-s.start)
	}
	if sc.mostly {
		row.recovery, row.recovered = timeToMostlyNormal(window, faultAt, undoAt)
	} else {
		row.recovery, row.recovered = timeToNormal(window, faultAt, undoAt)
	}
	row.requests = len(all) + len(stuck)
	row.stuck = len(stuck)
	row.failed, row.hung = len(stuck), len(stuck)
	for _, s := range all {
		if s.failed {
			row.failed++
		}
		if s.end-s.start > hungAfter {
			row.hung++
		}
		row.longest = max(row.longest, s.end-s.start)
	}
	lat := make([]time.Duration, len(during))
	for i, s := range during {
		lat[i] = s.end - s.start
	}
	slices.Sort(lat)
	row.p99 = percentile(lat, 99)
	if h := hedgesSoFar(r); h >= 0 && hedges0 >= 0 && row.requests > 0 {
		row.hedges, row.hedgesKnown = float64(h-hedges0)/float64(row.requests), true
	}
	if first != nil {
		row.firstErr = oneLine(first.Error())
	}
	row.samples, row.faultAt, row.undoAt = all, faultAt, undoAt
	return row, nil
}

// sleepCtx sleeps for d, or until ctx ends (then false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// faultDefinitions explain the fault report's columns.
func faultDefinitions(o benchOpts) string {
	return fmt.Sprintf(`Each scenario: %d workers read SELECT 1 in a loop, one read every %s
each (the next at once if a read takes longer), each read with its own
context deadline (%s; 1s where the title says so), through a fresh
instance of the variant. After %s of steady load replica1 meets the
fault; %s later the fault is undone, the load stops and the cluster is
waited for (status, wait-sync) before the next variant.
  killed   cluster.sh kill-node: SIGKILL of the server; undone by
           start-node. Primary + replica1 (bare: replica1 only).
  hung     hang-node: SIGSTOP (the kernel still accepts connections,
           nothing answers); undone by resume-node. Primary + replica1.
  hung, holding a quarter of the reads: the same hang, with replica2
           beside replica1 at weights 1:3 (dbresolver and nap have no
           weights: they list replica2 three times) and 1s deadlines;
           rwpool as is and with hedge_after=50ms;hedge_budget=30%%.
  slow     replica1 and replica2, weights 1:1, each behind a TCP
           forwarder (the same extra hop for both); replica1's holds
           back every answer by %s until the undo. rwpool with the
           default balance=weighted and with balance=adaptive.
The bare driver reads from replica1 alone in every scenario. rwpool runs
with its defaults (check_interval=2s, probe_timeout=1s, breaker on,
fallback=primary, rescue of reads in flight, suspicion of a hang) plus
the DSN items in the variant's name.
  failed   reads that returned an error (the deadline included)
  >1s      reads that took longer than 1s, failed or not
  longest  the slowest read of the run, failed or not
  p99      of the reads started between the fault and its undo, failed
           ones by their time to fail
  normal again  time from the fault's injection to the first moment T
           from which every read in flight at any time between T and
           the undo succeeded in under 100ms, with at least 1s of such
           traffic before the undo; otherwise "never (within window)".
           Reads still running at the undo count as ending there.
           Slow replica: the first 100ms step T from which every second
           until the undo had reads, none failed and at most 1%% of
           them took 100ms or longer (a balancer that keeps measuring
           the slow replica sends it a read now and then).
  hedges/read  rwpool: hedges started (NodeStats.Hedges, all nodes) per
           read issued; "—" for the others, which do not hedge.
`, o.faultGoroutines, o.faultPace, o.faultTimeout, o.faultSteady, o.faultWindow, slowBy)
}

// paced runs op, each call bounded by timeout, one every pace (at once
// after a slower one) until stop, and hands record each call as a sample
// in time since begin; cur holds the start of the call in flight, +1 (0
// when idle), for the bench to see calls that never return.
func paced(stop *atomic.Bool, pace time.Duration, begin time.Time, cur *atomic.Int64, timeout time.Duration,
	op func(context.Context) error, record func(sample, error)) {
	next := time.Now()
	for !stop.Load() {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		if next = next.Add(pace); next.Before(time.Now()) {
			next = time.Now()
		}
		start := time.Since(begin)
		cur.Store(int64(start) + 1)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := op(ctx)
		cancel()
		cur.Store(0)
		record(sample{start: start, end: time.Since(begin), failed: err != nil}, err)
	}
}
