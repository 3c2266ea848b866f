package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rwpool/rwpool/cmd/rwpool/internal/charts"
)

// The charts of the Markdown report: throughput and p99 bars per driver,
// and for every fault and failover scenario a timeline per variant of the
// operations that succeeded and failed, per 100 ms, with the fault marked.
// They are SVG files in a directory next to the Markdown file, linked from
// it by a relative path.

// chartBucket is the width of a timeline's steps.
const chartBucket = 100 * time.Millisecond

// chartRef is a chart of the Markdown report: its alt text and its path
// relative to the Markdown file.
type chartRef struct{ alt, path string }

// markdown is the image line of the chart, or "" for none.
func (c chartRef) markdown() string {
	if c.path == "" {
		return ""
	}
	return "\n![" + strings.NewReplacer("[", "(", "]", ")").Replace(c.alt) + "](" + c.path + ")\n"
}

// chart is one drawn chart, before it is written.
type chart struct {
	alt string
	svg []byte
}

// chartFor is the reference to the chart file name, if the report drew it.
func (r *benchReport) chartFor(name string) chartRef {
	c, ok := r.charts[name]
	if !ok {
		return chartRef{}
	}
	return chartRef{alt: c.alt, path: pathJoinSlash(r.chartLink, name)}
}

func pathJoinSlash(dir, name string) string {
	if dir == "" || dir == "." {
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}

// chartsDir is where the charts of a report written to md go: dir, or a
// directory "benchmarks" next to md.
func chartsDir(md, dir string) string {
	if dir != "" {
		return dir
	}
	return filepath.Join(filepath.Dir(md), "benchmarks")
}

// writeCharts draws the report's charts, writes them into dir (created if
// needed) and remembers them for the Markdown report written to md, which
// links them by their path relative to md's directory. It returns the
// files written, in name order.
func (r *benchReport) writeCharts(md, dir string) ([]string, error) {
	link, err := filepath.Rel(filepath.Dir(md), dir)
	if err != nil {
		if link, err = filepath.Abs(dir); err != nil {
			return nil, err
		}
	}
	r.chartLink = filepath.ToSlash(link)
	r.charts = r.drawCharts()
	if len(r.charts) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("charts: %w", err)
	}
	var files []string
	for name, c := range r.charts {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, c.svg, 0o644); err != nil {
			return files, fmt.Errorf("charts: %w", err)
		}
		files = append(files, f)
	}
	sort.Strings(files)
	return files, nil
}

// drawCharts draws every chart the report's measurements give, by file
// name.
func (r *benchReport) drawCharts() map[string]chart {
	out := map[string]chart{}
	names, labels := driversOf(r.throughput, func(t throughputRow) (string, string) { return t.driver, t.label })
	for i, drv := range names {
		tp, p99 := r.throughputBars(drv, labels[i])
		out[throughputChartName("throughput", drv)] = chart{tp.Title, tp.SVG()}
		out[throughputChartName("p99", drv)] = chart{p99.Title, p99.SVG()}
	}
	for _, g := range groupBy(r.faults, faultChartName) {
		out[g.name] = faultChart(r.opts, g.rows)
	}
	for _, g := range groupBy(r.failovers, failoverChartName) {
		out[g.name] = failoverChart(g.rows)
	}
	for _, g := range groupBy(r.patroni, failoverChartName) {
		var rows []failoverRow
		for _, f := range g.rows {
			if f.skip == "" {
				rows = append(rows, f)
			}
		}
		if len(rows) > 0 {
			out[g.name] = failoverChart(rows)
		}
	}
	for name, c := range r.rawCharts() {
		out[name] = c
	}
	return out
}

// throughputChartName is the file of a throughput chart ("throughput" or
// "p99") of driver.
func throughputChartName(what, driver string) string { return what + "-" + driver + ".svg" }

// faultChartName is the file of the timelines of f's scenario and driver.
func faultChartName(f faultRow) string { return "fault-" + f.fault + "-" + f.driver + ".svg" }

// failoverChartName is the file of the timelines of f's scenario and driver.
func failoverChartName(f failoverRow) string {
	return "failover-" + f.scenario + "-" + f.driver + ".svg"
}

// throughputCharts are the image lines of the throughput charts of every
// driver.
func (r *benchReport) throughputCharts() string {
	var b strings.Builder
	names, _ := driversOf(r.throughput, func(t throughputRow) (string, string) { return t.driver, t.label })
	for _, drv := range names {
		b.WriteString(r.chartFor(throughputChartName("throughput", drv)).markdown())
		b.WriteString(r.chartFor(throughputChartName("p99", drv)).markdown())
	}
	return b.String()
}

