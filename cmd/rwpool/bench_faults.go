package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Thresholds of the fault report.
const (
	hungAfter    = time.Second            // a request slower than this is counted as hung
	normalBelow  = 100 * time.Millisecond // a normal request succeeds faster than this
	normalWindow = time.Second            // normal traffic must last this long to count
)

// faultVariants are the variants of the fault scenarios, in order.
var faultVariants = []string{"bare", "rwpool", "dbresolver", "nap", "pgpool", "haproxy"}

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

// faultRow is the outcome of one fault scenario for one variant.
type faultRow struct {
	driver, label, fault, variant string
	requests, failed, hung        int
	recovery                      time.Duration
	recovered                     bool
	stuck                         int // requests still running when the bench gave up on them
	firstErr                      string
	skip                          string // why the variant cannot run this scenario ("" if it ran)
}

// runFaults runs one fault scenario on replica1 of driver d for each fault
// variant, waiting for the cluster to be healthy between variants.
func runFaults(ctx context.Context, o benchOpts, cl *cluster, d benchDriver, fault string, logf func(string, ...any)) ([]faultRow, error) {
	var rows []faultRow
	for _, v := range faultVariants {
		if !slices.Contains(o.variants, v) {
			continue
		}
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
		logf("fault %s replica1 (%s): %s, %d workers, a read every %s each, %s steady + %s window",
			fault, d.Driver, v, o.faultGoroutines, o.faultPace, o.faultSteady, o.faultWindow)
		row, err := runFault(ctx, o, cl, d, fault, v)
		if err != nil {
			return rows, err
		}
		if row.skip != "" {
			logf("  %s", row.skip)
			rows = append(rows, row)
			continue
		}
		logf("  %d requests, %d failed, %d over 1s, normal again: %s", row.requests, row.failed, row.hung, row.recoveryText())
		rows = append(rows, row)
	}
	return rows, nil
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
func runFault(ctx context.Context, o benchOpts, cl *cluster, d benchDriver, fault, v string) (row faultRow, err error) {
	row = faultRow{driver: d.Driver, label: d.label, fault: fault, variant: v}
	if row.skip = proxySkip(v, d.Driver); row.skip != "" {
		return row, nil
	}
	if err := cl.freshProxy(ctx, v); err != nil {
		return row, err
	}
	r, err := openVariant(v, d)
	if err != nil {
		return row, err
	}
	defer r.Close()
	if err := checkRoute(ctx, r, v, d); err != nil {
		return row, err
	}
	runLoad(ctx, r, o.faultGoroutines, o.warmup) // open the pools

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
			next := time.Now()
			for !stop.Load() {
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
				if next = next.Add(o.faultPace); next.Before(time.Now()) {
					next = time.Now()
				}
				start := time.Since(begin)
				cur[w].Store(int64(start) + 1)
				rctx, cancel := context.WithTimeout(context.Background(), o.faultTimeout)
				_, err := r.scanInt(rctx, "SELECT 1")
				cancel()
				cur[w].Store(0)
				s := sample{start: start, end: time.Since(begin), failed: err != nil}
				mu.Lock()
				samples = append(samples, s)
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}

	ops := faultOps[fault]
	injected, finished := false, false
	// finish stops the load, undoes the fault and waits for the workers
	// and the cluster; it returns the starts of the reads still running
	// when it gave up waiting for them.
	finish := func() (stuck []time.Duration, err error) {
		finished = true
		stop.Store(true)
		if injected {
			err = cl.nodeOp(context.Background(), ops[1], d.Replicas[0])
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(o.faultTimeout + 20*time.Second):
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
	if err := cl.nodeOp(ctx, ops[0], d.Replicas[0]); err != nil {
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
	var window []sample
	for _, s := range all {
		if s.start >= undoAt {
			continue
		}
		if s.end > undoAt {
			s.end, s.failed = undoAt, false
		}
		window = append(window, s)
	}
	for _, start := range stuck {
		window = append(window, sample{start: start, end: undoAt})
	}
	row.recovery, row.recovered = timeToNormal(window, faultAt, undoAt)
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
	}
	if first != nil {
		row.firstErr = oneLine(first.Error())
	}
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
%s context timeout, through a fresh instance of the variant (primary +
replica1; bare: replica1 only). After %s of steady load replica1 is
killed (cluster.sh kill-node: SIGKILL of the server) or hung (hang-node:
SIGSTOP; the kernel still accepts connections, nothing answers); %s
later the fault is undone (start-node / resume-node), the load stops and
the cluster is waited for (status, wait-sync) before the next variant.
rwpool runs with its defaults: check_interval=2s, probe_timeout=1s,
breaker on, fallback=primary.
  failed   reads that returned an error (the timeout included)
  >1s      reads that took longer than 1s, failed or not
  normal again  time from the fault's injection to the first moment T
           from which every read in flight at any time between T and
           the undo succeeded in under 100ms, with at least 1s of such
           traffic before the undo; otherwise "never (within window)".
           Reads still running at the undo count as ending there.
`, o.faultGoroutines, o.faultPace, o.faultTimeout, o.faultSteady, o.faultWindow)
}
