package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rwpool/rwpool/cmd/rwpool/internal/charts"
)

// The read-after-write scenario in the report: a table per engine and
// condition, and per engine two bar charts (the reads replicas served and
// the stale ones; the reader's p50 and p99), each variant a group with
// bars per condition.

// rawSection is the scenario's "## " section title in the Markdown report.
const rawSection = "Read after write across processes"

// rawDefinitions explain the scenario and its columns.
func rawDefinitions(o benchOpts) string {
	var b strings.Builder
	fmt.Fprintf(&b, `%d writer/reader pairs at once, each on a row of its own. The writer
process (a *sql.DB of its own) UPDATEs its row to a new value on the
primary and hands over what its way needs; %s later (uniformly random:
a redirect, a queued job) the reader process (another *sql.DB, another
Connector: nothing shared but what is handed over) reads the row and the
port of the server that answered. Every variant is opened once per
condition (long-running processes) and all of them run their pairs
together, unmeasured, for %s, rwpool's until its health checkers have
measured every replica's lag (a Connector younger than a few
check_intervals does not yet know that a replica is far behind). Then
%s, the variants interleaved, each round starting one variant
later, each variant measured alone for %s. Statements run with
context.Background().
`, o.rawGoroutines, rawGapText(o), o.rawWarmup, plural(o.rawRounds, "round"), o.rawDuration)
	b.WriteString("Conditions:\n")
	for _, c := range o.raw {
		switch c {
		case "normal":
			b.WriteString("  normal   the cluster as cluster.sh up makes it: streaming replication\n" +
				"           (PostgreSQL) and GTID replication (MariaDB) on 127.0.0.1\n")
		case "delayed":
			fmt.Fprintf(&b, "  delayed  replica1 applies what it receives %s late (cluster.sh\n"+
				"           delay-node: recovery_min_apply_delay, MASTER_DELAY); replica2\n"+
				"           at its normal pace. Undone (delay-node 0, wait-sync) afterwards.\n", o.rawDelay)
		}
	}
	b.WriteString("Variants:\n")
	for _, v := range o.rawVariants {
		fmt.Fprintf(&b, "  %-11s %s\n", v, wrapText(rawVariantDescription(v), 58, strings.Repeat(" ", 14)))
	}
	b.WriteString(`Columns (median over the rounds, with the lowest and highest round):
  on a replica  the share of the reads a replica served (the port that
                answered is not the primary's); the rest went to the
                primary
  stale reads   reads that returned an older value than the write they
                followed: the count over all rounds, then the share
  read p50/p99  the reader's read, with everything its way does for it
                (a position check on a replica, a wait, a fallback to
                the primary); the gap before it is not counted
  p99 − bare's  the read p99 minus bare's in the same round; bare
                (again) minus bare is the noise floor
  write p50     the writer's UPDATE and what its way does to hand over
                (rwpool: reading the write's position and SessionToken;
                gitlab: one more round trip for the primary's position)
  errors        failed writes and reads, over all rounds
`)
	return b.String()
}

// rawGapText is the gap between a write and its read under o.
func rawGapText(o benchOpts) string {
	if o.rawGapMin == o.rawGapMax {
		return o.rawGapMin.String()
	}
	return o.rawGapMin.String() + "–" + o.rawGapMax.String()
}

// wrapText wraps s at width columns, continuing lines with indent.
func wrapText(s string, width int, indent string) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		if i > 0 && n+1+len([]rune(w)) > width {
			b.WriteString("\n" + indent)
			n = 0
		} else if i > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len([]rune(w))
	}
	return b.String()
}

// fmtPct formats a percentage: 0%, 0.42%, 12.5%, 100%.
func fmtPct(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case x == 0 || x == 100:
		return fmt.Sprintf("%.0f%%", x)
	case x < 1:
		return fmt.Sprintf("%.2f%%", x)
	}
	return fmt.Sprintf("%.1f%%", x)
}

// fmtSignedDur formats a difference of durations: +1.20ms, -85µs.
func fmtSignedDur(d time.Duration) string {
	if d < 0 {
		return "-" + fmtDur(-d)
	}
	return "+" + fmtDur(d)
}

// pct formats a spread of percentages.
func (s spread) pct() string { return s.format(fmtPct) }

// signedDur formats a spread of differences of durations.
func (s spread) signedDur() string {
	return s.format(func(x float64) string { return fmtSignedDur(time.Duration(x)) })
}

