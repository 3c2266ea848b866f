package rwpool_test

// Harness for the fault-injection tests (integration_faults_test.go): node
// faults through scripts/cluster.sh with guaranteed restoration, a load
// generator that records every call, a poller, and readers of
// rwpool.Stats and rwpool.Configure.

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/health"
)

// The health settings every fault test opens rwpool with: the defaults,
// as the resilience issue asks. The bounds the tests assert are derived
// from them.
const (
	faultCheckInterval = 2 * time.Second         // check_interval's default
	faultProbeTimeout  = 1000 * time.Millisecond // probe_timeout's default
	faultDSN           = ""

	faultScriptTimeout = 60 * time.Second // bound on one cluster.sh command
	faultReadTimeout   = 2 * time.Second  // default per-call deadline of the load
	faultPollEvery     = 20 * time.Millisecond
)

// ---------------------------------------------------------------------------
// Cluster operations
// ---------------------------------------------------------------------------

// clusterScript runs `$RWPOOL_CLUSTER_SCRIPT args...` within
// faultScriptTimeout and returns its combined output. The script runs in a
// process group of its own, killed whole on timeout; servers it starts
// detach themselves (own session, own stdio), so they survive that and
// never hold our pipes open.
func clusterScript(args ...string) (string, error) {
	return runScript("RWPOOL_CLUSTER_SCRIPT", "$RWPOOL_CLUSTER_DIR/env", args...)
}

// pgbouncerScript runs `$RWPOOL_PGBOUNCER_SCRIPT args...` (scripts/pgbouncer.sh)
// as clusterScript runs cluster.sh.
func pgbouncerScript(args ...string) (string, error) {
	return runScript("RWPOOL_PGBOUNCER_SCRIPT", "$RWPOOL_PGBOUNCER_DIR/env", args...)
}

// runScript runs the script named by the environment variable v, which
// the env file envFile sets.
func runScript(v, envFile string, args ...string) (string, error) {
	script := os.Getenv(v)
	if script == "" {
		return "", fmt.Errorf("%s is not set: source %s", v, envFile)
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %s: %w", faultScriptTimeout, err)
	}
	return string(out), err
}

// portTaken is what cluster.sh start-node says when something else answers
// on the node's port. The cluster's ports lie inside Linux's ephemeral range
// (32768-60999), and the script's own check (bash /dev/tcp) or any other
// non-Go client dialling a dead node's port can occasionally be handed that
// very port as its source port and connect to itself (TCP simultaneous
// open); Go's dialer detects and drops such self-connections, others do
// not. The socket goes away within moments, so start-node is retried.
const portTaken = "is taken by a process that is not this node"

// nodeOp runs `cluster.sh op port`, retrying start-node while the port is
// briefly taken (see portTaken). It returns the output of the last attempt
// and how many retries it needed.
func nodeOp(op, port string) (out string, retries int, err error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err = clusterScript(op, port)
		if err == nil || op != "start-node" || !strings.Contains(out, portTaken) || time.Now().After(deadline) {
			return out, retries, err
		}
		retries++
		poll(5*time.Second, func() bool { // until nothing answers on the port
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 100*time.Millisecond)
			if err == nil {
				c.Close()
			}
			return err != nil
		})
	}
}

// restorer remembers which nodes of one test's cluster are disturbed, and
// puts them back when the test ends, whatever way it ends.
type restorer struct {
	mu      sync.Mutex
	hung    map[string]bool // ports hang-node stopped and resume-node did not yet resume
	down    map[string]bool // ports kill-node/stop-node took down and start-node did not yet start
	touched bool
}

var restorers sync.Map // *testing.T -> *restorer

func restorerFor(t *testing.T) *restorer {
	t.Helper()
	if r, ok := restorers.Load(t); ok {
		return r.(*restorer)
	}
	r := &restorer{hung: map[string]bool{}, down: map[string]bool{}}
	restorers.Store(t, r)
	t.Cleanup(func() {
		restorers.Delete(t)
		r.restore(t)
	})
	return r
}

