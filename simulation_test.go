package rwpool_test

// TestSimulation: rwpool's randomized fault simulation. Each run draws a
// plan from a seed (simulation_plan_test.go): a simulated PostgreSQL or
// MariaDB cluster (internal/simcluster), rwpool's settings, a workload of
// reads, writes, transactions, leases, sessions, session tokens handed to
// a second database, bounded-staleness reads, monotonic sessions, hedged
// reads, prepared statements and COPY through Raw
// (simulation_workload_test.go), and a schedule of faults. It runs them at
// once in real time, heals the cluster, closes the databases and checks
// the history against the cluster's ground truth
// (simulation_check_test.go). A failing run is
// shrunk to the smallest plan that still fails and printed with its seed.
//
//	go test -run TestSimulation .                         a short exploration (see simDefaultTime)
//	go test -run TestSimulation -sim.time=10m .           a long one
//	go test -run TestSimulation -sim.seed=N -v .          replay seed N
//
// A seed fixes the plan (cluster, settings, workload, fault schedule) and
// every decision the cluster draws; the goroutines' interleaving is the
// machine's, so a replay fails the same way most of the time, not always:
// -sim.repeat replays it several times.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/simcluster"
)

var (
	simSeed      = flag.Uint64("sim.seed", 0, "TestSimulation: replay this seed only (0: explore fresh seeds)")
	simTime      = flag.Duration("sim.time", 0, "TestSimulation: how long to explore fresh seeds (0: simDefaultTime)")
	simPlanFlag  = flag.String("sim.plan", "", "TestSimulation: replay this plan (JSON, as a failure prints it) instead of the seed's")
	simRepeat    = flag.Int("sim.repeat", 1, "TestSimulation: with -sim.seed or -sim.plan, how many times to replay it")
	simShrink    = flag.Duration("sim.shrink", 2*time.Minute, "TestSimulation: the longest time spent shrinking a failing plan")
	simStrict    = flag.Bool("sim.strict", false, "TestSimulation: fail on the invariants known to be broken still (simKnownOpen) too")
	simKeepGoing = flag.Bool("sim.keepgoing", false, "TestSimulation: go on exploring after a failing seed; at the end shrink one seed of each invariant broken and report them all")
)

// simDefaultTime is the exploration of a plain go test run; CI runs the
// suite with CI=true and gets a longer one, with fresh seeds each time.
func simDefaultTime() time.Duration {
	if testing.Short() {
		return 5 * time.Second
	}
	if os.Getenv("CI") == "true" {
		return 60 * time.Second
	}
	return 20 * time.Second
}

