package main

import (
	"fmt"
	"strings"
	"time"
)

// benchReport is everything one bench run measured.
type benchReport struct {
	opts       benchOpts
	started    time.Time
	elapsed    time.Duration
	machine    [][2]string // label, value
	throughput []throughputRow
	faults     []faultRow
	failovers  []failoverRow
	patroni    []failoverRow // the Patroni scenarios (bench_patroni.go)
	raw        []rawRow      // read after write across processes
	memory     memoryResult
	changes    []string // measured speed-ups (benchstat/*.md of the repository), verbatim
	shimCost   string   // benchstat/06-shim-cost.md of the repository, verbatim

	// The charts, by file name (writeCharts), and their directory
	// relative to the Markdown file.
	charts    map[string]chart
	chartLink string
	proxyCfg  string // the proxies' configurations section (Markdown), "" without proxies
}

// table is one table of the report, rendered as text or Markdown.
type table struct {
	title string
	head  []string
	rows  [][]string
	right []bool // right-aligned columns (numbers)

	chart chartRef // drawn under the table in Markdown; none when its path is ""
}

// text renders t with aligned columns.
func (t table) text() string {
	w := make([]int, len(t.head))
	for _, r := range append([][]string{t.head}, t.rows...) {
		for i, c := range r {
			w[i] = max(w[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	if t.title != "" {
		b.WriteString(t.title + "\n")
	}
	line := func(r []string) {
		var l strings.Builder
		l.WriteString(" ")
		for i, c := range r {
			pad := strings.Repeat(" ", w[i]-len([]rune(c)))
			if i < len(t.right) && t.right[i] {
				l.WriteString(" " + pad + c)
			} else {
				l.WriteString(" " + c + pad)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	line(t.head)
	for _, r := range t.rows {
		line(r)
	}
	return b.String()
}

// markdown renders t as a Markdown table.
func (t table) markdown() string {
	var b strings.Builder
	if t.title != "" {
		b.WriteString("**" + t.title + "**\n\n")
	}
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	b.WriteString("|")
	for _, h := range t.head {
		b.WriteString(" " + esc(h) + " |")
	}
	b.WriteString("\n|")
	for i := range t.head {
		if i < len(t.right) && t.right[i] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		b.WriteString("|")
		for _, c := range r {
			b.WriteString(" " + esc(c) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString(t.chart.markdown())
	return b.String()
}

// driversOf returns the drivers of rows in order of appearance.
func driversOf[T any](rows []T, key func(T) (string, string)) (names, labels []string) {
	seen := map[string]bool{}
	for _, r := range rows {
		n, l := key(r)
		if !seen[n] {
			seen[n] = true
			names, labels = append(names, n), append(labels, l)
		}
	}
	return names, labels
}

// throughputTables are, per driver, the figures of every variant with
// their spread over the rounds, then the ratios to bare and the tables of
// noiseTables.
func (r *benchReport) throughputTables() []table {
	names, labels := driversOf(r.throughput, func(t throughputRow) (string, string) { return t.driver, t.label })
	var out []table
	for i, drv := range names {
		rounds := 0
		for _, t := range r.throughput {
			if t.driver == drv {
				rounds = max(rounds, t.rounds)
			}
		}
		main := table{
			title: fmt.Sprintf("SELECT 1 through %s: median (min–max) of %d rounds of %s", labels[i], rounds, r.opts.duration),
			head:  []string{"goroutines", "variant", "queries/s", "p50", "p99", "allocs/stmt", "errors"},
			right: []bool{true, false, true, true, true, true, true},
		}
		for _, t := range r.throughput {
			if t.driver != drv {
				continue
			}
			main.rows = append(main.rows, []string{fmt.Sprint(t.goroutines), variantLabel(t.variant),
				spreadOf(t.field(figQPS)).count(), spreadOf(t.field(figP50)).dur(), spreadOf(t.field(figP99)).dur(),
				fmt.Sprintf("%.1f", t.allocs), fmt.Sprint(t.errs)})
		}
		main.rows = append(main.rows, proxySkipRows(r.opts.variants, drv, len(main.head))...)
		out = append(out, main)
		out = append(out, r.noiseTables(drv, labels[i])...)
		if pt, ok := proxyRatioTable(r.throughput, drv, labels[i]); ok {
			out = append(out, pt)
		}
	}
	return out
}

func verdict(ok bool) string {
	if ok {
		return "meets target"
	}
	return "MISSES target"
}

// faultTables are, per driver and fault, each variant's outcome.
func (r *benchReport) faultTables() []table {
	var out []table
	var cur *table
	for _, f := range r.faults {
		sc, _ := faultScenarioNamed(f.fault)
		title := fmt.Sprintf("%s, %s read deadlines, %s", sc.title, sc.deadline(r.opts), f.label)
		if cur == nil || cur.title != title {
			out = append(out, table{title: title,
				head:  []string{"variant", "reads", "failed", ">1s", "longest", "p99", "normal again", "hedges/read", "first error"},
				right: []bool{false, true, true, true, true, true, false, true, false},
				chart: r.chartFor(faultChartName(f))})
			cur = &out[len(out)-1]
		}
		if f.skip != "" {
			cur.rows = append(cur.rows, []string{f.variant, "—", "—", "—", "—", f.skip})
			continue
		}
		note := shorten(f.firstErr, 90)
		if f.stuck > 0 {
			note = fmt.Sprintf("%d reads still stuck when the bench gave up on them; ", f.stuck) + note
		}
		hedges := f.hedgeText("")
		if hedges == "" {
			hedges = "—"
		}
		cur.rows = append(cur.rows, []string{f.variant, fmt.Sprint(f.requests), fmt.Sprint(f.failed), fmt.Sprint(f.hung),
			fmtDur(f.longest), fmtDur(f.p99), f.recoveryText(), hedges, note})
	}
	return out
}

// memoryTable shows the memory figures.
func (r *benchReport) memoryTable() table {
	m := r.memory
	kb := func(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }
	return table{
		title: fmt.Sprintf("memory (%s): heap + goroutine stacks after GC", m.driver),
		head:  []string{"what", "bytes each", "measured over"},
		right: []bool{false, true, false},
		rows: [][]string{
			{"open *sql.Conn, bare driver (one real connection each)", kb(m.bareConn), fmt.Sprintf("%d conns held open", m.conns)},
			{"open *sql.Conn, rwpool (virtual: nothing dialled)", kb(m.rwpoolConn), fmt.Sprintf("%d conns held open", m.conns)},
			{"open *sql.Conn, rwpool, after one SELECT 1 each", kb(m.rwpoolStmt), fmt.Sprintf("%d conns held open", m.conns)},
			{"node of a DSN (pool not dialled, health checker goroutine)", kb(m.perNode), fmt.Sprintf("1 vs %d replicas", 1+m.nodes)},
			{"  of which heap", kb(m.perNodeHeap), ""},
			{"  of which goroutine stack", kb(m.perNodeStack), ""},
		},
	}
}

// commandLine is the command that reproduces the run.
func (r *benchReport) commandLine() string {
	var b strings.Builder
	b.WriteString("go run ./cmd/rwpool bench")
	for _, a := range r.opts.args {
		if a == "" || strings.ContainsAny(a, " \t'\"$;&|<>()*?") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		b.WriteString(" " + a)
	}
	return b.String()
}

func (r *benchReport) settings() string {
	o := r.opts
	return fmt.Sprintf(`Workload: SELECT 1, scanned into an int, with context.Background(), from
%s goroutines; every variant is opened afresh for each measurement and
runs %s (after %s of unmeasured warm-up that fills its pools) per round.
%d rounds; the variants run interleaved, each round starting one
variant later than the one before; the first round's order:
%s.
Each figure is the median over the rounds with, in brackets, the lowest
and highest round. A ratio divides a variant's figure by bare's in the
same round; bare (again) is the bare driver measured a second time in
each round, so its ratios to bare are the noise floor: differences
within them are not differences.
allocs/stmt is runtime.MemStats.Mallocs over the run divided by the
statements, in-process, so it includes the driver's and database/sql's
allocations. Every pool keeps up to 64 idle connections.
`, joinInts(o.goroutines), o.duration, o.warmup, o.rounds, strings.Join(o.variants, ", "))
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func variantList(vs []string) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %-10s %s\n", v, variantDescription(v))
	}
	return b.String()
}

// text is the report printed at the end of a run.
func (r *benchReport) text() string {
	var b strings.Builder
	b.WriteString("=== rwpool bench\n\n")
	for _, kv := range r.machine {
		fmt.Fprintf(&b, "%-22s %s\n", kv[0]+":", kv[1])
	}
	fmt.Fprintf(&b, "%-22s %s\n%-22s %s\n\n", "command:", r.commandLine(), "run time:", r.elapsed.Round(time.Second))
	if !r.opts.noThroughput {
		b.WriteString(variantList(r.opts.variants) + "\n" + r.settings() + "\n")
		for _, t := range r.throughputTables() {
			b.WriteString(t.text() + "\n")
		}
	}
	if len(r.faults) > 0 {
		b.WriteString("=== faults\n\n" + faultDefinitions(r.opts) + "\n")
		for _, t := range r.faultTables() {
			b.WriteString(t.text() + "\n")
		}
	}
	if len(r.failovers) > 0 {
		b.WriteString("=== failover\n\n" + failoverDefinitions(r.opts) + "\n")
		for _, t := range r.failoverTables() {
			b.WriteString(t.text() + "\n")
		}
	}
	if len(r.patroni) > 0 {
		b.WriteString("=== under Patroni\n\n" + patroniDefinitions(r.opts) + "\n")
		for _, t := range r.patroniTables() {
			b.WriteString(t.text() + "\n")
		}
	}
	if len(r.raw) > 0 {
		b.WriteString(r.rawText())
	}
	if !r.opts.noMemory {
		b.WriteString(r.memoryTable().text())
	}
	return b.String()
}
