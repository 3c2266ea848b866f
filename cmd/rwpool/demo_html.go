package main

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/cmd/rwpool/internal/charts"
	"github.com/rwpool/rwpool/dsn"
)

// htmlReport is what `rwpool demo --report` shows. It is built from a run
// (demo.htmlReport) or, in tests, from synthetic data; renderHTML draws it.
type htmlReport struct {
	Title      string
	Setup      string // what ran against what
	Generated  time.Time
	Ran        time.Duration
	Goroutines int
	Mix        float64
	DSN        string // redacted
	Every      time.Duration
	Nodes      []string // in the DSN's order
	Steps      []stepRecord
	Faults     []reportFault
	Events     []rwpool.Event // node transitions, At relative to Start
	Start      time.Time
	Samples    []tlSample
	Summary    string // the text summary the demo prints
}

// reportFault is one injected fault, relative to the workload's start.
type reportFault struct {
	Node, Kind string
	From, To   time.Duration
	Restored   bool
}

// htmlReport collects the report of the run that ended at end.
func (d *demo) htmlReport(end time.Time, summary string) htmlReport {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := htmlReport{
		Title:      "rwpool demo",
		Generated:  end,
		Ran:        end.Sub(d.start),
		Goroutines: d.o.goroutines,
		Mix:        d.o.mix,
		Every:      d.tl.every,
		Steps:      slices.Clone(d.steps),
		Events:     slices.Clone(d.events),
		Start:      d.start,
		Samples:    d.tl.snapshot(),
		Summary:    summary,
	}
	if d.cluster != nil {
		r.Setup = "embedded primary and two replicas (go-mysql-server), each behind a fault-injecting proxy"
		if cfg, err := dsn.Parse(d.embeddedDSN()); err == nil {
			r.DSN = cfg.String()
		}
	} else {
		r.Setup = d.cfg.Driver + " cluster (no fault injection)"
		r.DSN = d.cfg.String()
	}
	for _, n := range d.lastSnap.Nodes {
		r.Nodes = append(r.Nodes, n.Name)
	}
	for _, f := range d.faults {
		rf := reportFault{Node: f.node, Kind: f.kind, From: f.from.Sub(d.start), To: r.Ran}
		if !f.to.IsZero() {
			rf.To, rf.Restored = f.to.Sub(d.start), true
		}
		r.Faults = append(r.Faults, rf)
	}
	return r
}

// reportChart is one chart of the report.
type reportChart struct {
	Title, Caption string
	SVG            template.HTML
}