func TestSimulation(t *testing.T) {
	if *simSeed != 0 || *simPlanFlag != "" {
		p := newSimPlan(*simSeed)
		if *simPlanFlag != "" {
			p = simPlan{} // a field the plan leaves out (omitempty) is its zero value
			if err := json.Unmarshal([]byte(*simPlanFlag), &p); err != nil {
				t.Fatalf("-sim.plan: %v", err)
			}
		}
		for i := range *simRepeat {
			res := runSim(p)
			t.Logf("replay %d of %s: %d ops, %d violations", i+1, p, len(res.ops), len(res.violations))
			if len(res.failing()) == 0 && len(res.violations) > 0 {
				t.Logf("only invariants known to be broken still (simKnownOpen; -sim.strict fails on them):\n%s", res.report())
			}
			if res.violations = res.failing(); len(res.violations) > 0 {
				t.Fatalf("seed %d broke %s\n%s", p.Seed, res.violations[0].Kind, res.report())
			}
		}
		return
	}
	budget := *simTime
	if budget == 0 {
		budget = simDefaultTime()
	}
	end := time.Now().Add(budget)
	var seeds []uint64
	ops, known := 0, 0
	counts := map[string]int{}
	found := map[string][]simPlan{} // -sim.keepgoing: failing plans by invariant and signature
	var sigs []string               // in the order found
	defer func() {
		if len(found) == 0 {
			return
		}
		var b strings.Builder
		for _, k := range simKinds {
			for _, sig := range sigs {
				ps := found[sig]
				if !strings.HasPrefix(sig, k+" ") {
					continue
				}
				small, sres := shrinkSimBy(ps[0], func(res *simResult) bool { return res.hasSignature(sig) }, *simShrink)
				fmt.Fprintf(&b, "\n=== %s: %d of %d runs; first seed %d, shrunk: -sim.plan='%s'\n%s", sig, len(ps), len(seeds), ps[0].Seed, small.JSON(), sres.report())
			}
		}
		t.Errorf("invariants broken:%s", b.String())
	}()
	for time.Now().Before(end) {
		p := newSimPlan(freshSeed())
		seeds = append(seeds, p.Seed)
		res := runSim(p)
		ops += len(res.ops)
		for k, n := range res.counts {
			counts[k] += n
		}
		if open := len(res.violations) - len(res.failing()); open > 0 {
			known++
			t.Logf("seed %d broke invariants known open (%s)", p.Seed, res.violations[0].Kind)
		}
		if res.violations = res.failing(); len(res.violations) == 0 {
			continue
		}
		kind := res.firstKind()
		if *simKeepGoing {
			sig := res.signature()
			first := res.firstViolation().What
			if len(first) > 6000 {
				first = first[:6000] + "…"
			}
			t.Logf("%6.1fs seed %d broke %s (%d violations): %s", time.Since(end.Add(-budget)).Seconds(), p.Seed, sig, len(res.violations), first)
			if found[sig] == nil {
				sigs = append(sigs, sig)
			}
			found[sig] = append(found[sig], p)
			continue
		}
		t.Logf("seed %d broke %s after %d clean runs; shrinking (at most %s)", p.Seed, kind, len(seeds)-1, *simShrink)
		small, sres := shrinkSim(p, kind, *simShrink)
		writeReport(t, "simulation.txt", fmt.Sprintf("TestSimulation: seed %d broke %q after %d clean runs (seeds %v)\n", p.Seed, kind, len(seeds)-1, seeds))
		t.Fatalf("seed %d broke invariant %q.\nOriginal plan (replay: go test -run TestSimulation -sim.seed=%d -v .):\n%s\n"+
			"Shrunk plan (replay: go test -run TestSimulation -sim.plan='%s' -v .):\n%s",
			p.Seed, kind, p.Seed, p, small.JSON(), sres.report())
	}
	failed := 0
	for _, ps := range found {
		failed += len(ps)
	}
	verdict := "no invariant broken"
	if failed > 0 {
		verdict = fmt.Sprintf("%d runs broke invariants (-sim.keepgoing)", failed)
	}
	if known > 0 {
		verdict += fmt.Sprintf("; %d runs broke invariants known open (simKnownOpen)", known)
	}
	var judged []string
	for _, k := range simCounted {
		judged = append(judged, fmt.Sprintf("%s %d", k, counts[k]))
	}
	summary := fmt.Sprintf("TestSimulation: %d runs, %d operations (%s), %s in %s; seeds %v", len(seeds), ops, strings.Join(judged, ", "), verdict, budget, seeds)
	t.Log(summary)
	writeReport(t, "simulation.txt", summary+"\n")
}

func freshSeed() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])>>1 | 1
}

// shrinkSim looks for a smaller plan that still breaks kind: fewer faults,
// workers and kinds of operation, a shorter run. Runs are real-time, so
// each candidate gets three tries.
func shrinkSim(p simPlan, kind string, budget time.Duration) (simPlan, *simResult) {
	return shrinkSimBy(p, func(res *simResult) bool {
		for _, v := range res.violations {
			if v.Kind == kind {
				return true
			}
		}
		return false
	}, budget)
}

