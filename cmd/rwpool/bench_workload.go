package main

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// loadResult is one measured run of the SELECT 1 load.
type loadResult struct {
	stmts     int
	errs      int
	firstErr  error
	elapsed   time.Duration
	lat       []time.Duration // sorted
	mallocs   uint64          // runtime.MemStats.Mallocs delta over the run
	perWorker []int           // statements that succeeded, by goroutine
}

func (r loadResult) qps() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.stmts) / r.elapsed.Seconds()
}

func (r loadResult) allocsPerStmt() float64 {
	if r.stmts == 0 {
		return 0
	}
	return float64(r.mallocs) / float64(r.stmts)
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value with at least p% of the values at
// or below it. 0 for no values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100 + 0.999999999)
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// median returns the median of xs (the mean of the two middle values for
// an even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// runLoad runs SELECT 1 through r from g goroutines for d, each statement
// with context.Background() (the plain db.QueryRow of most programs), and
// measures it. It ends early if ctx ends.
func runLoad(ctx context.Context, r reader, g int, d time.Duration) loadResult {
	var stop atomic.Bool
	per := make([][]time.Duration, g)
	errs := make([]int, g)
	firstErr := make([]error, g)
	for w := range per {
		per[w] = make([]time.Duration, 0, 1<<14)
	}
	var wg sync.WaitGroup
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bg := context.Background()
			for !stop.Load() {
				t := time.Now()
				n, err := r.scanInt(bg, "SELECT 1")
				lat := time.Since(t)
				if err == nil && n != 1 {
					err = fmt.Errorf("SELECT 1 returned %d", n)
				}
				if err != nil {
					if errs[w] == 0 {
						firstErr[w] = err
					}
					errs[w]++
					continue
				}
				per[w] = append(per[w], lat)
			}
		}()
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	res := loadResult{elapsed: elapsed, lat: slices.Concat(per...), mallocs: after.Mallocs - before.Mallocs}
	for _, l := range per {
		res.perWorker = append(res.perWorker, len(l))
	}
	slices.Sort(res.lat)
	res.stmts = len(res.lat)
	for w := range g {
		res.stmts += errs[w]
		res.errs += errs[w]
		if res.firstErr == nil {
			res.firstErr = firstErr[w]
		}
	}
	return res
}

// throughputRow is one variant at one concurrency level over the rounds:
// the median of each figure, and every round's figures (for the spreads
// and the ratios to bare in the same round).
type throughputRow struct {
	driver, label string
	goroutines    int
	variant       string
	qps           float64
	p50, p99      time.Duration
	allocs        float64 // per statement
	errs          int     // over all rounds
	rounds        int
	perRound      []roundFigures // by round
	hist          latencyHist    // every round's latencies
	pool          []poolFigures  // rwpool variants: the pool serving the reads, by round
}

// checkRoute makes sure the variant's reads land where they should: on
// replica1 (either replica for rwpool-2r and the proxies).
func checkRoute(ctx context.Context, r reader, v string, d benchDriver) error {
	want := []string{d.Replicas[0]}
	if v == "rwpool-2r" || isProxy(v) {
		want = d.Replicas[:2]
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	port, err := r.scanInt(ctx, d.PortQuery)
	if err != nil {
		return fmt.Errorf("%s/%s: %w", d.Driver, v, err)
	}
	for _, addr := range want {
		if _, p, _ := net.SplitHostPort(addr); p == strconv.FormatInt(port, 10) {
			return nil
		}
	}
	return fmt.Errorf("%s/%s: a read was served by port %d, not by %v", d.Driver, v, port, want)
}

// runThroughput measures every variant of o on driver d at every
// concurrency level, interleaving the variants in rounds; each round starts
// one variant later than the one before, so that no variant always runs
// right after the same one. Each measurement opens its variant afresh and
// closes it afterwards: four variants keeping 64 idle connections each to
// one replica would exceed PostgreSQL's max_connections.
func runThroughput(ctx context.Context, o benchOpts, d benchDriver, logf func(string, ...any)) ([]throughputRow, error) {
	var rows []throughputRow
	for _, g := range o.goroutines {
		results := map[string][]measured{}
		for round := range o.rounds {
			for _, v := range roundOrder(o.variants, round) {
				if ctx.Err() != nil {
					return rows, ctx.Err()
				}
				if proxySkip(v, d.Driver) != "" {
					continue
				}
				m, err := measure(ctx, o, d, v, g)
				if err != nil {
					return rows, err
				}
				results[v] = append(results[v], m)
				res := m.load
				logf("%s g=%d round %d/%d %-10s %8.0f q/s  p50 %-8s p99 %-8s %5.1f allocs/stmt%s%s",
					d.Driver, g, round+1, o.rounds, v, res.qps(), fmtDur(percentile(res.lat, 50)),
					fmtDur(percentile(res.lat, 99)), res.allocsPerStmt(), m.pool.note(), errNote(res))
			}
		}
		for _, v := range o.variants {
			if proxySkip(v, d.Driver) == "" {
				rows = append(rows, summarize(d, g, v, results[v]))
			}
		}
	}
	return rows, nil
}

// measured is one measurement: the load's figures and, for rwpool, its
// pool's.
type measured struct {
	load loadResult
	pool *poolFigures
}

// measure opens variant v, checks where its reads go, warms it up and
// measures it at g goroutines.
func measure(ctx context.Context, o benchOpts, d benchDriver, v string, g int) (measured, error) {
	r, err := openVariant(baseVariant(v), d)
	if err != nil {
		return measured{}, fmt.Errorf("%s/%s: %w", d.Driver, v, err)
	}
	defer r.Close()
	if err := checkRoute(ctx, r, baseVariant(v), d); err != nil {
		return measured{}, err
	}
	if o.warmup > 0 {
		runLoad(ctx, r, g, o.warmup)
	}
	before := poolStats(r)
	res := runLoad(ctx, r, g, o.duration)
	return measured{load: res, pool: poolDelta(before, poolStats(r))}, nil
}

func errNote(r loadResult) string {
	if r.errs == 0 {
		return ""
	}
	return fmt.Sprintf("  %d ERRORS, first: %v", r.errs, r.firstErr)
}

// summarize takes the median of each figure over the rounds and keeps
// each round's.
func summarize(d benchDriver, g int, v string, ms []measured) throughputRow {
	var qps, p50, p99, allocs []float64
	row := throughputRow{driver: d.Driver, label: d.label, goroutines: g, variant: v, rounds: len(ms)}
	for _, m := range ms {
		r := m.load
		f := figuresOf(r)
		row.perRound = append(row.perRound, f)
		qps = append(qps, f.qps)
		p50 = append(p50, float64(f.p50))
		p99 = append(p99, float64(f.p99))
		allocs = append(allocs, f.allocs)
		row.errs += r.errs
		row.hist.addAll(r.lat)
		if m.pool != nil {
			row.pool = append(row.pool, *m.pool)
		}
	}
	row.qps, row.allocs = median(qps), median(allocs)
	row.p50, row.p99 = time.Duration(median(p50)), time.Duration(median(p99))
	return row
}