// charts draws the report's charts.
func (r htmlReport) charts() []reportChart {
	const width = 1100
	secs := func(d time.Duration) float64 { return d.Seconds() }
	xmax := secs(r.Ran)
	var markers []charts.Marker
	for _, s := range r.Steps {
		if s.at < r.Every { // the initial state, not an injected fault
			continue
		}
		label := s.title
		if s.err != nil {
			label += " (FAILED)"
		}
		markers = append(markers, charts.Marker{X: secs(s.at), Label: label})
	}
	var spans []charts.Span
	for _, f := range r.Faults {
		spans = append(spans, charts.Span{From: secs(f.From), To: secs(f.To), Label: f.Node + " " + f.Kind})
	}

	// Each sample covers the time since the previous one.
	starts := make([]float64, len(r.Samples))
	for i := range r.Samples {
		if i > 0 {
			starts[i] = secs(r.Samples[i-1].at)
		}
	}
	perSec := func(i int, n int64) float64 {
		d := secs(r.Samples[i].at) - starts[i]
		if d <= 0 {
			return math.NaN()
		}
		return float64(n) / d
	}
	ops := []charts.Series{{Name: "reads ok", Color: "#0072B2"}, {Name: "reads failed", Color: "#D55E00"},
		{Name: "writes ok", Color: "#009E73"}, {Name: "writes failed", Color: "#CC79A7"}}
	for i, s := range r.Samples {
		for j, n := range []int64{s.ops.readsOK, s.ops.readsFailed, s.ops.writesOK, s.ops.writesFailed} {
			ops[j].Points = append(ops[j].Points, charts.Point{X: starts[i], Y: perSec(i, n)})
		}
	}

	nodeIdx := map[string]int{}
	var share, p99 []charts.Series
	for i, n := range r.Nodes {
		nodeIdx[n] = i
		share = append(share, charts.Series{Name: n, Color: charts.Color(i)})
		p99 = append(p99, charts.Series{Name: n, Color: charts.Color(i)})
	}
	for i, s := range r.Samples {
		var total int64
		for _, n := range s.nodes {
			total += n.served
		}
		for _, n := range s.nodes {
			j, ok := nodeIdx[n.name]
			if !ok {
				continue
			}
			y := math.NaN()
			if total > 0 {
				y = 100 * float64(n.served) / float64(total)
			}
			share[j].Points = append(share[j].Points, charts.Point{X: starts[i], Y: y})
			y = math.NaN()
			if n.p99 >= 0 {
				y = float64(n.p99) / float64(time.Millisecond)
			}
			p99[j].Points = append(p99[j].Points, charts.Point{X: starts[i], Y: y})
		}
	}

	// charts escapes every text it writes.
	svg := func(b []byte) template.HTML { return template.HTML(b) }
	every := r.Every.String()
	marked, hover := "", ""
	if len(markers)+len(spans) > 0 {
		marked = " Dashed lines: the scenario's steps; shaded: each injected fault until its node was restored."
		hover = marked + " Hover one for its step or fault."
	}
	out := []reportChart{
		{"Operations", "Operations per second that succeeded and failed (final outcomes; an attempt the workload ran again after its timeout is not one), per " + every + "." + marked,
			svg(charts.Timeline{Title: "Operations per second", XLabel: "seconds since the workload started", YLabel: "operations/s",
				Width: width, Step: true, Series: ops, Markers: markers, Spans: spans, XMin: 0, XMax: xmax}.SVG())},
		{"Share of traffic per node", "Each node's share of the statements rwpool gave a connection for, per " + every + " (from rwpool.Stats: Served)." + marked,
			svg(charts.Timeline{Title: "Share of statements per node", XLabel: "seconds since the workload started", YLabel: "% of statements",
				Width: width, Step: true, Series: share, Markers: markers, Spans: spans, XMin: 0, XMax: xmax, YMax: 100}.SVG())},
		{"p99 latency per node", "99th percentile latency of the workload's attempts on each node, per " + every + ", on a logarithmic scale; a gap: no attempt on that node in the interval." + marked,
			svg(charts.Timeline{Title: "p99 latency per node", XLabel: "seconds since the workload started", YLabel: "p99 (ms, log scale)",
				Width: width, Step: true, LogY: true, Series: p99, Markers: markers, Spans: spans, XMin: 0, XMax: xmax}.SVG())},
		{"State per node", "Each node's state as rwpool saw it (its events: available, unavailable, lagging)." + hover,
			svg(charts.States{Title: "Node state", XLabel: "seconds since the workload started", Width: width,
				Rows: r.stateRows(), Markers: markers, Spans: spans, XMin: 0, XMax: xmax}.SVG())},
	}
	return out
}

// stateRows turns the nodes' events into state spans; a node without
// events keeps the state of its first sample (available if none).
func (r htmlReport) stateRows() []charts.StateRow {
	end := r.Ran.Seconds()
	var rows []charts.StateRow
	for _, node := range r.Nodes {
		state := "available"
		for _, s := range r.Samples {
			if i := slices.IndexFunc(s.nodes, func(n tlNode) bool { return n.name == node }); i >= 0 {
				state = s.nodes[i].state
				break
			}
		}
		var changes []rwpool.Event
		for _, e := range r.Events {
			if e.Node == node && e.Kind != rwpool.RoleChanged {
				changes = append(changes, e)
			}
		}
		slices.SortStableFunc(changes, func(a, b rwpool.Event) int { return a.At.Compare(b.At) })
		if len(changes) > 0 {
			state = changes[0].From.String()
		}
		row := charts.StateRow{Name: node}
		from := 0.0
		for _, e := range changes {
			at := math.Max(e.At.Sub(r.Start).Seconds(), 0)
			if at > from {
				row.Spans = append(row.Spans, charts.StateSpan{From: from, To: at, State: state})
			}
			from, state = at, e.To.String()
		}
		row.Spans = append(row.Spans, charts.StateSpan{From: from, To: math.Max(end, from), State: state})
		rows = append(rows, row)
	}
	return rows
}