// shrinkSimBy is shrinkSim for the failures match accepts.
func shrinkSimBy(p simPlan, match func(*simResult) bool, budget time.Duration) (simPlan, *simResult) {
	end := time.Now().Add(budget)
	best := p
	var bestRes *simResult
	fails := func(c simPlan) bool {
		for range 3 {
			if time.Now().After(end) {
				return false
			}
			if res := runSim(c); match(res) {
				bestRes = res
				return true
			}
		}
		return false
	}
	try := func(c simPlan) bool {
		if fails(c) {
			best = c
			return true
		}
		return false
	}
	for changed := true; changed && time.Now().Before(end); {
		changed = false
		// Settings and topology first: a failure that needs none of them
		// says so.
		for _, edit := range []func(*simPlan) bool{
			func(c *simPlan) bool { r := c.CloseMid; c.CloseMid = false; return r },
			func(c *simPlan) bool { r := c.Balanced; c.Balanced = false; return r },
			func(c *simPlan) bool { r := c.Hedge; c.Hedge = false; return r },
			func(c *simPlan) bool { r := c.Follow; c.Follow = false; return r },
			func(c *simPlan) bool { r := c.Wait > 0; c.Wait = 0; return r },
			func(c *simPlan) bool { r := c.Lag > 0; c.Lag = 0; return r },
			func(c *simPlan) bool { r := c.CausalWait != nil; c.CausalWait = nil; return r },
			func(c *simPlan) bool { r := c.CausalError; c.CausalError = false; return r },
			func(c *simPlan) bool {
				r := c.Replicas > 1 && !(c.Balanced && c.Replicas <= 2)
				if r {
					c.Replicas--
				}
				return r
			},
		} {
			c := best
			c.Faults = slices.Clone(best.Faults)
			c.Ops = slices.Clone(best.Ops)
			if edit(&c) {
				changed = try(c) || changed
			}
		}
		for i := len(best.Faults) - 1; i >= 0; i-- {
			c := best
			c.Faults = slices.Delete(slices.Clone(best.Faults), i, i+1)
			changed = try(c) || changed
		}
		if best.Workers > 1 {
			c := best
			c.Workers = best.Workers / 2
			changed = try(c) || changed
		}
		for i := len(best.Ops) - 1; i >= 0 && len(best.Ops) > 1; i-- {
			c := best
			c.Ops = slices.Delete(slices.Clone(best.Ops), i, i+1)
			changed = try(c) || changed
		}
		if d := best.faultsEnd() + 300*time.Millisecond; d < best.Dur-100*time.Millisecond {
			c := best
			c.Dur = d
			changed = try(c) || changed
		}
	}
	if bestRes == nil {
		bestRes = runSim(best)
	}
	return best, bestRes
}

func (p simPlan) faultsEnd() time.Duration {
	var e time.Duration
	for _, f := range p.Faults {
		e = max(e, f.At+f.For)
	}
	return e
}

// simRun is one run in progress.
type simRun struct {
	p      simPlan
	cl     *simcluster.Cluster
	db     *sql.DB
	db2    *sql.DB // a second database over the same cluster, as another process would have (token-handover); nil without
	start  time.Time
	nodeEP map[string]string // rwpool node name -> endpoint
	src    *simSource        // the discover source, with Discover

	nextID   atomic.Int64
	nextMono atomic.Int64 // numbers the sessions whose reads are judged by monotonic

	mu         sync.Mutex
	ops        []*simOp
	ackedIDs   []int64
	ackedAt    []time.Duration // when each of ackedIDs was acknowledged (since the run started)
	trace      []string
	moved      map[string]int // EndpointMoved events per node, of db
	moved2     map[string]int // and of db2
	violations []simViolation

	windows  []simWindow                // when the run changed the cluster (abandoned-read)
	followed map[string][]time.Duration // when each database of the run ("", "db2 ") followed a promotion

	tokens []simToken     // tokens taken, for late resumes (token-handover)
	counts map[string]int // what the issue #22 invariants judged (checkHistory), for the exploration's summary
}