// rawFields of a round, for rawRow.field.
func rawP50(f rawRound) float64      { return float64(f.p50) }
func rawP99(f rawRound) float64      { return float64(f.p99) }
func rawWriteP50(f rawRound) float64 { return float64(f.writeP50) }

// rawP99Diffs are t's read p99 minus base's, round by round.
func rawP99Diffs(t, base rawRow) []float64 {
	var out []float64
	for i := range min(len(t.rounds), len(base.rounds)) {
		out = append(out, float64(t.rounds[i].p99-base.rounds[i].p99))
	}
	return out
}

// rawKey is an engine and a condition: one table.
type rawKey struct{ driver, condition string }

// rawTitle is the table of rows like t.
func (r *benchReport) rawTitle(t rawRow) string {
	return fmt.Sprintf("Read after write across processes, %s, %s: median (min–max) of %s of %s",
		rawConditionTitle(r.opts, t.condition), t.label, plural(len(t.rounds), "round"), r.opts.rawDuration)
}

// rawTables are the scenario's tables, per engine and condition, in the
// order measured.
func (r *benchReport) rawTables() []table {
	var out []table
	var keys []rawKey
	for _, t := range r.raw {
		if k := (rawKey{t.driver, t.condition}); len(keys) == 0 || keys[len(keys)-1] != k {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		var rows []rawRow
		for _, t := range r.raw {
			if (rawKey{t.driver, t.condition}) == k {
				rows = append(rows, t)
			}
		}
		tb := table{title: r.rawTitle(rows[0]),
			head: []string{"variant", "reads", "on a replica", "stale reads", "stale", "read p50", "read p99",
				"p99 − bare's", "write p50", "errors", "first error"},
			right: []bool{false, true, true, true, true, true, true, true, true, true, false}}
		var bare *rawRow
		for i := range rows {
			if rows[i].variant == "bare" {
				bare = &rows[i]
			}
		}
		for _, t := range rows {
			diff := "—"
			if bare != nil && t.variant != "bare" {
				diff = spreadOf(rawP99Diffs(t, *bare)).signedDur()
			}
			tb.rows = append(tb.rows, []string{variantLabel(t.variant), fmt.Sprint(t.total(func(f rawRound) int { return f.reads })),
				spreadOf(t.field(rawRound.replicaShare)).pct(), fmt.Sprint(t.total(func(f rawRound) int { return f.stale })),
				spreadOf(t.field(rawRound.staleShare)).pct(), spreadOf(t.field(rawP50)).dur(), spreadOf(t.field(rawP99)).dur(),
				diff, spreadOf(t.field(rawWriteP50)).dur(), fmt.Sprint(t.total(func(f rawRound) int { return f.errs })),
				shorten(t.firstErr, 90)})
		}
		out = append(out, tb)
	}
	return out
}

// rawChartName is the file of a chart of the scenario ("share" or "latency")
// for driver.
func rawChartName(what, driver string) string {
	return "read-after-write-" + what + "-" + driver + ".svg"
}

// Bar colours of the two conditions: blue and vermilion at the normal
// pace, their lighter kin (sky blue, orange) with replica1 delayed
// (Okabe-Ito).
var rawColors = map[string][2]string{
	"normal":  {"#0072B2", "#D55E00"},
	"delayed": {"#56B4E9", "#E69F00"},
}

// Bar colours of the latency chart: p50 dark, p99 light; blue at the
// normal pace, vermilion and orange with replica1 delayed (Okabe-Ito).
var rawLatencyColors = map[string][2]string{
	"normal":  {"#0072B2", "#56B4E9"},
	"delayed": {"#D55E00", "#E69F00"},
}

// plural is n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// rawShortCondition names condition c in a chart's legend.
func rawShortCondition(o benchOpts, c string) string {
	if c == "delayed" {
		return "replica1 " + o.rawDelay.String() + " late"
	}
	return "normal pace"
}

// rawCharts draws, per engine, the share of the reads replicas served and
// of the stale ones, and the reader's p50 and p99, of every variant under
// every condition (medians over the rounds).
func (r *benchReport) rawCharts() map[string]chart {
	out := map[string]chart{}
	names, labels := driversOf(r.raw, func(t rawRow) (string, string) { return t.driver, t.label })
	for i, drv := range names {
		var variants, conds []string
		val := map[[2]string]rawRow{} // by variant and condition
		rounds := 0
		for _, t := range r.raw {
			if t.driver != drv {
				continue
			}
			if !slices.Contains(variants, t.variant) {
				variants = append(variants, t.variant)
			}
			if !slices.Contains(conds, t.condition) {
				conds = append(conds, t.condition)
			}
			val[[2]string{t.variant, t.condition}] = t
			rounds = max(rounds, len(t.rounds))
		}
		groups := make([]string, len(variants))
		for j, v := range variants {
			groups[j] = variantLabel(v)
		}
		of := fmt.Sprintf(" (median of %s)", plural(rounds, "round"))
		shares := charts.Bars{Title: "Read after write across processes, " + labels[i] + ": reads served by a replica, stale reads" + of,
			XLabel: "variant", YLabel: "% of the reads after a write", Groups: groups, Format: fmtPct}
		lat := charts.Bars{Title: "Read after write across processes, " + labels[i] + ": the reader's p50 and p99" + of,
			XLabel: "variant", YLabel: "read latency (ms)", Groups: groups, Format: func(v float64) string { return fmt.Sprintf("%.2f", v) }}
		for _, c := range conds {
			col := rawColors[c]
			rep := charts.BarSeries{Name: "on a replica, " + rawShortCondition(r.opts, c), Color: col[0]}
			stale := charts.BarSeries{Name: "stale, " + rawShortCondition(r.opts, c), Color: col[1]}
			lcol := rawLatencyColors[c]
			p50 := charts.BarSeries{Name: "p50, " + rawShortCondition(r.opts, c), Color: lcol[0]}
			p99 := charts.BarSeries{Name: "p99, " + rawShortCondition(r.opts, c), Color: lcol[1]}
			for _, v := range variants {
				t, ok := val[[2]string{v, c}]
				if !ok || len(t.rounds) == 0 {
					nan := math.NaN()
					rep.Values, stale.Values = append(rep.Values, nan), append(stale.Values, nan)
					p50.Values, p99.Values = append(p50.Values, nan), append(p99.Values, nan)
					continue
				}
				rep.Values = append(rep.Values, median(t.field(rawRound.replicaShare)))
				stale.Values = append(stale.Values, median(t.field(rawRound.staleShare)))
				p50.Values = append(p50.Values, median(t.field(rawP50))/float64(time.Millisecond))
				p99.Values = append(p99.Values, median(t.field(rawP99))/float64(time.Millisecond))
			}
			shares.Series = append(shares.Series, rep, stale)
			lat.Series = append(lat.Series, p50, p99)
		}
		out[rawChartName("share", drv)] = chart{shares.Title, shares.SVG()}
		out[rawChartName("latency", drv)] = chart{lat.Title, lat.SVG()}
	}
	return out
}

// rawText is the scenario's part of the text report.
func (r *benchReport) rawText() string {
	var b strings.Builder
	b.WriteString("=== read after write across processes\n\n" + rawDefinitions(r.opts) + "\n")
	for _, t := range r.rawTables() {
		b.WriteString(t.text() + "\n")
	}
	return b.String()
}

// rawMarkdown is the scenario's section of the Markdown report: its own
// date and command (--splice may put it into a file generated by another
// run), the definitions, then per engine its tables and charts.
func (r *benchReport) rawMarkdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\nMeasured on %s, in %s, with:\n\n    %s\n\n"+
		"To measure only this section again and put it into this file, keeping the others:\n\n"+
		"    go run ./cmd/rwpool bench --no-throughput --faults none --failovers none --no-memory --markdown BENCHMARKS.md --splice\n\n"+
		"```\n%s```\n\n",
		rawSection, r.started.UTC().Format("2006-01-02 15:04 UTC"), r.elapsed.Round(time.Second), r.commandLine(), rawDefinitions(r.opts))
	tables, tableDrivers := r.rawTables(), r.rawTableDrivers()
	names, _ := driversOf(r.raw, func(t rawRow) (string, string) { return t.driver, t.label })
	for _, drv := range names {
		for i, t := range tables {
			if tableDrivers[i] == drv {
				b.WriteString(t.markdown() + "\n")
			}
		}
		for _, what := range []string{"share", "latency"} {
			if c := r.chartFor(rawChartName(what, drv)).markdown(); c != "" {
				b.WriteString(strings.TrimPrefix(c, "\n") + "\n")
			}
		}
	}
	return b.String()
}

// rawTableDrivers is the engine of each of rawTables' tables.
func (r *benchReport) rawTableDrivers() []string {
	var out []string
	var last rawKey
	for i, t := range r.raw {
		if k := (rawKey{t.driver, t.condition}); i == 0 || k != last {
			out = append(out, t.driver)
			last = k
		}
	}
	return out
}