// restore resumes hung nodes, then starts killed or stopped ones, then waits
// until every replica caught up, so that the next test starts from a
// healthy, synchronised cluster; if any step fails it shows the cluster's
// status.
func (r *restorer) restore(t *testing.T) {
	r.mu.Lock()
	hung, down, touched := sortedKeys(r.hung), sortedKeys(r.down), r.touched
	r.mu.Unlock()
	if !touched {
		return
	}
	failed := false
	for _, p := range hung {
		if out, err := clusterScript("resume-node", p); err != nil {
			t.Errorf("cleanup: resume-node %s: %v\n%s", p, err, out)
			failed = true
		}
	}
	for _, p := range slices.Concat(hung, down) { // a hung node may also have died meanwhile
		if out, _, err := nodeOp("start-node", p); err != nil {
			t.Errorf("cleanup: start-node %s: %v\n%s", p, err, out)
			failed = true
		}
	}
	if out, err := clusterScript("wait-sync"); err != nil {
		t.Errorf("cleanup: wait-sync: %v\n%s", err, out)
		failed = true
	}
	if failed {
		out, err := clusterScript("status")
		t.Errorf("cleanup: cluster after restoring %v (status: %v):\n%s", slices.Concat(hung, down), err, out)
	}
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// fault runs `cluster.sh op PORT` for the node at addr (host:port) and
// returns how long the command took. op is kill-node, stop-node, hang-node,
// start-node or resume-node. The node is recorded as disturbed before the
// command runs, so the test's cleanup restores it even if the command fails
// half-way.
func (cl *cluster) fault(t *testing.T, op, addr string) time.Duration {
	t.Helper()
	port := portOf(addr)
	r := restorerFor(t)
	r.mu.Lock()
	switch op {
	case "kill-node", "stop-node":
		r.down[port], r.touched = true, true
		delete(r.hung, port) // a killed node has nothing left to resume
	case "hang-node":
		r.hung[port], r.touched = true, true
	case "start-node", "resume-node":
		r.touched = true
	default:
		r.mu.Unlock()
		t.Fatalf("fault: unknown op %q", op)
	}
	r.mu.Unlock()
	start := time.Now()
	out, retries, err := nodeOp(op, port)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s: cluster.sh %s %s: %v\n%s", cl.Name, op, port, err, out)
	}
	if retries > 0 {
		t.Logf("%s: %s %s: retried %d time(s): port briefly taken (self-connected client socket?)", cl.Name, op, port, retries)
	}
	r.mu.Lock()
	switch op {
	case "start-node":
		delete(r.down, port)
	case "resume-node":
		delete(r.hung, port)
	}
	r.mu.Unlock()
	t.Logf("%s: %s %s (%s) took %s", cl.Name, op, port, cl.nodeName(addr), took.Round(time.Millisecond))
	return took
}

// waitSync waits until every running replica replayed what its primary had.
func (cl *cluster) waitSync(t *testing.T) {
	t.Helper()
	if out, err := clusterScript("wait-sync"); err != nil {
		t.Fatalf("%s: cluster.sh wait-sync: %v\n%s", cl.Name, err, out)
	}
}

// nodeName returns rwpool's default name for the node at addr: "primary",
// "replica1", "replica2".
func (cl *cluster) nodeName(addr string) string {
	if addr == cl.Primary {
		return "primary"
	}
	for i, r := range cl.Replicas {
		if r == addr {
			return fmt.Sprintf("replica%d", i+1)
		}
	}
	return "?" + addr
}

// allAddrs returns the primary then the replicas.
func (cl *cluster) allAddrs() []string { return append([]string{cl.Primary}, cl.Replicas...) }

// ---------------------------------------------------------------------------
// Load generator
// ---------------------------------------------------------------------------