// simViolation is a broken invariant.
type simViolation struct {
	Kind string
	What string
}

// simResult is what a run leaves.
type simResult struct {
	plan       simPlan
	ops        []*simOp
	trace      []string
	violations []simViolation
	cluster    string
	counts     map[string]int
}

// simKnownOpen are invariants the simulation still finds broken on main,
// each with why it is not fixed yet. Their violations are logged, not
// failed on, unless -sim.strict: a run of the test suite fails only on
// what is fixed and must stay so. Fixing one means deleting its line.
var simKnownOpen = map[string]string{
	"false-move": "1 of 1,025 strict runs (2026-12-06): a replica endpoint balancing at random over two servers, never " +
		"moved, reported moved after 11 fresh dials in a row reached one server, so its known servers had shrunk to the " +
		"other before; how is not found (its shrunk plan did not fail again); seed 2575348304306272781. Another cause, the " +
		"fence and a run of fresh dials reporting one move twice, is fixed (testdata/simulation/false-move-fence-and-dial-run.json)",
	"token-read": "2 of 1,025 strict runs (2026-12-06), PostgreSQL without follow_promotion: a switchover behind the " +
		"primary's endpoint and back, a token taken through the *sql.DB that had seen the move back, resumed through one " +
		"whose pool still reached the demoted server (its fence found the move 2 ms later): the read, on that primary's " +
		"stale connection, missed the row; the token does not say which server wrote it; seed 7987431137617139933. " +
		"And MariaDB with follow_promotion: a replica endpoint moved onto the new primary of a switchover was followed " +
		"as the primary (its writable answer came first), and when the endpoint moved back a fallback read went to the " +
		"replica behind it; seed 6235125378208352847",
}

// failing returns the violations of res that fail the test: all with
// -sim.strict, else those of invariants not known open.
func (res *simResult) failing() []simViolation {
	if *simStrict {
		return res.violations
	}
	var vs []simViolation
	for _, v := range res.violations {
		if _, open := simKnownOpen[v.Kind]; !open {
			vs = append(vs, v)
		}
	}
	return vs
}

// simKinds orders the invariants: the first one a run broke, in this
// order, is the one it is reported and shrunk for (the later ones are
// often consequences of the earlier).
var simKinds = []string{
	"write-off-primary", "applied-twice", "acked-lost", "partial-tx", "session-read",
	"token-read", "staleness", "monotonic", "abandoned-read", "phantom-read", "membership-read", "false-move", "conn-shared", "rows-open",
	"gave-up-early", "wait-too-long", "deadline", "call-hangs", "stuck-probes",
	"rotation", "close-leak", "goroutine-leak",
}

// firstKind is the invariant a run is reported for.
func (res *simResult) firstKind() string {
	for _, k := range simKinds {
		for _, v := range res.violations {
			if v.Kind == k {
				return k
			}
		}
	}
	return res.violations[0].Kind
}

// signature tells apart the failures of one invariant that likely have
// different causes, so that -sim.keepgoing shrinks one of each: the kind
// of operation (and, for a session read, of the write it missed) of the
// first violation, or for an EndpointMoved, which endpoint it named.
func (res *simResult) signature() string { return res.firstKind() + " " + sigOf(res.firstViolation()) }

// firstViolation is the first violation of firstKind.
func (res *simResult) firstViolation() simViolation {
	k := res.firstKind()
	for _, v := range res.violations {
		if v.Kind == k {
			return v
		}
	}
	return res.violations[0]
}

// hasSignature reports whether any violation of res has signature sig.
func (res *simResult) hasSignature(sig string) bool {
	for _, v := range res.violations {
		if v.Kind+" "+sigOf(v) == sig {
			return true
		}
	}
	return false
}

