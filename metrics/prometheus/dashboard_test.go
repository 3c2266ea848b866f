package rwprom_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/discovery"
	"github.com/rwpool/rwpool/internal/metricstest"
)

// discoveryMetricNames are the metrics of a discover source, labelled by
// source rather than node.
var discoveryMetricNames = []string{
	"rwpool_discovery_members", "rwpool_discovery_rounds_total",
	"rwpool_discovery_failures_total", "rwpool_discovery_failing",
}

func init() {
	discovery.Register("rwpromtest", func(string) (discovery.Source, error) { return downSource{}, nil })
}

// downSource is a discover source that always fails.
type downSource struct{}

func (downSource) Members(context.Context) ([]discovery.Member, error) {
	return nil, errors.New("down")
}

// dashboardFile is the Grafana dashboard for the collector's metrics.
const dashboardFile = "grafana/rwpool.json"

// scrapeLabels are the labels Prometheus itself attaches to every series it
// scrapes (the target's job and instance): a dashboard may use them
// although no collector exports them.
var scrapeLabels = []string{"job", "instance"}

// grafanaBuiltins are the variables Grafana defines itself.
var grafanaBuiltins = []string{"__rate_interval", "__interval", "__range"}

// TestDashboardMatchesCollector: every metric and label that the dashboard's
// queries, legends and template variables use is one the collector
// exports, every exported metric has a panel, and the dashboard is
// well-formed (unique panel ids, every query on the dashboard's data source
// variable, every variable it uses defined). Renaming a metric or a label
// in collector.go fails this test until the dashboard follows.
func TestDashboardMatchesCollector(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := checkDashboard(raw, exportedMetrics(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestDashboardCheckCatchesRot: checkDashboard reports what would rot the
// dashboard, so that TestDashboardMatchesCollector can fail. Each mutation
// of the real dashboard must be reported with the name it got wrong.
func TestDashboardCheckCatchesRot(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	exported := exportedMetrics(t)
	for _, tc := range []struct {
		name, old, new string
		want           []string // each must appear in some problem
	}{
		{"renamed metric", "rwpool_statements_served_total", "rwpool_statement_served_total",
			[]string{`unknown metric "rwpool_statement_served_total"`, `"rwpool_statements_served_total" is exported but no panel shows it`}},
		{"renamed metric in a variable", "label_values(rwpool_connections_max,", "label_values(rwpool_connections_maximum,",
			[]string{`unknown metric "rwpool_connections_maximum"`}},
		{"label in a selector", `node=~\"$node\"`, `nodes=~\"$node\"`,
			[]string{`label "nodes" of rwpool_`}},
		{"label in a grouping", "by (node, role)", "by (node, rol)",
			[]string{`label "rol"`}},
		{"label in a legend", "{{node}} ({{role}})", "{{node}} ({{roles}})",
			[]string{`label "roles"`}},
		{"label of a variable", `{instance=~\"$instance\"}, node)`, `{instance=~\"$instance\"}, nodename)`,
			[]string{`label "nodename" of rwpool_connections_max`}},
		{"undefined variable", `node=~\"$node\"`, `node=~\"$nodes\"`,
			[]string{`undefined variable $nodes`}},
		{"other data source", `"uid": "${datasource}"`, `"uid": "prom-prod"`,
			[]string{`data source`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mutated := strings.ReplaceAll(string(raw), tc.old, tc.new)
			if mutated == string(raw) {
				t.Fatalf("%q not found in %s: update the test", tc.old, dashboardFile)
			}
			problems, err := checkDashboard([]byte(mutated), exported)
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(problems, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no problem mentions %s; problems:\n%s", w, all)
				}
			}
		})
	}
}

// TestPromQLRefs unit-tests the extractor of metric and label names.
func TestPromQLRefs(t *testing.T) {
	for _, tc := range []struct {
		expr      string
		selectors []string // metric{label,label}
		labels    []string // grouping labels
	}{
		{`rwpool_waiters`, []string{"rwpool_waiters{}"}, nil},
		{`rwpool_waiters{node="a", role!~"b"}`, []string{"rwpool_waiters{node,role}"}, nil},
		{`sum by (node, role) (rate(rwpool_replays_total{instance=~"$instance"}[$__rate_interval]))`,
			[]string{"rwpool_replays_total{instance}"}, []string{"node", "role"}},
		{`sum(rate(a[5m])) without (x) / on(y) group_left(z) b{c="}{,\"=~"} > bool 1e3`,
			[]string{"a{}", "b{c}"}, []string{"x", "y", "z"}},
		{`max_over_time(rwpool_node_lagging[1h:5m]) or vector(0)`, []string{"rwpool_node_lagging{}"}, nil},
		{`count(m) - sum(m) - 2 * sum(n{l='x'})`, []string{"m{}", "m{}", "n{l}"}, nil},
		{`{node="x"}`, []string{"{node}"}, nil},
		{"sum\n  by(node)\n  (m)", []string{"m{}"}, []string{"node"}},
	} {
		refs, err := parsePromQL(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		var sels []string
		for _, s := range refs.selectors {
			sels = append(sels, s.metric+"{"+strings.Join(s.labels, ",")+"}")
		}
		if !slices.Equal(sels, tc.selectors) || !slices.Equal(refs.labels, tc.labels) {
			t.Errorf("%s:\n got selectors %q labels %q\nwant selectors %q labels %q", tc.expr, sels, refs.labels, tc.selectors, tc.labels)
		}
	}
	for _, bad := range []string{`rate(m[5m]`, `m{node="x"`, `sum by node (m)`, `m{node}`, `m + $x`, `"unterminated`} {
		if refs, err := parsePromQL(bad); err == nil {
			t.Errorf("%s: no error, got %+v", bad, refs)
		}
	}
}

// exportedMetrics collects from a registry with the collector of a fake
// PostgreSQL cluster whose replicas' lag is known, so that every metric,
// including rwpool_replication_lag_seconds, has series. It returns each
// metric's label names.
func exportedMetrics(t *testing.T) map[string]map[string]bool {
	t.Helper()
	pgFake.SetStatus(nodeDSN(t, "primary"), metricstest.Status{LSN: "0/2000", ReplayAge: -1})
	pgFake.SetStatus(nodeDSN(t, "replica1"), metricstest.Status{ReadOnly: true, LSN: "0/1000", ReplayAge: 1})
	pgFake.SetStatus(nodeDSN(t, "replica2"), metricstest.Status{ReadOnly: true, LSN: "0/2000", ReplayAge: -1})
	// A discover source, so that its metrics are exported too: one that
	// fails (rwpool_discovery_failing 1) is enough.
	c := metricstest.NewCluster(t, pgFake, "check_interval=10ms;discover=rwpromtest:down")
	waitFor(t, c.DB, "the replicas' lag", func(s rwpool.Snapshot) bool { return s.Nodes[1].LagKnown && s.Nodes[2].LagKnown })
	mustQuery(t, c.DB, "SELECT 1") // a statement: rwpool_statement_duration_seconds has series
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(mustCollector(t, c.DB))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, mf := range mfs {
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		if mf.GetType() != dto.MetricType_HISTOGRAM {
			out[mf.GetName()] = labels
			continue
		}
		// A histogram is queried as its series: _bucket (with le),
		// _sum and _count.
		bucket := maps.Clone(labels)
		bucket["le"] = true
		out[mf.GetName()+"_bucket"], out[mf.GetName()+"_sum"], out[mf.GetName()+"_count"] = bucket, labels, labels
	}
	if len(out) != len(metricNames)+2*len(histogramNames)+len(discoveryMetricNames) {
		t.Fatalf("collected %d series names, want %d: %v", len(out), len(metricNames)+2*len(histogramNames)+len(discoveryMetricNames), out)
	}
	return out
}

// The parts of Grafana's dashboard model that the check reads.
type gDashboard struct {
	Panels     []gPanel `json:"panels"`
	Templating struct {
		List []gVariable `json:"list"`
	} `json:"templating"`
}

type gPanel struct {
	ID         int          `json:"id"`
	Type       string       `json:"type"`
	Title      string       `json:"title"`
	Datasource *gDatasource `json:"datasource"`
	Targets    []gTarget    `json:"targets"`
	Panels     []gPanel     `json:"panels"` // a collapsed row's panels
}

type gDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type gTarget struct {
	RefID        string       `json:"refId"`
	Expr         string       `json:"expr"`
	LegendFormat string       `json:"legendFormat"`
	Datasource   *gDatasource `json:"datasource"`
}

type gVariable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Datasource *gDatasource    `json:"datasource"`
}

// dashboardDatasource is the data source every query must use: the
// dashboard's variable, so that an import can choose its Prometheus.
var dashboardDatasource = gDatasource{Type: "prometheus", UID: "${datasource}"}

// checkDashboard parses a dashboard and returns what in it does not match
// exported (metric name → its label names): unknown metrics, labels a
// metric does not have, exported metrics no panel shows, undefined
// variables, queries on another data source, duplicate panel ids. An
// error means the dashboard or one of its queries could not be read.
func checkDashboard(raw []byte, exported map[string]map[string]bool) ([]string, error) {
	var d gDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", dashboardFile, err)
	}
	var problems []string
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	used := map[string]bool{}
	vars := map[string]bool{}
	for _, b := range grafanaBuiltins {
		vars[b] = true
	}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}

	// checkRefs checks the selectors of one query and the labels it groups
	// by or shows (extra), which must be labels of one of its metrics.
	checkRefs := func(where string, refs promRefs, extra []string) {
		have := map[string]bool{}
		for _, l := range scrapeLabels {
			have[l] = true
		}
		complete := true // every metric known: have holds all their labels
		for _, s := range refs.selectors {
			if s.metric == "" {
				report("%s: a selector without a metric name", where)
				complete = false
				continue
			}
			labels, ok := exported[s.metric]
			if !ok {
				report("%s: unknown metric %q (the collector exports %s)", where, s.metric, strings.Join(sortedKeys(exported), ", "))
				complete = false
				continue
			}
			used[s.metric] = true
			for l := range labels {
				have[l] = true
			}
			for _, l := range s.labels {
				if !labels[l] && !slices.Contains(scrapeLabels, l) {
					report("%s: label %q of %s: not exported (it has %s)", where, l, s.metric, strings.Join(sortedKeys(labels), ", "))
				}
			}
		}
		for _, l := range append(slices.Clone(refs.labels), extra...) {
			if complete && !have[l] {
				report("%s: label %q: none of the query's metrics has it", where, l)
			}
		}
	}
	checkVars := func(where, s string) {
		for _, m := range grafanaVar.FindAllStringSubmatch(s, -1) {
			name := m[1] + m[2] + m[3]
			if !vars[name] {
				report("%s: undefined variable $%s", where, name)
			}
		}
	}
	checkDatasource := func(where string, ds *gDatasource) {
		if ds == nil || *ds != dashboardDatasource {
			report("%s: data source %+v, want %+v", where, ds, dashboardDatasource)
		}
	}

	ids := map[int]string{}
	var walk func([]gPanel)
	walk = func(panels []gPanel) {
		for _, p := range panels {
			where := fmt.Sprintf("panel %q", p.Title)
			if prev, dup := ids[p.ID]; dup {
				report("%s: id %d already used by panel %q", where, p.ID, prev)
			}
			ids[p.ID] = p.Title
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			checkDatasource(where, p.Datasource)
			if len(p.Targets) == 0 {
				report("%s: no query", where)
			}
			refIDs := map[string]bool{}
			for _, tg := range p.Targets {
				where := fmt.Sprintf("panel %q, query %s", p.Title, tg.RefID)
				if tg.RefID == "" || refIDs[tg.RefID] {
					report("%s: missing or duplicate refId", where)
				}
				refIDs[tg.RefID] = true
				checkDatasource(where, tg.Datasource)
				checkVars(where, tg.Expr)
				refs, err := parsePromQL(tg.Expr)
				if err != nil {
					report("%s: %v", where, err)
					continue
				}
				checkRefs(where, refs, legendLabels(tg.LegendFormat))
			}
		}
	}
	walk(d.Panels)

	for _, v := range d.Templating.List {
		where := fmt.Sprintf("variable $%s", v.Name)
		switch v.Type {
		case "datasource":
			var q string
			if err := json.Unmarshal(v.Query, &q); err != nil || q != "prometheus" {
				report("%s: a data source variable for %s, want prometheus", where, v.Query)
			}
		case "query":
			checkDatasource(where, v.Datasource)
			q := variableQuery(v.Query)
			if q == "" {
				report("%s: no query", where)
				continue
			}
			if v.Definition != "" && v.Definition != q {
				report("%s: definition %q differs from query %q", where, v.Definition, q)
			}
			checkVars(where, q)
			refs, err := parseLabelValues(q)
			if err != nil {
				report("%s: %v", where, err)
				continue
			}
			checkRefs(where, refs, nil)
		case "custom", "constant", "interval", "textbox":
		default:
			report("%s: unexpected variable type %q", where, v.Type)
		}
	}

	for _, m := range sortedKeys(exported) {
		if !used[m] {
			report("metric %q is exported but no panel shows it: add it to %s", m, dashboardFile)
		}
	}
	return problems, nil
}