// call is one recorded call of a load function.
type call struct {
	worker int
	start  time.Time
	dur    time.Duration
	err    error
}

// load runs a function in a loop from several goroutines and records every
// call. Each call gets a context with a deadline of its own.
type load struct {
	t       *testing.T
	db      *sql.DB
	timeout time.Duration
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	workers []*loadWorker

	stopOnce sync.Once
	res      results
}

type loadWorker struct {
	mu       sync.Mutex // only contended by stop when a worker failed to exit
	calls    []call
	inflight atomic.Int64 // UnixNano start of the current call, 0 between calls
}

// loadPause paces a worker after each call: a tiny pause keeps the record
// count (and the CPU left for the servers) reasonable without making load
// sparse; a failing call is followed by a longer one so a function that
// fails instantly does not spin.
const (
	loadPause     = time.Millisecond
	loadFailPause = 5 * time.Millisecond
)

// startLoad runs fn from workers goroutines, each call bounded by
// faultReadTimeout, until stop. The test's cleanup stops it too.
func startLoad(t *testing.T, db *sql.DB, workers int, fn func(ctx context.Context, worker int) error) *load {
	t.Helper()
	return startLoadTimeout(t, db, workers, faultReadTimeout, fn)
}

// startLoadTimeout is startLoad with a per-call timeout of timeout.
func startLoadTimeout(t *testing.T, db *sql.DB, workers int, timeout time.Duration, fn func(ctx context.Context, worker int) error) *load {
	t.Helper()
	return startLoadPaced(t, db, workers, timeout, loadPause, fn)
}

// startLoadPaced is startLoadTimeout with a pause of its own after each
// successful call, for loads of many workers that must leave the CPUs to
// the servers (a saturated machine measures its run queue, not rwpool).
func startLoadPaced(t *testing.T, db *sql.DB, workers int, timeout, pause time.Duration, fn func(ctx context.Context, worker int) error) *load {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{t: t, db: db, timeout: timeout, cancel: cancel}
	for w := range workers {
		lw := &loadWorker{}
		l.workers = append(l.workers, lw)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for ctx.Err() == nil {
				cctx, ccancel := context.WithTimeout(ctx, timeout)
				start := time.Now()
				lw.inflight.Store(start.UnixNano())
				err := fn(cctx, w)
				dur := time.Since(start)
				lw.inflight.Store(0)
				ccancel()
				if ctx.Err() != nil && err != nil {
					break // interrupted by stop: not a result
				}
				if err != nil {
					err = frozenErr{msg: err.Error(), err: err}
				}
				lw.mu.Lock()
				lw.calls = append(lw.calls, call{worker: w, start: start, dur: dur, err: err})
				lw.mu.Unlock()
				wait := pause
				if err != nil {
					wait = max(pause, loadFailPause)
				}
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		}()
	}
	t.Cleanup(func() { l.stop() })
	return l
}

// stuck returns how many calls have been running for longer than d.
func (l *load) stuck(d time.Duration) int {
	n := 0
	for _, lw := range l.workers {
		if s := lw.inflight.Load(); s != 0 && time.Since(time.Unix(0, s)) > d {
			n++
		}
	}
	return n
}

// oldestInflight returns the age of the oldest running call (0 if none).
func (l *load) oldestInflight() time.Duration {
	var max time.Duration
	for _, lw := range l.workers {
		if s := lw.inflight.Load(); s != 0 {
			max = maxDur(max, time.Since(time.Unix(0, s)))
		}
	}
	return max
}