// sigOf is the part of a signature a violation's text gives.
func sigOf(v simViolation) string {
	k := v.Kind
	{
		w := v.What
		switch {
		case strings.Contains(w, "written by "):
			w = w[strings.Index(w, "written by ")+len("written by "):]
			return "after " + strings.TrimSuffix(w, ")")
		case k == "false-move":
			if i := strings.Index(w, "whose endpoint "); i >= 0 {
				return "on " + strings.Fields(w[i+len("whose endpoint "):])[0]
			}
		case strings.Contains(w, "worker "):
			f := strings.Fields(w[strings.Index(w, "worker "):])
			if len(f) > 2 {
				return "in " + f[2]
			}
		}
	}
	return "-"
}

func (res *simResult) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan: %s\n", res.plan)
	fmt.Fprintf(&b, "Broken (%d):\n", len(res.violations))
	for _, k := range simKinds {
		n := 0
		for _, v := range res.violations {
			if v.Kind != k {
				continue
			}
			if n < 3 {
				fmt.Fprintf(&b, "  [%s] %s\n", v.Kind, v.What)
			}
			n++
		}
		if n > 3 {
			fmt.Fprintf(&b, "  [%s] … %d more\n", k, n-3)
		}
	}
	fmt.Fprintf(&b, "History of faults and events:\n")
	for _, s := range res.trace {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	fmt.Fprintf(&b, "Cluster at the end: %s\n", res.cluster)
	fmt.Fprintf(&b, "%d operations\n", len(res.ops))
	return b.String()
}

var simRuns atomic.Int64

func (r *simRun) since() time.Duration { return time.Since(r.start) }

func (r *simRun) logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trace = append(r.trace, fmt.Sprintf("%7.3fs ", r.since().Seconds())+fmt.Sprintf(format, args...))
}

func (r *simRun) violate(kind, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.violations {
		if v.Kind == kind {
			n++
		}
	}
	if n >= 20 {
		return // enough to show
	}
	r.violations = append(r.violations, simViolation{kind, fmt.Sprintf(format, args...)})
}

func (r *simRun) record(op *simOp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

func (r *simRun) newIDs(n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = r.nextID.Add(1)
	}
	return ids
}

func (r *simRun) acked(ids []int64, at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		r.ackedIDs = append(r.ackedIDs, id)
		r.ackedAt = append(r.ackedAt, at)
	}
}

// recentIDs returns up to n of the latest acknowledged row ids, newest
// first: the rows replicas are likeliest not to have yet.
func (r *simRun) recentIDs(n int) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []int64
	for i := len(r.ackedIDs) - 1; i >= 0 && len(ids) < n; i-- {
		ids = append(ids, r.ackedIDs[i])
	}
	return ids
}

// ackedBefore returns a row id acknowledged before t, and when: mostly the
// latest one, the hardest for a replica to have; sometimes one of the
// few before it. The acknowledgements are recorded in about their order
// only (a worker may be held between its call's return and acked), so
// each is checked.
func (r *simRun) ackedBefore(t time.Duration, rng interface{ IntN(int) int }) (int64, time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var cands []int
	for i := len(r.ackedAt) - 1; i >= 0 && len(cands) < 5 && len(r.ackedAt)-i < 1000; i-- {
		if r.ackedAt[i] < t {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return 0, 0, false
	}
	i := cands[0]
	for _, j := range cands {
		if r.ackedAt[j] > r.ackedAt[i] {
			i = j
		}
	}
	if rng.IntN(10) < 3 {
		i = cands[rng.IntN(len(cands))]
	}
	return r.ackedIDs[i], r.ackedAt[i], true
}

// someID returns a row id to read: mostly an acknowledged one, sometimes
// one never written.
func (r *simRun) someID(rng interface{ IntN(int) int }) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ackedIDs) == 0 || rng.IntN(10) == 0 {
		return 1 << 40
	}
	return r.ackedIDs[rng.IntN(len(r.ackedIDs))]
}

