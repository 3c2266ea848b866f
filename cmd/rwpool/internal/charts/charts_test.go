package charts

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// node is a parsed XML element.
type node struct {
	name  string
	attrs map[string]string
	text  string
	kids  []*node
}

// parse parses an SVG document strictly and returns its root.
func parse(t *testing.T, svg []byte) *node {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	dec.Strict = true
	var stack []*node
	var root *node
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("invalid XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &node{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, n)
			} else if root != nil {
				t.Fatal("more than one root element")
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tok)
			}
		}
	}
	if root == nil {
		t.Fatal("no root element")
	}
	return root
}

// all returns the elements under n (n included) for which f holds.
func (n *node) all(f func(*node) bool) []*node {
	var out []*node
	if f(n) {
		out = append(out, n)
	}
	for _, k := range n.kids {
		out = append(out, k.all(f)...)
	}
	return out
}

// first returns the first element named name under n, nil if none.
func first(n *node, name string) *node {
	if l := n.all(func(k *node) bool { return k.name == name }); len(l) > 0 {
		return l[0]
	}
	return nil
}

func class(c string) func(*node) bool {
	return func(n *node) bool { return slicesContains(strings.Fields(n.attrs["class"]), c) }
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// allText is the text of n and its descendants.
func (n *node) allText() string {
	s := n.text
	for _, k := range n.kids {
		s += " " + k.allText()
	}
	return s
}

// checkRoot checks the root is an <svg> with sizes matching its viewBox.
func checkRoot(t *testing.T, root *node, w, h int) {
	t.Helper()
	if root.name != "svg" {
		t.Fatalf("root is <%s>", root.name)
	}
	if root.attrs["width"] != strconv.Itoa(w) || root.attrs["height"] != strconv.Itoa(h) {
		t.Errorf("size %sx%s, want %dx%d", root.attrs["width"], root.attrs["height"], w, h)
	}
	if want := "0 0 " + root.attrs["width"] + " " + root.attrs["height"]; root.attrs["viewBox"] != want {
		t.Errorf("viewBox %q, want %q", root.attrs["viewBox"], want)
	}
}

// coordsInside checks that every numeric coordinate attribute lies within
// the canvas (a misplaced scale shows up here).
func coordsInside(t *testing.T, root *node, w, h float64) {
	t.Helper()
	for _, n := range root.all(func(*node) bool { return true }) {
		for _, a := range []string{"x", "x1", "x2", "y", "y1", "y2", "width", "height"} {
			v, ok := n.attrs[a]
			if !ok || n == root {
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Errorf("<%s %s=%q>: not a number", n.name, a, v)
				continue
			}
			limit := w
			if strings.HasPrefix(a, "y") || a == "height" {
				limit = h
			}
			if f < -0.5 || f > limit+0.5 {
				t.Errorf("<%s %s=%s> outside the canvas", n.name, a, v)
			}
		}
	}
}

const evil = `<script>alert("x")</script> & 'q'`

func TestTimeline(t *testing.T) {
	var ok, failed []Point
	for i := 0; i <= 100; i++ {
		x := float64(i) / 10
		ok = append(ok, Point{x, 50 + 10*math.Sin(x)})
		y := 0.0
		if x >= 3 && x < 4 {
			y = 12
		}
		failed = append(failed, Point{x, y})
	}
	ok[40].Y = math.NaN() // a gap
	c := Timeline{
		Title: "requests " + evil, XLabel: "seconds", YLabel: "per 100 ms", Step: true,
		Series:  []Series{{Name: "ok", Points: ok}, {Name: "failed " + evil, Color: "#ff0000", Points: failed}},
		Markers: []Marker{{X: 3, Label: "kill replica1"}, {X: 6, Label: evil}},
		Spans:   []Span{{From: 3, To: 6, Label: "replica1 killed"}},
	}
	svg := c.SVG()
	root := parse(t, svg)
	checkRoot(t, root, 900, 300)
	coordsInside(t, root, 900, 300)
	series := root.all(class("series"))
	if len(series) != 2 || series[0].attrs["data-name"] != "ok" || series[1].attrs["data-name"] != "failed "+evil {
		t.Fatalf("series groups: %d", len(series))
	}
	for _, s := range series {
		paths := s.all(func(n *node) bool { return n.name == "path" })
		if len(paths) != 1 || !strings.HasPrefix(paths[0].attrs["d"], "M") {
			t.Errorf("series %q: paths %v", s.attrs["data-name"], paths)
		}
	}
	// The NaN breaks the ok line in two.
	if d := series[0].kids[0].attrs["d"]; strings.Count(d, "M") != 2 {
		t.Errorf("ok path has %d moves, want 2 (one gap)", strings.Count(d, "M"))
	}
	if d := series[1].kids[0].attrs["d"]; !strings.Contains(d, "H") || !strings.Contains(d, "V") {
		t.Errorf("step path is not made of H and V segments: %s", d)
	}
	markers := root.all(class("marker"))
	if len(markers) != 2 {
		t.Fatalf("%d markers, want 2", len(markers))
	}
	for i, want := range []string{"kill replica1", evil} {
		if l := first(markers[i], "text"); l == nil || l.text != want {
			t.Errorf("marker %d: label %v, want %q", i, l, want)
		}
	}
	// The marker at x=3 and the span from 3 share their x.
	spans := root.all(class("span"))
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	mx, sx := first(markers[0], "line").attrs["x1"], first(spans[0], "rect").attrs["x"]
	if mx == "" || mx != sx {
		t.Errorf("marker at %q, span from %q", mx, sx)
	}
	if l := first(spans[0], "text"); l == nil || l.text != "replica1 killed" {
		t.Errorf("span label %v", l)
	}
	if strings.Contains(string(svg), "<script") {
		t.Error("unescaped text in the SVG")
	}
	titles := root.all(class("title"))
	if len(titles) != 1 || titles[0].text != "requests "+evil {
		t.Errorf("title %v", titles)
	}
	if len(root.all(class("legend"))[0].all(func(n *node) bool { return n.name == "rect" })) != 2 {
		t.Error("legend lacks an entry per series")
	}
}

func TestTimelineEmptyAndFixedRange(t *testing.T) {
	for _, c := range []Timeline{
		{},
		{Series: []Series{{Name: "none"}}},
		{Series: []Series{{Name: "nan", Points: []Point{{0, math.NaN()}, {1, math.Inf(1)}}}}},
		{XMin: 0, XMax: 8, YMax: 100, Width: 400, Height: 200, Series: []Series{{Name: "share", Points: []Point{{0, 40}, {8, 60}}}},
			Markers: []Marker{{X: 20, Label: "outside"}}},
	} {
		w, h := dims(c.Width, c.Height, 900, 300)
		root := parse(t, c.SVG())
		checkRoot(t, root, w, h)
		coordsInside(t, root, float64(w), float64(h))
		if n := len(root.all(class("marker"))); n != 0 {
			t.Errorf("%d markers drawn outside the range", n)
		}
	}
}

func TestTimelineLogY(t *testing.T) {
	c := Timeline{LogY: true, Step: true, Series: []Series{
		{Name: "replica1", Points: []Point{{0, 0.8}, {1, 2}, {2, 0}, {3, 1000}, {4, math.NaN()}, {5, 3}}},
	}}
	root := parse(t, c.SVG())
	checkRoot(t, root, 900, 300)
	coordsInside(t, root, 900, 300)
	var ticks []string
	for _, tx := range root.all(class("y-axis"))[0].all(func(n *node) bool { return n.name == "text" && n.attrs["class"] == "" }) {
		ticks = append(ticks, tx.text)
	}
	if got := strings.Join(ticks, " "); got != "0.1 1 10 100 1000" {
		t.Errorf("log ticks %q", got)
	}
	// 0 and NaN are gaps: three pieces.
	if d := first(root.all(class("series"))[0], "path").attrs["d"]; strings.Count(d, "M") != 3 {
		t.Errorf("path %q: want 3 pieces", d)
	}
	if ticks, lo, hi := logTicks(2, 40); fmtFloats(ticks) != "[1 2 5 10 20 50 100]" || lo != 1 || hi != 100 {
		t.Errorf("logTicks(2, 40) = %v, %g, %g", ticks, lo, hi)
	}
}

func TestBars(t *testing.T) {
	c := Bars{
		Title: "throughput", YLabel: "statements/s", XLabel: "goroutines",
		Groups: []string{"1", "8", "64"},
		Series: []BarSeries{
			{Name: "bare", Values: []float64{1000, 6000, 9000}},
			{Name: "rwpool", Values: []float64{990, 5900, 9100}},
			{Name: evil, Values: []float64{800, math.NaN()}},
		},
		Format: func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) },
	}
	root := parse(t, c.SVG())
	checkRoot(t, root, 900, 320)
	coordsInside(t, root, 900, 320)
	groups := root.all(class("group"))
	if len(groups) != 3 {
		t.Fatalf("%d groups", len(groups))
	}
	bars := root.all(class("bar"))
	if len(bars) != 7 {
		t.Fatalf("%d bars, want 7 (two values missing)", len(bars))
	}
	if n := len(root.all(class("bar-missing"))); n != 2 {
		t.Errorf("%d n/a labels, want 2", n)
	}
	// Heights are proportional to the values, all from the same baseline.
	h := func(b *node) float64 { f, _ := strconv.ParseFloat(b.attrs["height"], 64); return f }
	base := func(b *node) float64 { y, _ := strconv.ParseFloat(b.attrs["y"], 64); return y + h(b) }
	if r := h(bars[1]) / h(bars[0]); math.Abs(r-1000/990.0) > 0.02 {
		t.Errorf("1 goroutine: bar heights %v, %v", h(bars[0]), h(bars[1]))
	}
	if math.Abs(base(bars[0])-base(bars[6])) > 0.2 {
		t.Error("bars do not share a baseline")
	}
	if bars[2].attrs["data-series"] != evil {
		t.Errorf("third bar is %q", bars[2].attrs["data-series"])
	}
}