// throughputBars are the throughput and p99 of every variant of driver, by
// concurrency.
func (r *benchReport) throughputBars(driver, label string) (tp, p99 charts.Bars) {
	var levels []int
	var variants []string
	val := map[string]map[int]throughputRow{}
	for _, t := range r.throughput {
		if t.driver != driver {
			continue
		}
		if !slices.Contains(levels, t.goroutines) {
			levels = append(levels, t.goroutines)
		}
		if val[t.variant] == nil {
			variants = append(variants, t.variant)
			val[t.variant] = map[int]throughputRow{}
		}
		val[t.variant][t.goroutines] = t
	}
	slices.Sort(levels)
	groups := make([]string, len(levels))
	for i, g := range levels {
		groups[i] = fmt.Sprint(g)
	}
	tp = charts.Bars{Title: "SELECT 1 through " + label + ": queries/s", XLabel: "goroutines", YLabel: "queries/s",
		Groups: groups, Format: func(v float64) string { return fmt.Sprintf("%.0f", v) }}
	p99 = charts.Bars{Title: "SELECT 1 through " + label + ": p99 latency", XLabel: "goroutines", YLabel: "p99 (ms)",
		Groups: groups, Format: func(v float64) string { return fmt.Sprintf("%.2f", v) }}
	for _, v := range variants {
		q, p := charts.BarSeries{Name: v}, charts.BarSeries{Name: v}
		for _, g := range levels {
			t, ok := val[v][g]
			if !ok {
				q.Values, p.Values = append(q.Values, math.NaN()), append(p.Values, math.NaN())
				continue
			}
			q.Values = append(q.Values, t.qps)
			p.Values = append(p.Values, float64(t.p99)/float64(time.Millisecond))
		}
		tp.Series, p99.Series = append(tp.Series, q), append(p99.Series, p)
	}
	return tp, p99
}

// rowGroup is the rows of one chart file, in report order.
type rowGroup[T any] struct {
	name string
	rows []T
}

// groupBy groups rows by the chart file name gives them, in order of
// first appearance.
func groupBy[T any](rows []T, name func(T) string) []rowGroup[T] {
	var out []rowGroup[T]
	for _, r := range rows {
		n := name(r)
		i := slices.IndexFunc(out, func(g rowGroup[T]) bool { return g.name == n })
		if i < 0 {
			out = append(out, rowGroup[T]{name: n})
			i = len(out) - 1
		}
		out[i].rows = append(out[i].rows, r)
	}
	return out
}

// perBucket counts the samples that ended in each chartBucket of [0,
// until), the successful and the failed ones apart.
func perBucket(ss []sample, until time.Duration) (ok, failed []charts.Point) {
	n := int((until + chartBucket - 1) / chartBucket)
	okN, badN := make([]float64, n), make([]float64, n)
	for _, s := range ss {
		if s.end < 0 || s.end >= until {
			continue
		}
		i := int(s.end / chartBucket)
		if s.failed {
			badN[i]++
		} else {
			okN[i]++
		}
	}
	for i := range n {
		x := (time.Duration(i) * chartBucket).Seconds()
		ok = append(ok, charts.Point{X: x, Y: okN[i]})
		failed = append(failed, charts.Point{X: x, Y: badN[i]})
	}
	return ok, failed
}

// Timeline colours: successes blue and green, failures vermilion and
// reddish purple (Okabe-Ito).
const (
	colorReadsOK      = "#0072B2"
	colorReadsFailed  = "#D55E00"
	colorWritesOK     = "#009E73"
	colorWritesFailed = "#CC79A7"
)

// faultLabels are the marker labels of a fault and its undo.
var faultLabels = map[string][2]string{
	"kill": {"replica1 killed", "started again"},
	"hang": {"replica1 hung", "resumed"},
	"slow": {"replica1 +200ms", "delay off"},
}

// faultChart stacks one timeline per variant of rows (one scenario, one
// driver): reads that succeeded and failed per 100 ms, the fault shaded
// from its injection to its undo.
func faultChart(o benchOpts, rows []faultRow) chart {
	sc, _ := faultScenarioNamed(rows[0].fault)
	title := fmt.Sprintf("%s, %s read deadlines, %s", sc.title, sc.deadline(o), rows[0].label)
	var until time.Duration
	for _, f := range rows {
		until = max(until, f.undoAt+500*time.Millisecond)
	}
	var panels []charts.Timeline
	for _, f := range rows {
		ok, failed := perBucket(f.samples, until)
		lbl := faultLabels[sc.op]
		summary := fmt.Sprintf("%d of %d reads failed, longest %s, p99 %s", f.failed, f.requests, fmtDur(f.longest), fmtDur(f.p99))
		panels = append(panels, charts.Timeline{
			Title: f.variant + ": " + summary, XLabel: "seconds since the load began", YLabel: "reads per 100 ms",
			Height: 220, Step: true, XMin: 0, XMax: until.Seconds(),
			Series: []charts.Series{{Name: "reads ok", Color: colorReadsOK, Points: ok},
				{Name: "reads failed", Color: colorReadsFailed, Points: failed}},
			Markers: []charts.Marker{{X: f.faultAt.Seconds(), Label: lbl[0]}, {X: f.undoAt.Seconds(), Label: lbl[1]}},
			Spans:   []charts.Span{{From: f.faultAt.Seconds(), To: f.undoAt.Seconds(), Label: "fault"}},
		})
	}
	return chart{alt: title + ": reads per 100 ms, per variant", svg: stackTimelines(title, panels)}
}