// runSim runs plan p once.
func runSim(p simPlan) *simResult {
	name := fmt.Sprintf("sim%d", simRuns.Add(1))
	cl := simcluster.New(name, p.Flavor, 1+p.Replicas, p.Seed)
	defer cl.Close()
	dbs := 1
	if p.has("token-handover") {
		dbs = 2
	}
	cl.SetStuckProbeBound(6 * dbs) // two per node that reaches a server (a checker's probe and a nudge's may start together), three nodes at most, per database
	cl.AddEndpoint("p", "s0")
	for i := 1; i <= p.Replicas; i++ {
		cl.Delay(fmt.Sprintf("s%d", i), p.Lag)
	}
	r := &simRun{p: p, cl: cl, start: time.Now(), nodeEP: map[string]string{"primary": "p"}, moved: map[string]int{}, moved2: map[string]int{},
		counts: map[string]int{}}
	d := fmt.Sprintf("driver=%s;primary=%s", simcluster.DriverName(p.Flavor), cl.DSN("p"))
	for i := 1; i <= p.Replicas; i++ {
		ep := fmt.Sprintf("s%d", i)
		if p.Discover {
			r.nodeEP["d/"+ep] = ep
			continue
		}
		d += fmt.Sprintf(";replica=%s weight=%d", cl.DSN(ep), 1+i%2)
		r.nodeEP[fmt.Sprintf("replica%d", i)] = ep
	}
	if p.Discover {
		r.src = newSimSource(name, p.Replicas)
		defer simSources.Delete(name)
		d += fmt.Sprintf(";discover='simsrc:%s' every=50ms name=d", name)
	}
	if p.Balanced {
		var rs []string
		for i := 1; i <= p.Replicas; i++ {
			rs = append(rs, fmt.Sprintf("s%d", i))
		}
		cl.AddEndpoint("rr", rs...)
		d += ";replica=" + cl.DSN("rr")
		rr := fmt.Sprintf("replica%d", p.Replicas+1)
		if p.Discover {
			rr = "replica1" // the DSN's only replica item
		}
		r.nodeEP[rr] = "rr"
	}
	d += ";" + p.dsnOptions()
	leaks := goleak.IgnoreCurrent()
	cfg, err := dsn.Parse(d)
	if err != nil {
		panic(fmt.Sprintf("simulation: DSN %q: %v", d, err))
	}
	open := func(handler func(rwpool.Event)) *sql.DB {
		c, err := rwpool.NewConnector(cfg, rwpool.WithEventHandler(handler))
		if err != nil {
			panic(fmt.Sprintf("simulation: %v", err))
		}
		db := sql.OpenDB(c)
		db.SetMaxIdleConns(4)
		return db
	}
	r.db = open(func(e rwpool.Event) { r.event("", r.moved, e) })
	if dbs == 2 {
		r.db2 = open(func(e rwpool.Event) { r.event("db2 ", r.moved2, e) })
	}
	closeAll := func() {
		r.db.Close()
		if r.db2 != nil {
			r.db2.Close()
		}
	}

	stop := make(chan struct{})
	var workers sync.WaitGroup
	for i := range p.Workers {
		w := &simWorker{r: r, id: i, rng: mrand.New(mrand.NewPCG(p.Seed, uint64(i+1))), sess: rwpool.WithSession(context.Background()), mono: r.nextMono.Add(1)}
		workers.Add(1)
		go func() { defer workers.Done(); w.loop(stop) }()
	}
	faultsDone := make(chan struct{})
	go func() { defer close(faultsDone); r.runFaults(stop) }()
	closed := false
	if p.CloseMid {
		time.Sleep(p.Dur * 2 / 3)
		r.logf("Close while the workers run")
		closeAll()
		closed = true
		time.Sleep(p.Dur / 3)
	} else {
		time.Sleep(p.Dur)
	}
	close(stop)
	<-faultsDone
	r.changing(true, func() {
		cl.Heal()
		if r.src != nil {
			r.src.heal()
		}
	})
	r.logf("heal: every fault ended, primary %s, %s", cl.Primary(), cl.Describe())
	healed := r.since()
	if !waitTimeout(&workers, 10*time.Second) {
		// Abandon the run: its goroutines are left to goleak, their
		// stacks to the report.
		r.violate("call-hangs", "a call had not returned 10s after the cluster healed:\n%s", stacks())
		return r.result()
	}
	if !closed {
		r.checkRotation(healed)
		if !returnsWithin(10*time.Second, closeAll) {
			r.violate("call-hangs", "Close had not returned after 10s:\n%s", stacks())
			return r.result()
		}
	}
	r.checkClose(leaks)
	r.checkHistory()
	for _, v := range cl.Violations() {
		r.violate(v.Kind, "%s", v)
	}
	return r.result()
}