// stop ends the load, waits for every worker (bounded: a worker still stuck
// in a call long after its deadline is a bug, reported as a test error,
// and then left behind for goleak to name) and returns every recorded call,
// in order of start. Calls interrupted by stop itself are not recorded.
func (l *load) stop() results {
	l.stopOnce.Do(func() {
		l.cancel()
		done := make(chan struct{})
		go func() { l.wg.Wait(); close(done) }()
		bound := l.timeout + 10*time.Second
		select {
		case <-done:
		case <-time.After(bound):
			l.t.Errorf("load: %d worker(s) still inside a call %s after stop (per-call timeout %s)", l.stuck(0), bound, l.timeout)
		}
		var all []call
		for _, lw := range l.workers {
			lw.mu.Lock()
			all = append(all, lw.calls...)
			lw.mu.Unlock()
		}
		slices.SortFunc(all, func(a, b call) int { return a.start.Compare(b.start) })
		l.res = results{calls: all}
		if s, err := rwpool.Stats(l.db); err == nil {
			l.res.stats = s
		}
	})
	return l.res
}

// frozenErr keeps an error's message as it was when the call returned
// (some errors, such as "unavailable for 1.2s", render differently later)
// while errors.Is and errors.As still see the original.
type frozenErr struct {
	msg string
	err error
}

func (e frozenErr) Error() string { return e.msg }
func (e frozenErr) Unwrap() error { return e.err }

// results are the calls of a stopped load.
type results struct {
	calls []call
	stats rwpool.Snapshot // at stop
}