func TestStates(t *testing.T) {
	c := States{
		Title: "node state", XLabel: "seconds", XMin: 0, XMax: 10,
		Rows: []StateRow{
			{Name: "primary", Spans: []StateSpan{{0, 6, "available"}, {6, 7.5, "unavailable"}, {7.5, 10, "available"}}},
			{Name: "replica1", Spans: []StateSpan{{0, 2, "available"}, {2, 4, "lagging"}, {4, 10, "available"}}},
			{Name: evil, Spans: []StateSpan{{0, 10, "odd state"}}},
		},
		Markers: []Marker{{X: 6, Label: "take the primary down"}},
		Spans:   []Span{{From: 6, To: 7.5, Label: "primary killed"}},
	}
	svg := c.SVG()
	root := parse(t, svg)
	w, _ := strconv.Atoi(root.attrs["width"])
	h, _ := strconv.Atoi(root.attrs["height"])
	checkRoot(t, root, 900, h)
	coordsInside(t, root, float64(w), float64(h))
	rows := root.all(class("state-row"))
	if len(rows) != 3 || rows[2].attrs["data-name"] != evil {
		t.Fatalf("%d rows", len(rows))
	}
	fills := map[string]string{}
	for _, r := range root.all(class("state")) {
		fills[r.attrs["data-state"]] = r.attrs["fill"]
	}
	if fills["available"] != "#2ca02c" || fills["unavailable"] != "#d62728" || fills["lagging"] != "#ffbf00" || fills["odd state"] == "" {
		t.Errorf("state colours %v", fills)
	}
	if n := len(root.all(class("state"))); n != 7 {
		t.Errorf("%d state rectangles, want 7", n)
	}
	m, sp := root.all(class("marker")), root.all(class("span"))
	if len(m) != 1 || len(sp) != 1 {
		t.Fatal("marker or span missing")
	}
	// Labelled by tooltips only.
	if first(m[0], "title").text != "take the primary down" || first(m[0], "text") != nil || first(sp[0], "text") != nil {
		t.Error("marker or span labels")
	}
	if !strings.Contains(root.all(class("legend"))[0].allText(), "unavailable") {
		t.Error("legend lacks the states")
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 10, "[0 2 4 6 8 10]"},
		{0, 7.3, "[0 1 2 3 4 5 6 7 8]"},
		{0, 0.004, "[0 0.0005 0.001 0.0015 0.002 0.0025 0.003 0.0035 0.004]"},
		{0, 123456, "[0 20000 40000 60000 80000 100000 120000 140000]"},
	} {
		ticks, _, _ := niceTicks(c.lo, c.hi, 8)
		if got := fmtFloats(ticks); got != c.want {
			t.Errorf("niceTicks(%g, %g) = %s, want %s", c.lo, c.hi, got, c.want)
		}
	}
	if fmtTick(25000) != "25k" || fmtTick(2e6) != "2M" || fmtTick(0.5) != "0.5" {
		t.Error("fmtTick")
	}
}

func fmtFloats(fs []float64) string {
	var s []string
	for _, f := range fs {
		s = append(s, strconv.FormatFloat(f, 'f', -1, 64))
	}
	return "[" + strings.Join(s, " ") + "]"
}