func (r *simRun) result() *simResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &simResult{plan: r.p, ops: r.ops, trace: r.trace, violations: r.violations, cluster: r.cl.Describe(), counts: r.counts}
}

// returnsWithin runs f and reports whether it returned within d.
func returnsWithin(d time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// stacks returns every goroutine's stack, cut to a readable length.
func stacks() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	if len(buf) > 20000 {
		buf = append(buf[:20000], "…"...)
	}
	return string(buf)
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// event records the events of one of the run's databases (db names it in
// the history: "" for the first, "db2 " for the second); an EndpointMoved
// needs a move of that node's endpoint that no earlier EndpointMoved of
// that database (counted in moved) accounted for.
func (r *simRun) event(db string, moved map[string]int, e rwpool.Event) {
	switch e.Kind {
	case rwpool.EndpointMoved:
		ep := r.nodeEP[e.Node]
		moves := r.cl.Moves(ep)
		r.mu.Lock()
		moved[e.Node]++
		n := moved[e.Node]
		r.mu.Unlock()
		r.logf("event: %s%s EndpointMoved (%v); its endpoint %s was moved %d times", db, e.Node, e.Cause, ep, moves)
		if n > moves {
			r.violate("false-move", "%sEndpointMoved for %s (%v), whose endpoint %s (now %v) was moved %d times, %d EndpointMoved so far",
				db, e.Node, e.Cause, ep, r.cl.EndpointServers(ep), moves, n)
		}
	case rwpool.RoleChanged:
		r.logf("event: %s%s RoleChanged read-only=%v (%v)", db, e.Node, e.ReadOnly, e.Cause)
		if e.Role == "primary" && e.Cause != nil && strings.Contains(e.Cause.Error(), "it is the primary now") {
			r.mu.Lock()
			if r.followed == nil {
				r.followed = map[string][]time.Duration{}
			}
			r.followed[db] = append(r.followed[db], r.since())
			r.mu.Unlock()
		}
	default:
		r.logf("event: %s%s %s -> %s (%v)", db, e.Node, e.From, e.To, e.Cause)
	}
}

// simRegression is one file of testdata/simulation: a plan that once broke
// an invariant, kept so that the bug it found stays fixed. Exploration
// draws fresh seeds and may never draw that plan again.
type simRegression struct {
	Invariant string  `json:"invariant"`
	Found     string  `json:"found"`
	Cause     string  `json:"cause"`
	Plan      simPlan `json:"plan"`
}

// simRegressionReplays is how many times each regression plan runs: a
// plan fixes the schedule, not the goroutines' interleaving, and the
// plans kept failed on the code they found at least once in this many.
const simRegressionReplays = 5

// TestSimulationRegressions replays every plan of testdata/simulation,
// each simRegressionReplays times, and fails on any invariant broken that
// is not known open (simKnownOpen).
func TestSimulationRegressions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "simulation", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no regression plans in testdata/simulation (err %v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r simRegression
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			for i := range simRegressionReplays {
				res := runSim(r.Plan)
				if res.violations = res.failing(); len(res.violations) > 0 {
					t.Fatalf("replay %d: %s broke %s again (first found: %s; cause: %s)\n%s",
						i+1, filepath.Base(f), res.violations[0].Kind, r.Found, r.Cause, res.report())
				}
			}
		})
	}
}
