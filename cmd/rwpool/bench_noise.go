package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rwpool/rwpool"
)

// roundFigures are one variant's figures in one round.
type roundFigures struct {
	qps                float64
	p50, p99, p999     time.Duration
	allocs             float64 // per statement
	minShare, maxShare float64 // statements of the slowest and busiest goroutine over the mean
}

// figuresOf sums up one measured run.
func figuresOf(r loadResult) roundFigures {
	f := roundFigures{qps: r.qps(), p50: percentile(r.lat, 50), p99: percentile(r.lat, 99),
		p999: percentile(r.lat, 99.9), allocs: r.allocsPerStmt()}
	if len(r.perWorker) > 0 {
		lo, hi, sum := math.MaxInt, 0, 0
		for _, n := range r.perWorker {
			lo, hi, sum = min(lo, n), max(hi, n), sum+n
		}
		if mean := float64(sum) / float64(len(r.perWorker)); mean > 0 {
			f.minShare, f.maxShare = float64(lo)/mean, float64(hi)/mean
		}
	}
	return f
}

// spread is the median, minimum and maximum of a figure over the rounds.
type spread struct {
	med, lo, hi float64
	n           int // rounds
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	return spread{med: median(xs), lo: slices.Min(xs), hi: slices.Max(xs), n: len(xs)}
}

// format formats a spread with f: "m (lo–hi)", or "m" alone from one
// round, "—" from none.
func (s spread) format(f func(float64) string) string {
	switch s.n {
	case 0:
		return "—"
	case 1:
		return f(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.med), f(s.lo), f(s.hi))
}

// ratio formats a spread of ratios: "0.97 (0.91–1.02)".
func (s spread) ratio() string {
	return s.format(func(x float64) string { return fmt.Sprintf("%.2f", x) })
}

// dur formats a spread of durations: "145µs (140µs–160µs)".
func (s spread) dur() string {
	return s.format(func(x float64) string { return fmtDur(time.Duration(x)) })
}

// count formats a spread of counts or rates: "14364 (13800–14900)".
func (s spread) count() string {
	return s.format(func(x float64) string { return fmt.Sprintf("%.0f", x) })
}

// field picks one figure of every round of t.
func (t throughputRow) field(f func(roundFigures) float64) []float64 {
	out := make([]float64, len(t.perRound))
	for i, r := range t.perRound {
		out[i] = f(r)
	}
	return out
}

// ratios divides t's figure by base's in the same round, for every round
// both have.
func ratios(t, base throughputRow, f func(roundFigures) float64) []float64 {
	var out []float64
	for i := range min(len(t.perRound), len(base.perRound)) {
		if b := f(base.perRound[i]); b > 0 {
			out = append(out, f(t.perRound[i])/b)
		}
	}
	return out
}

// The figures of a round, for the functions above.
func figQPS(r roundFigures) float64  { return r.qps }
func figP50(r roundFigures) float64  { return float64(r.p50) }
func figP99(r roundFigures) float64  { return float64(r.p99) }
func figP999(r roundFigures) float64 { return float64(r.p999) }

// roundOrder is the order of the variants in round i: each round starts
// one variant later than the one before.
func roundOrder(vs []string, i int) []string {
	if len(vs) == 0 {
		return nil
	}
	k := i % len(vs)
	return append(slices.Clone(vs[k:]), vs[:k]...)
}

// baseVariant is the variant that v measures: bare-again is bare again.
func baseVariant(v string) string {
	if v == "bare-again" {
		return "bare"
	}
	return v
}

// variantDescription explains variant v in the report.
func variantDescription(v string) string {
	if v == "bare-again" {
		return "bare once more in each round: its ratio to bare is the noise floor"
	}
	return variantDescriptions[v]
}

// latencyBounds are the upper bounds of the latency histogram's buckets;
// the last bucket has none.
var latencyBounds = []time.Duration{50 * time.Microsecond, 250 * time.Microsecond, time.Millisecond,
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond}

// latencyHist counts statements by latency, in the buckets of
// latencyBounds.
type latencyHist struct {
	n     [7]int64 // len(latencyBounds)+1
	total int64
}

// addAll counts the latencies of sorted.
func (h *latencyHist) addAll(sorted []time.Duration) {
	from := 0
	for i, b := range latencyBounds {
		to, _ := slices.BinarySearch(sorted, b) // first >= b
		h.n[i] += int64(to - from)
		from = to
	}
	h.n[len(latencyBounds)] += int64(len(sorted) - from)
	h.total += int64(len(sorted))
}