// grafanaVar matches a Grafana variable reference: $name, ${name},
// ${name:format} or [[name]].
var grafanaVar = regexp.MustCompile(`\$(\w+)|\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]`)

// variableQuery returns a query variable's PromQL-ish query, which Grafana
// stores as a string or, in newer versions, as {"query": "..."}.
func variableQuery(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Query
	}
	return ""
}

// legendLabels returns the labels a legend format shows ({{node}}).
func legendLabels(format string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`).FindAllStringSubmatch(format, -1) {
		out = append(out, m[1])
	}
	return out
}

// parseLabelValues reads Grafana's label_values(selector, label) and
// label_values(label) variable queries, the only kinds the dashboard uses.
func parseLabelValues(q string) (promRefs, error) {
	q = strings.TrimSpace(q)
	inner, ok := strings.CutPrefix(q, "label_values(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return promRefs{}, fmt.Errorf("query %q: only label_values(…) is supported", q)
	}
	inner = strings.TrimSuffix(inner, ")")
	i := strings.LastIndex(inner, ",")
	label := strings.TrimSpace(inner[i+1:])
	if !labelName.MatchString(label) {
		return promRefs{}, fmt.Errorf("query %q: %q is not a label name", q, label)
	}
	if i < 0 {
		return promRefs{labels: []string{label}}, nil
	}
	refs, err := parsePromQL(inner[:i])
	if err != nil {
		return promRefs{}, fmt.Errorf("query %q: %w", q, err)
	}
	if len(refs.selectors) != 1 {
		return promRefs{}, fmt.Errorf("query %q: want one selector", q)
	}
	// The label is one of the selector's metric's.
	refs.selectors[0].labels = append(refs.selectors[0].labels, label)
	return refs, nil
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// promRefs are the names a PromQL expression refers to.
type promRefs struct {
	selectors []promSelector // in order of appearance
	labels    []string       // of by, without, on, ignoring, group_left, group_right
}

// promSelector is a vector selector: a metric name ("" for {…} alone) and
// the labels its matchers name.
type promSelector struct {
	metric string
	labels []string
}

// PromQL words that are not metric names when they are not followed by
// "(": binary operators and modifiers, and the aggregation operators,
// which may be followed by "by (…)" or "without (…)" before their "(".
var (
	promGrouping   = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}
	promKeywords   = []string{"and", "or", "unless", "bool", "atan2", "inf", "nan"}
	promAggregates = []string{"sum", "min", "max", "avg", "count", "group", "stddev", "stdvar",
		"topk", "bottomk", "quantile", "count_values", "limitk", "limit_ratio"}
)

// parsePromQL extracts the metric and label names of a PromQL expression
// as the dashboard writes them. It is no full parser: it tokenizes, reads
// selectors and grouping clauses, and takes any other identifier not
// followed by "(" for a metric name; it rejects what it does not know
// (unbalanced brackets, "offset", Grafana variables outside strings and
// ranges) rather than guess.
func parsePromQL(expr string) (promRefs, error) {
	toks, err := promTokens(expr)
	if err != nil {
		return promRefs{}, err
	}
	var refs promRefs
	depth := 0 // parentheses
	next := func(i int) string {
		if i+1 < len(toks) {
			return toks[i+1]
		}
		return ""
	}
	isIdent := func(s string) bool { return s != "" && labelName.MatchString(strings.ReplaceAll(s, ":", "_")) }
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		switch {
		case tok == "(":
			depth++
		case tok == ")":
			depth--
			if depth < 0 {
				return promRefs{}, fmt.Errorf("%q: unbalanced )", expr)
			}
		case tok == "{":
			sel, n, err := promMatchers(toks[i:])
			if err != nil {
				return promRefs{}, fmt.Errorf("%q: %w", expr, err)
			}
			refs.selectors = append(refs.selectors, sel)
			i += n - 1
		case tok == "offset" || tok == "@":
			return promRefs{}, fmt.Errorf("%q: %s is not supported by this check", expr, tok)
		case slices.Contains(promGrouping, tok):
			if (tok == "group_left" || tok == "group_right") && next(i) != "(" {
				continue
			}
			if next(i) != "(" {
				return promRefs{}, fmt.Errorf("%q: %s without (labels)", expr, tok)
			}
			j := i + 2
			for ; j < len(toks) && toks[j] != ")"; j++ {
				switch {
				case toks[j] == ",":
				case isIdent(toks[j]):
					refs.labels = append(refs.labels, toks[j])
				default:
					return promRefs{}, fmt.Errorf("%q: %q in %s (…)", expr, toks[j], tok)
				}
			}
			if j == len(toks) {
				return promRefs{}, fmt.Errorf("%q: unclosed %s (", expr, tok)
			}
			i = j
		case slices.Contains(promKeywords, tok), slices.Contains(promAggregates, tok):
		case isIdent(tok) && !isNumber(tok):
			if next(i) == "(" {
				continue // a function
			}
			sel := promSelector{metric: tok}
			if next(i) == "{" {
				s, n, err := promMatchers(toks[i+1:])
				if err != nil {
					return promRefs{}, fmt.Errorf("%q: %w", expr, err)
				}
				sel.labels = s.labels
				i += n
			}
			refs.selectors = append(refs.selectors, sel)
		}
	}
	if depth != 0 {
		return promRefs{}, fmt.Errorf("%q: unbalanced (", expr)
	}
	return refs, nil
}

// promMatchers reads {label op "value", …} from toks[0] == "{" and returns
// the selector (without metric) and the number of tokens read.
func promMatchers(toks []string) (promSelector, int, error) {
	var sel promSelector
	i := 1
	for i < len(toks) && toks[i] != "}" {
		if i+2 >= len(toks) || !labelName.MatchString(toks[i]) ||
			!slices.Contains([]string{"=", "!=", "=~", "!~"}, toks[i+1]) || !strings.HasPrefix(toks[i+2], `"`) {
			return sel, 0, fmt.Errorf("bad matcher at %q", strings.Join(toks[i:min(i+3, len(toks))], " "))
		}
		sel.labels = append(sel.labels, toks[i])
		i += 3
		if i < len(toks) && toks[i] == "," {
			i++
		}
	}
	if i == len(toks) {
		return sel, 0, fmt.Errorf("unclosed {")
	}
	return sel, i + 1, nil
}