// failoverChart stacks one timeline per variant of rows (one scenario, one
// driver): writes and reads that succeeded and failed per 100 ms, from the
// fault command to the endpoint's move shaded.
func failoverChart(rows []failoverRow) chart {
	title := rows[0].scenario + ", " + rows[0].label
	for _, s := range failoverScenarios {
		if s.name == rows[0].scenario {
			title = s.title + ", " + rows[0].label
		}
	}
	for _, s := range patroniScenarios {
		if "patroni-"+s.name == rows[0].scenario {
			title = s.title
		}
	}
	var until time.Duration
	for _, f := range rows {
		until = max(until, f.stopAt+500*time.Millisecond)
	}
	var panels []charts.Timeline
	for _, f := range rows {
		wok, wfail := perBucket(f.writeSamples, until)
		rok, rfail := perBucket(f.readSamples, until)
		cmd, moved := f.faultAt-f.faultCmd, f.faultAt+f.moved
		what, move := "primary killed", "replica1 promoted, endpoint moved"
		if strings.Contains(f.variant, "follow_promotion=on") {
			move = "replica1 promoted" // no endpoint: rwpool follows the roles
		}
		if f.scenario == "switchover" {
			what = "primary read-only"
		}
		gap := "no writable primary"
		if f.faultLabel != "" {
			what, move, gap = f.faultLabel, f.moveLabel, f.gapLabel
		}
		summary := fmt.Sprintf("%d of %d writes failed, %d of %d reads failed, writes normal again %s",
			f.failedWrites, f.writes, f.failedReads, f.reads, f.normalText())
		panels = append(panels, charts.Timeline{
			Title: f.variant + ": " + summary, XLabel: "seconds since the load began", YLabel: "operations per 100 ms",
			Height: 220, Step: true, XMin: 0, XMax: until.Seconds(),
			Series: []charts.Series{{Name: "writes ok", Color: colorWritesOK, Points: wok},
				{Name: "writes failed", Color: colorWritesFailed, Points: wfail},
				{Name: "reads ok", Color: colorReadsOK, Points: rok},
				{Name: "reads failed", Color: colorReadsFailed, Points: rfail}},
			Markers: []charts.Marker{{X: cmd.Seconds(), Label: what}, {X: moved.Seconds(), Label: move}},
			Spans:   []charts.Span{{From: cmd.Seconds(), To: moved.Seconds(), Label: gap}},
		})
	}
	return chart{alt: title + ": writes and reads per 100 ms, per variant", svg: stackTimelines(title, panels)}
}

// stackTimelines draws the panels one under the other, under a title, on
// one y scale so that the variants compare at a glance.
func stackTimelines(title string, panels []charts.Timeline) []byte {
	ymax := 0.0
	for _, p := range panels {
		for _, s := range p.Series {
			for _, pt := range s.Points {
				ymax = math.Max(ymax, pt.Y)
			}
		}
	}
	const width, head = 900, 30
	var parts [][]byte
	height := head
	for i := range panels {
		panels[i].Width, panels[i].YMax = width, math.Max(ymax, 1)
		parts = append(parts, panels[i].SVG())
		height += panels[i].Height
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" font-family="sans-serif">`,
		width, height, width, height)
	b.WriteString("<title>" + xmlText(title) + "</title>")
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`, width, height)
	fmt.Fprintf(&b, `<text class="title" x="%d" y="20" text-anchor="middle" font-size="15" font-weight="bold">%s</text>`, width/2, xmlText(title))
	y := head
	for i, p := range parts {
		fmt.Fprintf(&b, `<g class="panel" transform="translate(0,%d)">`, y)
		b.Write(p)
		b.WriteString("</g>")
		y += panels[i].Height
	}
	b.WriteString("</svg>")
	return b.Bytes()
}

// xmlText escapes s for XML text and attribute values.
func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}