func histHead() []string {
	head := []string{"variant"}
	lo := "0"
	for _, b := range latencyBounds {
		head = append(head, lo+"–"+fmtBound(b))
		lo = fmtBound(b)
	}
	return append(head, "≥ "+lo, "p99.9", "slowest / busiest goroutine")
}

// fmtBound formats a bucket bound: 50µs, 1ms.
func fmtBound(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%dµs", d/time.Microsecond)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// share formats a bucket's share of the statements, with enough digits
// for the tail.
func share(n, total int64) string {
	if total == 0 {
		return "—"
	}
	p := 100 * float64(n) / float64(total)
	switch {
	case n == 0:
		return "0"
	case p >= 10:
		return fmt.Sprintf("%.0f%%", p)
	case p >= 1:
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.2f%%", p)
}

// poolFigures are what the pool serving rwpool's reads did during one
// measured run: rwpool.NodeStats of that node, differences over the run
// for the counters.
type poolFigures struct {
	node         string
	served       int64
	waitCount    int64
	waitDuration time.Duration
	dials        int64
	open, max    int // at the end of the run
}

// note is the pool's part of a progress line.
func (p *poolFigures) note() string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("  pool %s: %d waits (%s), %d dials, %d/%d open", p.node, p.waitCount, fmtDur(p.waitDuration),
		p.dials, p.open, p.max)
}

// poolStats is rwpool's Snapshot of a variant opened through rwpool; nil
// for the others.
func poolStats(r reader) *rwpool.Snapshot {
	s, ok := r.(sqlReader)
	if !ok {
		return nil
	}
	snap, err := rwpool.Stats(s.db)
	if err != nil {
		return nil
	}
	return &snap
}

// poolDelta is the node that served most statements between two
// snapshots, with its counters' differences.
func poolDelta(before, after *rwpool.Snapshot) *poolFigures {
	if before == nil || after == nil {
		return nil
	}
	var best *poolFigures
	for _, a := range after.Nodes {
		i := slices.IndexFunc(before.Nodes, func(b rwpool.NodeStats) bool { return b.Name == a.Name })
		if i < 0 {
			continue
		}
		b := before.Nodes[i]
		f := poolFigures{node: a.Name, served: a.Served - b.Served, waitCount: a.WaitCount - b.WaitCount,
			waitDuration: a.WaitDuration - b.WaitDuration, dials: a.Dials - b.Dials, open: a.Open, max: a.MaxOpen}
		if best == nil || f.served > best.served {
			best = &f
		}
	}
	return best
}

// noiseTables are, per driver, each variant's ratios to bare in the same
// round, the noise floor among them; rwpool against the targets; the
// latency distribution at the highest concurrency; and rwpool's pool.
func (r *benchReport) noiseTables(drv, label string) []table {
	var rows []throughputRow
	for _, t := range r.throughput {
		if t.driver == drv {
			rows = append(rows, t)
		}
	}
	bare := map[int]throughputRow{}
	again := map[int]throughputRow{}
	top, rounds := 0, 0
	for _, t := range rows {
		switch t.variant {
		case "bare":
			bare[t.goroutines] = t
		case "bare-again":
			again[t.goroutines] = t
		}
		top, rounds = max(top, t.goroutines), max(rounds, t.rounds)
	}
	var out []table
	ratio := table{
		title: fmt.Sprintf("Ratios to bare in the same round, %s: median (min–max) over %d rounds; bare (again) is the noise floor", label, rounds),
		head:  []string{"goroutines", "variant", "queries/s", "p50", "p99", "p99.9", "allocs/stmt vs bare"},
		right: []bool{true, false, true, true, true, true, true},
	}
	target := table{
		title: fmt.Sprintf("rwpool against the targets, %s", label),
		head: []string{"goroutines", "throughput ratio", "noise floor", "within the noise floor?",
			"p99 ratio", "p99 noise floor", "median p99 ratio ≤ 1.10?"},
		right: []bool{true, true, true, false, true, true, false},
	}
	for _, t := range rows {
		b, ok := bare[t.goroutines]
		if !ok || t.variant == "bare" {
			continue
		}
		q, p99 := spreadOf(ratios(t, b, figQPS)), spreadOf(ratios(t, b, figP99))
		ratio.rows = append(ratio.rows, []string{fmt.Sprint(t.goroutines), variantLabel(t.variant), q.ratio(),
			spreadOf(ratios(t, b, figP50)).ratio(), p99.ratio(), spreadOf(ratios(t, b, figP999)).ratio(),
			fmt.Sprintf("%+.1f", t.allocs-b.allocs)})
		if t.variant != "rwpool" {
			continue
		}
		floor, floorText, p99Floor := spread{}, "—", "—"
		within := "no noise floor measured"
		if a, ok := again[t.goroutines]; ok {
			floor = spreadOf(ratios(a, b, figQPS))
			floorText, p99Floor = floor.ratio(), spreadOf(ratios(a, b, figP99)).ratio()
			within = verdictWithin(q.n > 0 && floor.n > 0 && q.med >= floor.lo)
		}
		target.rows = append(target.rows, []string{fmt.Sprint(t.goroutines), q.ratio(), floorText, within,
			p99.ratio(), p99Floor, verdict(p99.n > 0 && p99.med <= 1.10)})
	}
	if len(ratio.rows) > 0 {
		out = append(out, ratio)
	}
	if len(target.rows) > 0 {
		out = append(out, target)
	}

	hist := table{
		title: fmt.Sprintf("Latency distribution at %d goroutines, %s: share of the statements of all %d rounds; p99.9 and the goroutines' shares are medians over the rounds",
			top, label, rounds),
		head: histHead(),
	}
	hist.right = make([]bool, len(hist.head))
	for i := 1; i < len(hist.right); i++ {
		hist.right[i] = true
	}
	for _, t := range rows {
		if t.goroutines != top || t.hist.total == 0 {
			continue
		}
		row := []string{variantLabel(t.variant)}
		for _, n := range t.hist.n {
			row = append(row, share(n, t.hist.total))
		}
		lo := spreadOf(t.field(func(f roundFigures) float64 { return f.minShare })).med
		hi := spreadOf(t.field(func(f roundFigures) float64 { return f.maxShare })).med
		row = append(row, fmtDur(time.Duration(spreadOf(t.field(figP999)).med)), fmt.Sprintf("%.2f / %.2f", lo, hi))
		hist.rows = append(hist.rows, row)
	}
	if len(hist.rows) > 0 {
		out = append(out, hist)
	}

	pool := table{
		title: fmt.Sprintf("rwpool's pool of the replica during the measured runs, %s: median (min–max) over the rounds", label),
		head:  []string{"goroutines", "borrows", "borrows that waited", "time they waited in all", "dials", "open at the end"},
		right: []bool{true, true, true, true, true, true},
	}
	for _, t := range rows {
		if t.variant != "rwpool" || len(t.pool) == 0 {
			continue
		}
		var served, waits, waited, dials, open []float64
		maxOpen := 0
		for _, p := range t.pool {
			served = append(served, float64(p.served))
			waits = append(waits, float64(p.waitCount))
			waited = append(waited, float64(p.waitDuration))
			dials = append(dials, float64(p.dials))
			open = append(open, float64(p.open))
			maxOpen = p.max
		}
		pool.rows = append(pool.rows, []string{fmt.Sprint(t.goroutines), spreadOf(served).count(), spreadOf(waits).count(),
			spreadOf(waited).dur(), spreadOf(dials).count(), spreadOf(open).count() + fmt.Sprintf(" of %d", maxOpen)})
	}
	if len(pool.rows) > 0 {
		out = append(out, pool)
	}
	return out
}

func verdictWithin(ok bool) string {
	if ok {
		return "within"
	}
	return "SLOWER than the noise floor"
}

// variantLabel is variant v's name in the tables.
func variantLabel(v string) string {
	if v == "bare-again" {
		return "bare (again)"
	}
	return v
}

// shimCostFile is the benchstat record of the shim's own cost per
// statement over a no-op driver, which leads the throughput section: it
// is the figure this machine resolves, the end-to-end ones are not.
const shimCostFile = "06-shim-cost.md"

// loadShimCost reads benchstat/06-shim-cost.md of the repository at root;
// "" when it is missing.
func loadShimCost(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "benchstat", shimCostFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// shimCostIntro and endToEndIntro frame the shim's cost, which leads the
// throughput section, and the end-to-end figures after it.
const (
	shimCostIntro = "What this machine resolves comes first: the shim's own cost per\n" +
		"statement, measured over a no-op driver with the Go benchmarks of the\n" +
		"root package and compared with benchstat (benchstat/" + shimCostFile + ").\n\n"
	endToEndIntro = "End to end, on the real clusters, the client, the servers and any\n" +
		"other job share the machine's two cores: identical rounds differ by\n" +
		"more than the shim costs. The tables below show every figure's spread\n" +
		"over the rounds and the noise floor measured the same way (bare against\n" +
		"bare), so that a difference can be told from noise. The latency\n" +
		"distribution and rwpool's pool waits at the highest concurrency follow:\n" +
		"they answered why rwpool's p99 on MariaDB at 64 goroutines was up to\n" +
		"twice the bare driver's (benchstat/05-background-reads-unwatched.md,\n" +
		"under Speed-ups).\n\n"
)