// in returns the calls that started in [from, to); a zero from or to leaves
// that side open.
func (r results) in(from, to time.Time) []call {
	var out []call
	for _, c := range r.calls {
		if (!from.IsZero() && c.start.Before(from)) || (!to.IsZero() && !c.start.Before(to)) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// count returns how many calls started in [from, to).
func (r results) count(from, to time.Time) int { return len(r.in(from, to)) }

// failures returns the errors of the calls that started in [from, to) and
// failed.
// known returns down or, if later, when the first call that failed after
// the fault (begun at or after fault) ended: from then on the fault is
// complete and the client knows the node is gone, and every write must
// wait for the new primary (failover_wait). A write issued earlier, even
// after the crash, may be sent on a pooled connection whose server died a
// moment before (or through PgBouncer, on a server connection it has not
// yet seen die): nothing tells a client that without sending (lib/pq
// checks no socket before a statement), and once sent, its outcome is
// unknown, exactly as for a write in flight at the crash. Seen: under
// Patroni, a write begun 6 ms after the test's own 20 ms poll saw the
// leader down failed at once, the first failure of the crash (1 local run
// in 10); rwpool dropped the idle connections on it (node.dropIdle) and
// every later write waited.
func (r results) known(fault, down time.Time) time.Time {
	var first time.Time
	for _, c := range r.in(fault, time.Time{}) {
		if end := c.start.Add(c.dur); c.err != nil && (first.IsZero() || end.Before(first)) {
			first = end
		}
	}
	if first.Before(down) {
		return down
	}
	return first
}

func (r results) failures(from, to time.Time) []error {
	var errs []error
	for _, c := range r.in(from, to) {
		if c.err != nil {
			errs = append(errs, c.err)
		}
	}
	return errs
}

// p99 returns the 99th percentile duration of the calls that started in
// [from, to), failed ones included (0 without calls).
func (r results) p99(from, to time.Time) time.Duration { return r.percentile(from, to, 99) }

func (r results) percentile(from, to time.Time, p int) time.Duration {
	cs := r.in(from, to)
	if len(cs) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(cs))
	for i, c := range cs {
		ds[i] = c.dur
	}
	slices.Sort(ds)
	i := (len(ds)*p + 99) / 100 // nearest rank
	return ds[min(max(i, 1), len(ds))-1]
}

// max returns the longest duration of the calls that started in [from, to).
func (r results) max(from, to time.Time) time.Duration {
	var m time.Duration
	for _, c := range r.in(from, to) {
		m = maxDur(m, c.dur)
	}
	return m
}

// summary describes the calls that started in [from, to) in one line, with
// the distinct failure messages (at most 5, with counts).
func (r results) summary(from, to time.Time) string {
	cs := r.in(from, to)
	errs := r.failures(from, to)
	s := fmt.Sprintf("%d calls, %d failed, p50 %s, p99 %s, max %s", len(cs), len(errs),
		r.percentile(from, to, 50).Round(10*time.Microsecond), r.p99(from, to).Round(10*time.Microsecond),
		r.max(from, to).Round(10*time.Microsecond))
	if len(errs) > 0 {
		s += "; errors: " + errSummary(errs, 5)
	}
	return s
}

// Parts of error messages that would make every message distinct: the
// client side of a TCP connection ("127.0.0.1:37410->") and how long a node
// has been unavailable.
var (
	ephemeralPort   = regexp.MustCompile(`:[0-9]+->`)
	unavailableTime = regexp.MustCompile(`unavailable for [0-9.]+[a-zµ]+`)
)

// errSummary lists the distinct messages of errs, masked as above, most
// frequent first, with their counts.
func errSummary(errs []error, limit int) string {
	counts := map[string]int{}
	var order []string
	for _, e := range errs {
		m := ephemeralPort.ReplaceAllString(e.Error(), ":*->")
		m = unavailableTime.ReplaceAllString(m, "unavailable for *")
		if counts[m] == 0 {
			order = append(order, m)
		}
		counts[m]++
	}
	slices.SortStableFunc(order, func(a, b string) int { return counts[b] - counts[a] })
	var b strings.Builder
	for i, m := range order {
		if i == limit {
			fmt.Fprintf(&b, " (+%d more distinct)", len(order)-limit)
			break
		}
		fmt.Fprintf(&b, "\n    %dx %s", counts[m], m)
	}
	return b.String()
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// ---------------------------------------------------------------------------
// Load functions and what they saw
// ---------------------------------------------------------------------------

// sightings records, per key (a server port, or "write"), when it was last
// seen and the first time it was seen after the key was armed.
type sightings struct {
	mu    sync.Mutex
	last  map[string]time.Time
	armed map[string]time.Time
	first map[string]time.Time // first sighting at or after armed
}

func newSightings() *sightings {
	return &sightings{last: map[string]time.Time{}, armed: map[string]time.Time{}, first: map[string]time.Time{}}
}

func (s *sightings) saw(key string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[key] = now
	if a, ok := s.armed[key]; ok && s.first[key].IsZero() && !now.Before(a) {
		s.first[key] = now
	}
}

// arm starts watching for the next sighting of key; it returns the arming
// time.
func (s *sightings) arm(key string) time.Time {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed[key], s.first[key] = now, time.Time{}
	return now
}

// firstAfterArm returns how long after arm key was first seen again.
func (s *sightings) firstAfterArm(key string) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.first[key]
	if f.IsZero() {
		return 0, false
	}
	return f.Sub(s.armed[key]), true
}

func (s *sightings) lastSeen(key string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[key]
}

// readFn returns a load function running the cluster's port query through
// db and recording which server answered.
func (cl *cluster) readFn(db *sql.DB, seen *sightings) func(ctx context.Context, worker int) error {
	return func(ctx context.Context, _ int) error {
		var port string
		if err := db.QueryRowContext(ctx, cl.PortQuery).Scan(&port); err != nil {
			return err
		}
		seen.saw(port)
		return nil
	}
}

// writeFn returns a load function inserting one row with a fresh id into
// table (id BIGINT PRIMARY KEY, w INT), recording successes as "write".
func writeFn(db *sql.DB, table string, ids *atomic.Int64, seen *sightings) func(ctx context.Context, worker int) error {
	return func(ctx context.Context, w int) error {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (id, w) VALUES (%d, %d)", table, ids.Add(1), w)); err != nil {
			return err
		}
		seen.saw("write")
		return nil
	}
}

// ---------------------------------------------------------------------------
// Waiting
// ---------------------------------------------------------------------------