func isNumber(s string) bool { return s[0] >= '0' && s[0] <= '9' }

// promTokens splits expr into identifiers, numbers, strings (each kept as
// one token: `""`, contents dropped), operators and brackets. Range and
// subquery brackets [...] are dropped whole, Grafana variables such as
// $__rate_interval being allowed there and inside strings only.
func promTokens(expr string) ([]string, error) {
	var toks []string
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for ; j < len(expr) && expr[j] != c; j++ {
				if expr[j] == '\\' && c != '`' {
					j++
				}
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("%q: unterminated string", expr)
			}
			toks = append(toks, `""`)
			i = j + 1
		case c == '[':
			j := strings.IndexByte(expr[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("%q: unclosed [", expr)
			}
			i += j + 1
		case c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + 1
			for j < len(expr) && (expr[j] == '_' || expr[j] == ':' || expr[j] >= 'a' && expr[j] <= 'z' ||
				expr[j] >= 'A' && expr[j] <= 'Z' || expr[j] >= '0' && expr[j] <= '9') {
				j++
			}
			toks = append(toks, expr[i:j])
			i = j
		case c >= '0' && c <= '9' || c == '.':
			j := i + 1
			for j < len(expr) && (expr[j] >= '0' && expr[j] <= '9' || expr[j] == '.' || expr[j] == 'e' || expr[j] == 'E' ||
				(expr[j] == '+' || expr[j] == '-') && (expr[j-1] == 'e' || expr[j-1] == 'E')) {
				j++
			}
			toks = append(toks, expr[i:j])
			i = j
		case strings.HasPrefix(expr[i:], "=~") || strings.HasPrefix(expr[i:], "!~") ||
			strings.HasPrefix(expr[i:], "!=") || strings.HasPrefix(expr[i:], "==") ||
			strings.HasPrefix(expr[i:], ">=") || strings.HasPrefix(expr[i:], "<="):
			toks = append(toks, expr[i:i+2])
			i += 2
		case strings.IndexByte("(){},=<>+-*/%^@", c) >= 0:
			toks = append(toks, string(c))
			i++
		default:
			return nil, fmt.Errorf("%q: unexpected %q (Grafana variables belong in strings and ranges)", expr, c)
		}
	}
	return toks, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