// renderHTML writes the report as one self-contained HTML document: inline
// CSS and SVG, no script, nothing fetched. Its markup is also well-formed
// XML (every element closed), which its tests check strictly.
func renderHTML(w io.Writer, r htmlReport) error {
	type step struct{ At, Title, Err string }
	type fault struct{ Node, Kind, From, To string }
	data := struct {
		htmlReport
		Charts          []reportChart
		StepRows        []step
		FaultRows       []fault
		Ran, Mix, Every string
		Generated       string
	}{htmlReport: r, Charts: r.charts(), Ran: fmtSecs(r.Ran), Mix: fmt.Sprintf("%.0f%%", 100*r.Mix),
		Every: r.Every.String(), Generated: r.Generated.UTC().Format(time.RFC3339)}
	for _, s := range r.Steps {
		row := step{At: fmtSecs(s.at), Title: s.title}
		if s.err != nil {
			row.Err = oneLine(s.err.Error())
		}
		data.StepRows = append(data.StepRows, row)
	}
	for _, f := range r.Faults {
		row := fault{Node: f.Node, Kind: f.Kind, From: fmtSecs(f.From), To: "not restored"}
		if f.Restored {
			row.To = fmtSecs(f.To)
		}
		data.FaultRows = append(data.FaultRows, row)
	}
	return reportTemplate.Execute(w, data)
}

// reportTemplate is parsed once; it is never changed after.
var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{{.Title}}: {{.Ran}}, {{.Goroutines}} goroutines</title>
<style>
body { font-family: sans-serif; margin: 24px auto; max-width: 1140px; color: #222222; background: #ffffff; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin: 28px 0 6px 0; border-bottom: 1px solid #dddddd; padding-bottom: 3px; }
p.caption { font-size: 13px; color: #555555; margin: 2px 0 6px 0; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #dddddd; padding: 3px 8px; text-align: left; }
th { background: #f4f4f4; }
.failed { color: #b00000; }
figure { margin: 0; }
svg { max-width: 100%; height: auto; }
pre { background: #f7f7f7; border: 1px solid #e2e2e2; padding: 10px; font-size: 12px; overflow-x: auto; white-space: pre-wrap; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; font-size: 13px; }
dl.meta dt { color: #555555; }
dl.meta dd { margin: 0; word-break: break-all; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<dl class="meta">
<dt>setup</dt><dd>{{.Setup}}</dd>
<dt>DSN</dt><dd><code>{{.DSN}}</code></dd>
<dt>workload</dt><dd>{{.Ran}}, {{.Goroutines}} goroutines, {{.Mix}} reads</dd>
<dt>sampled</dt><dd>every {{.Every}}</dd>
<dt>ended</dt><dd>{{.Generated}}</dd>
</dl>
{{if .StepRows}}<h2>Scenario</h2>
<table class="steps">
<tr><th>at</th><th>step</th></tr>
{{range .StepRows}}<tr><td>{{.At}}</td><td>{{.Title}}{{if .Err}} <span class="failed">FAILED: {{.Err}}</span>{{end}}</td></tr>
{{end}}</table>
{{end}}{{if .FaultRows}}<h2>Injected faults</h2>
<table class="faults">
<tr><th>node</th><th>fault</th><th>from</th><th>until</th></tr>
{{range .FaultRows}}<tr><td>{{.Node}}</td><td>{{.Kind}}</td><td>{{.From}}</td><td>{{.To}}</td></tr>
{{end}}</table>
{{end}}{{range .Charts}}<h2>{{.Title}}</h2>
<p class="caption">{{.Caption}}</p>
<figure class="chart">{{.SVG}}</figure>
{{end}}<h2>Summary</h2>
<pre class="summary">{{.Summary}}</pre>
</body>
</html>
`))