// poll checks cond every faultPollEvery until it holds or timeout passes;
// it returns how long it took and whether cond held.
func poll(timeout time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	tick := time.NewTicker(faultPollEvery)
	defer tick.Stop()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > timeout {
			return time.Since(start), false
		}
		<-tick.C
	}
}

// eventually fails the test now unless cond holds within timeout; it
// returns how long it took.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	d, ok := poll(timeout, cond)
	if !ok {
		t.Fatalf("%s: not within %s", what, timeout)
	}
	return d
}

// within is eventually that records the failure and lets the test go on.
func within(t *testing.T, timeout time.Duration, what string, cond func() bool) (time.Duration, bool) {
	t.Helper()
	d, ok := poll(timeout, cond)
	if !ok {
		t.Errorf("%s: not within %s", what, timeout)
	}
	return d, ok
}

// soak lets the load run for d: a measurement window, not synchronisation.
func soak(d time.Duration) { time.Sleep(d) }

// ---------------------------------------------------------------------------
// Stats
// ---------------------------------------------------------------------------

// nodeStats returns the stats of the node called name ("primary",
// "replica1", ...).
func nodeStats(t *testing.T, db *sql.DB, name string) rwpool.NodeStats {
	t.Helper()
	s, err := rwpool.Stats(db)
	if err != nil {
		t.Fatal(err)
	}
	ns, ok := findNode(s, name)
	if !ok {
		t.Fatalf("no node %q in stats:\n%s", name, s)
	}
	return ns
}

func findNode(s rwpool.Snapshot, name string) (rwpool.NodeStats, bool) {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return rwpool.NodeStats{}, false
}

// availability samples every node's Available flag every faultPollEvery
// and records each change, so a test can tell when a fault was detected and
// when the node came back, independently of OnEvent.
type availability struct {
	mu      sync.Mutex
	changes map[string][]availChange
	stopc   chan struct{}
	done    chan struct{}
	once    sync.Once
}

type availChange struct {
	at        time.Time
	available bool
}

func watchAvailability(t *testing.T, db *sql.DB) *availability {
	t.Helper()
	a := &availability{changes: map[string][]availChange{}, stopc: make(chan struct{}), done: make(chan struct{})}
	cur := map[string]bool{}
	sample := func() {
		s, err := rwpool.Stats(db)
		if err != nil {
			return
		}
		now := time.Now()
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, n := range s.Nodes {
			if prev, ok := cur[n.Name]; !ok || prev != n.Available {
				if ok {
					a.changes[n.Name] = append(a.changes[n.Name], availChange{now, n.Available})
				}
				cur[n.Name] = n.Available
			}
		}
	}
	sample()
	go func() {
		defer close(a.done)
		tick := time.NewTicker(faultPollEvery)
		defer tick.Stop()
		for {
			select {
			case <-a.stopc:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	t.Cleanup(a.stop)
	return a
}

func (a *availability) stop() {
	a.once.Do(func() { close(a.stopc); <-a.done })
}

// firstChange returns when node first became available (or unavailable)
// at or after since, as seen by the sampler.
func (a *availability) firstChange(node string, available bool, since time.Time) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.changes[node] {
		if c.available == available && !c.at.Before(since) {
			return c.at, true
		}
	}
	return time.Time{}, false
}

// describe renders node's availability changes relative to t0.
func (a *availability) describe(node string, t0 time.Time) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var parts []string
	for _, c := range a.changes[node] {
		s := "down"
		if c.available {
			s = "up"
		}
		parts = append(parts, fmt.Sprintf("%s@%+.2fs", s, c.at.Sub(t0).Seconds()))
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, " ")
}

// sinceOrNever formats when (relative to t0) or "never".
func sinceOrNever(at time.Time, ok bool, t0 time.Time) string {
	if !ok {
		return "never"
	}
	return at.Sub(t0).Round(time.Millisecond).String()
}

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

// eventLog collects the events rwpool.Configure reports for one db.
type eventLog struct {
	mu  sync.Mutex
	evs []rwpool.Event
}

// collectEvents registers an event log with db (rwpool.Configure).
func collectEvents(t *testing.T, db *sql.DB) *eventLog {
	t.Helper()
	l := &eventLog{}
	if err := rwpool.Configure(db, rwpool.WithEventHandler(func(ev rwpool.Event) {
		l.mu.Lock()
		l.evs = append(l.evs, ev)
		l.mu.Unlock()
	})); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	return l
}

// forNode returns node's events so far, in order.
func (l *eventLog) forNode(node string) []rwpool.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []rwpool.Event
	for _, e := range l.evs {
		if e.Node == node {
			out = append(out, e)
		}
	}
	return out
}

// others returns the events of every node but node.
func (l *eventLog) others(node string) []rwpool.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []rwpool.Event
	for _, e := range l.evs {
		if e.Node != node {
			out = append(out, e)
		}
	}
	return out
}

// checkTransitions checks that evs, one node's events in order from a
// start in state Available, alternate Available→Unavailable and back with
// no repeated transition, that each carries what Event promises (a cause
// when going down, a downtime when coming back, times in order), and
// returns how many went down and how many came back.
func checkTransitions(t *testing.T, role string, evs []rwpool.Event) (downs, ups int) {
	t.Helper()
	state := health.Available
	var prevAt time.Time
	for i, e := range evs {
		if e.From != state || e.To == e.From {
			t.Errorf("event %d of %s: %s -> %s, but the node was %s (a duplicate or skipped transition)", i, e.Node, e.From, e.To, state)
		}
		if e.Role != role {
			t.Errorf("event %d of %s: role %q, want %q", i, e.Node, e.Role, role)
		}
		if e.At.Before(prevAt) {
			t.Errorf("event %d of %s: at %s, before the previous event (%s)", i, e.Node, e.At.Format(time.StampMicro), prevAt.Format(time.StampMicro))
		}
		switch e.To {
		case health.Unavailable:
			downs++
			if e.Cause == nil {
				t.Errorf("event %d of %s: became unavailable with no Cause", i, e.Node)
			}
		case health.Available:
			ups++
			if e.Cause != nil {
				t.Errorf("event %d of %s: recovery with Cause %v, want nil", i, e.Node, e.Cause)
			}
			if e.Downtime <= 0 || (i > 0 && e.Downtime > e.At.Sub(evs[i-1].At)+time.Millisecond) {
				t.Errorf("event %d of %s: Downtime %s, want the time since the previous event (%s)", i, e.Node, e.Downtime, e.At.Sub(prevAt))
			}
		}
		state, prevAt = e.To, e.At
	}
	return downs, ups
}

// hangWindow is one hang of a node under a load: when hang-node began and
// returned, when the node was resumed, and the longest call seen in
// flight meanwhile (a call stuck for good never reaches the results).
type hangWindow struct {
	hang, hung, resume time.Time
	command            time.Duration // how long hang-node took
	stall              time.Duration // the longest a goroutine of this test waited past a 10 ms sleep, from the hang to the resume
	oldest             time.Duration
	stuck              int // calls in flight for longer than the bound given to hangNode when it resumed
}

// hangNode hangs addr (SIGSTOP) under l for d, watching the calls in
// flight, and resumes it.
func (cl *cluster) hangNode(t *testing.T, l *load, addr string, d, bound time.Duration) hangWindow {
	t.Helper()
	w := hangWindow{hang: time.Now()}
	stall := meterStalls()
	defer func() { w.stall = stall() }()
	w.command = cl.hangServer(t, addr)
	w.hung = time.Now()
	poll(d, func() bool {
		w.oldest = maxDur(w.oldest, l.oldestInflight())
		return false
	})
	w.resume = time.Now()
	w.stuck = l.stuck(bound)
	cl.fault(t, "resume-node", addr)
	return w
}

// hangServer hangs the server behind addr as `cluster.sh hang-node` does
// (SIGSTOP to the server's main process and every child, listed again
// after the stop), but from the test itself: the script, a few forks of
// shell and pgrep, took 0.5-1.9 s on the loaded CI machine, with the node
// half hung and the moment of the hang unknown. It reads the main pid from
// the pid file the cluster's env file names, and falls back to the script
// without one. It returns how long it took.
func (cl *cluster) hangServer(t *testing.T, addr string) time.Duration {
	t.Helper()
	port := portOf(addr)
	pidfile := os.Getenv("RWPOOL_PG_PIDFILE_" + port)
	if pidfile == "" {
		pidfile = os.Getenv("RWPOOL_MY_PIDFILE_" + port)
	}
	b, err := os.ReadFile(pidfile)
	main, perr := 0, error(nil)
	if err == nil {
		main, perr = strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	}
	if pidfile == "" || err != nil || perr != nil || main <= 0 {
		return cl.fault(t, "hang-node", addr)
	}
	r := restorerFor(t)
	r.mu.Lock()
	r.hung[port], r.touched = true, true // resumed by the test's cleanup if it ends first
	r.mu.Unlock()
	start := time.Now()
	stopped := map[int]bool{}
	stop := func(pids []int) {
		for _, p := range pids {
			if !stopped[p] {
				stopped[p] = true
				syscall.Kill(p, syscall.SIGSTOP)
			}
		}
	}
	stop(append([]int{main}, childPids(main)...))
	stop(childPids(main)) // forked between the listing and the stop
	took := time.Since(start)
	t.Logf("%s: hung %s (%s): SIGSTOP to %d processes in %s", cl.Name, port, cl.nodeName(addr), len(stopped), took.Round(time.Microsecond))
	return took
}

// childPids lists the processes whose parent is pid, from /proc.
func childPids(pid int) []int {
	var kids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(b)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		if f := strings.Fields(rest); len(f) >= 2 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, p)
		}
	}
	return kids
}

// meterStalls measures how late the Go scheduler wakes a goroutine that
// sleeps 10 ms at a time, until the returned func is called; it returns
// the worst lateness. A machine that stops running the test's goroutines
// (the shared 2-core CI machine, sometimes) shows there; a slow shell
// command (hang-node takes 0.5-1.6 s on such a machine while the calls
// themselves answer in 60 ms) does not.
func meterStalls() func() time.Duration {
	var worst atomic.Int64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				now := time.Now() // not the tick's own time: a late receiver is what this measures
				if late := int64(now.Sub(last) - 10*time.Millisecond); late > worst.Load() {
					worst.Store(late)
				}
				last = now
			}
		}
	}()
	return func() time.Duration {
		close(done)
		<-stopped
		return time.Duration(worst.Load())
	}
}

// noCallOver fails the test if a call of res, or one seen in flight during
// w, took longer than bound; it lists the first few, timed from the hang.
func noCallOver(t *testing.T, res results, w hangWindow, bound time.Duration) {
	t.Helper()
	var zero time.Time
	if w.stuck > 0 {
		t.Errorf("%d calls were still running after more than %s when the node was resumed (oldest in flight seen: %s)", w.stuck, bound, w.oldest.Round(time.Millisecond))
	}
	m := maxDur(res.max(zero, zero), w.oldest)
	if m <= bound {
		return
	}
	var slow []string
	for _, c := range res.calls {
		if c.dur > bound && len(slow) < 8 {
			slow = append(slow, fmt.Sprintf("\n    %s at hang%+.2fs: %v", c.dur.Round(time.Millisecond), c.start.Sub(w.hang).Seconds(), c.err))
		}
	}
	t.Errorf("slowest call took %s (longest in flight while hung: %s), want at most %s; calls over it:%s",
		m.Round(time.Millisecond), w.oldest.Round(time.Millisecond), bound, strings.Join(slow, ""))
}
