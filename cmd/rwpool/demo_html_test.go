package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/health"
)

// elem is a parsed element of the report.
type elem struct {
	name  string
	attrs map[string]string
	text  string
	kids  []*elem
}

func (e *elem) all(f func(*elem) bool) []*elem {
	var out []*elem
	if f(e) {
		out = append(out, e)
	}
	for _, k := range e.kids {
		out = append(out, k.all(f)...)
	}
	return out
}

func named(name string) func(*elem) bool { return func(e *elem) bool { return e.name == name } }

func withClass(c string) func(*elem) bool {
	return func(e *elem) bool { return strings.Contains(" "+e.attrs["class"]+" ", " "+c+" ") }
}

// parseReport parses the report strictly as XML: the report is written to
// be well-formed (every element closed, attributes quoted, only XML's
// entities and numeric references), so this checks its structure more
// strictly than an HTML parser would. It returns the <html> element.
func parseReport(t *testing.T, doc []byte) *elem {
	t.Helper()
	if !bytes.HasPrefix(doc, []byte("<!DOCTYPE html>\n")) {
		t.Fatalf("no HTML5 doctype: %.40q", doc)
	}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	dec.Strict = true
	var stack []*elem
	var root *elem
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("report is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &elem{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			switch {
			case len(stack) > 0:
				stack[len(stack)-1].kids = append(stack[len(stack)-1].kids, e)
			case root != nil:
				t.Fatal("more than one root element")
			default:
				root = e
			}
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tok)
			}
		case xml.ProcInst:
			t.Errorf("processing instruction <?%s?> in HTML", tok.Target)
		}
	}
	if root == nil || root.name != "html" {
		t.Fatalf("root element %v, want <html>", root)
	}
	return root
}

// checkReport checks what every report has: one head with title and
// style, nothing external, nothing scripted, and an <svg> per chart with
// its sizes. It returns the charts' <svg> elements.
func checkReport(t *testing.T, root *elem) []*elem {
	t.Helper()
	if len(root.kids) != 2 || root.kids[0].name != "head" || root.kids[1].name != "body" {
		t.Fatalf("<html> holds %d elements, want head and body", len(root.kids))
	}
	head := root.kids[0]
	if len(head.all(named("title"))) != 1 || len(head.all(named("style"))) != 1 {
		t.Error("head lacks its title or style")
	}
	for _, e := range root.all(func(*elem) bool { return true }) {
		switch e.name {
		case "script", "link", "img", "iframe", "object", "embed", "image", "use", "foreignObject":
			t.Errorf("<%s> in a self-contained report", e.name)
		}
		for k, v := range e.attrs {
			if k == "src" || k == "href" || strings.HasPrefix(k, "on") ||
				(strings.Contains(v, "://") && !(k == "xmlns" && v == "http://www.w3.org/2000/svg")) {
				t.Errorf("<%s %s=%q>: external resource or script", e.name, k, v)
			}
		}
	}
	if s := head.all(named("style"))[0].text; strings.Contains(s, "url(") || strings.Contains(s, "@import") {
		t.Error("the CSS fetches something")
	}
	svgs := root.all(named("svg"))
	if len(svgs) != 4 {
		t.Fatalf("%d charts, want 4", len(svgs))
	}
	for _, s := range svgs {
		if s.attrs["width"] == "" || s.attrs["height"] == "" || s.attrs["viewBox"] != "0 0 "+s.attrs["width"]+" "+s.attrs["height"] {
			t.Errorf("<svg> sizes: width %q height %q viewBox %q", s.attrs["width"], s.attrs["height"], s.attrs["viewBox"])
		}
	}
	return svgs
}

// syntheticReport is a 10s run sampled every 250ms in which replica1 is
// killed from 2s to 5s; its summary and DSN carry text to escape and a
// password that must not appear.
func syntheticReport(t *testing.T, password string) htmlReport {
	t.Helper()
	cfg, err := dsn.Parse("driver=postgres;primary='host=db1 user=app password=" + password + " dbname=shop';" +
		"replica='host=db2 user=app password=" + password + " dbname=shop' name=replica1;" +
		"replica='host=db3 user=app password=" + password + " dbname=shop' name=replica2")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := htmlReport{
		Title: "rwpool demo", Setup: "synthetic <b>cluster</b>", Generated: start.Add(10 * time.Second),
		Ran: 10 * time.Second, Goroutines: 8, Mix: 0.9, DSN: cfg.String(), Every: 250 * time.Millisecond,
		Nodes: []string{"primary", "replica1", "replica2"}, Start: start,
		Steps: []stepRecord{
			{0, "steady", nil},
			{2 * time.Second, "kill replica1", nil},
			{5 * time.Second, "bring replica1 back", errors.New("restore: <oops> & more")},
		},
		Faults: []reportFault{{Node: "replica1", Kind: "killed", From: 2 * time.Second, To: 5 * time.Second, Restored: true}},
		Events: []rwpool.Event{
			{Kind: health.StateChanged, Node: "replica1", Role: "replica", From: health.Available, To: health.Unavailable, At: start.Add(2300 * time.Millisecond)},
			{Kind: health.StateChanged, Node: "replica1", Role: "replica", From: health.Unavailable, To: health.Available, At: start.Add(5600 * time.Millisecond)},
			{Kind: health.StateChanged, Node: "replica2", Role: "replica", From: health.Available, To: health.Lagging, At: start.Add(7 * time.Second)},
		},
		Summary: "=== What happened ===\n  reads: 100 ok, 0 failed <script>alert(1)</script>\n",
	}
	for at := 250 * time.Millisecond; at <= 10*time.Second; at += 250 * time.Millisecond {
		down := at > 2300*time.Millisecond && at <= 5600*time.Millisecond
		s := tlSample{at: at, ops: opCounts{readsOK: 90, writesOK: 10}}
		s.nodes = []tlNode{{name: "primary", served: 10, p99: 2 * time.Millisecond, state: "available"},
			{name: "replica1", served: 45, p99: 3 * time.Millisecond, state: "available"},
			{name: "replica2", served: 45, p99: 3 * time.Millisecond, state: "available"}}
		if down {
			s.nodes[1] = tlNode{name: "replica1", p99: -1, state: "unavailable"}
			s.nodes[2].served = 90
		}
		if at == 2500*time.Millisecond {
			s.ops.readsFailed = 3
		}
		r.Samples = append(r.Samples, s)
	}
	return r
}

func TestRenderHTML(t *testing.T) {
	const pw = "s3cr3t-PW"
	var b bytes.Buffer
	if err := renderHTML(&b, syntheticReport(t, pw)); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	if strings.Contains(doc, pw) {
		t.Fatal("the password is in the report")
	}
	for _, bad := range []string{"<script", "<b>", "<oops>"} {
		if strings.Contains(doc, bad) {
			t.Errorf("unescaped %q in the report", bad)
		}
	}
	root := parseReport(t, b.Bytes())
	svgs := checkReport(t, root)
	if got := root.all(withClass("summary"))[0].text; !strings.Contains(got, "reads: 100 ok, 0 failed <script>alert(1)</script>") {
		t.Errorf("summary %q", got)
	}
	body := root.kids[1]
	if !strings.Contains(allText(body), "synthetic <b>cluster</b>") || !strings.Contains(allText(body), "FAILED: restore: <oops> & more") {
		t.Error("setup or step error not shown as text")
	}
	// Every chart marks the two steps after the start and the fault.
	for i, s := range svgs {
		markers, spans := s.all(withClass("marker")), s.all(withClass("span"))
		if len(markers) != 2 || len(spans) != 1 {
			t.Errorf("chart %d: %d markers, %d spans; want 2 and 1", i, len(markers), len(spans))
			continue
		}
		if got := markers[1].all(named("title"))[0].text; got != "bring replica1 back (FAILED)" {
			t.Errorf("chart %d: marker %q", i, got)
		}
		if got := spans[0].all(named("title"))[0].text; got != "replica1 killed" {
			t.Errorf("chart %d: span %q", i, got)
		}
	}
	// Operations: four series; share and p99: one per node.
	for i, want := range [][]string{
		{"reads ok", "reads failed", "writes ok", "writes failed"},
		{"primary", "replica1", "replica2"},
		{"primary", "replica1", "replica2"},
	} {
		var got []string
		for _, s := range svgs[i].all(withClass("series")) {
			got = append(got, s.attrs["data-name"])
			if len(s.all(named("path"))) != 1 {
				t.Errorf("chart %d, series %s: no line", i, s.attrs["data-name"])
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("chart %d: series %v, want %v", i, got, want)
		}
	}
	// replica1 has no p99 while down: its line has a gap.
	p99r1 := svgs[2].all(withClass("series"))[1].all(named("path"))[0].attrs["d"]
	if strings.Count(p99r1, "M") != 2 {
		t.Errorf("replica1's p99 line has no gap: %s", p99r1)
	}
	// States from the events: replica1 available, unavailable, available;
	// replica2 available then lagging; the primary available throughout.
	rows := svgs[3].all(withClass("state-row"))
	want := map[string]string{"primary": "available", "replica1": "available unavailable available", "replica2": "available lagging"}
	for _, r := range rows {
		var states []string
		for _, s := range r.all(withClass("state")) {
			states = append(states, s.attrs["data-state"])
		}
		if got := strings.Join(states, " "); got != want[r.attrs["data-name"]] {
			t.Errorf("%s: states %q, want %q", r.attrs["data-name"], got, want[r.attrs["data-name"]])
		}
	}
	if len(rows) != 3 {
		t.Errorf("%d state rows", len(rows))
	}
}

// TestRenderHTMLEmpty renders a run that ended before its first sample.
func TestRenderHTMLEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := renderHTML(&b, htmlReport{Title: "rwpool demo", Every: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	checkReport(t, parseReport(t, b.Bytes()))
}

func allText(e *elem) string {
	s := e.text
	for _, k := range e.kids {
		s += allText(k)
	}
	return s
}

func TestTimelineBounded(t *testing.T) {
	for _, c := range []struct{ d, want time.Duration }{
		{5 * time.Second, 200 * time.Millisecond},
		{30 * time.Second, 200 * time.Millisecond},
		{5 * time.Minute, 200 * time.Millisecond},
		{6 * time.Minute, 300 * time.Millisecond},
		{10 * time.Minute, 400 * time.Millisecond},
		{24 * time.Hour, 57600 * time.Millisecond},
	} {
		got := sampleInterval(c.d)
		if c.d/got > maxSamples {
			t.Errorf("%s: %s gives %d samples", c.d, got, c.d/got)
		}
		if got != c.want {
			t.Errorf("%s: interval %s, want %s", c.d, got, c.want)
		}
	}
}

func TestDemoReportBadPath(t *testing.T) {
	st, _, errb := runCmd(t, "demo", "--report", filepath.Join(t.TempDir(), "no", "such", "dir", "r.html"))
	if st != exitProblem || !strings.Contains(errb, "--report") {
		t.Errorf("status %d, stderr %q", st, errb)
	}
}

// TestDemoReport runs the embedded demo with --report, checks the file,
// and renders it in headless Chromium: the screenshot must show the
// charts. Without Chromium the rendering is skipped, except under CI=true
// (scripts/test.sh installs it), where that fails.
func TestDemoReport(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo runs for 5s")
	}
	path := filepath.Join(t.TempDir(), "report.html")
	st, out, errb := runCmd(t, "demo", "--duration", "5s", "--goroutines", "2", "--report", path)
	if st != exitOK || errb != "" {
		t.Fatalf("status %d, stderr %q, stdout:\n%s", st, errb, out)
	}
	if !strings.Contains(out, "report written to "+path) {
		t.Error("stdout does not say where the report is")
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root := parseReport(t, doc)
	svgs := checkReport(t, root)
	// The scenario's five steps after the start, and its three faults.
	for i, s := range svgs {
		if m, sp := len(s.all(withClass("marker"))), len(s.all(withClass("span"))); m != 5 || sp != 3 {
			t.Errorf("chart %d: %d markers, %d spans; want 5 and 3", i, m, sp)
		}
	}
	for i, s := range svgs[:3] {
		for _, ser := range s.all(withClass("series")) {
			if len(ser.all(named("path"))) == 0 {
				t.Errorf("chart %d: series %s has no line", i, ser.attrs["data-name"])
			}
		}
	}
	// replica1 was killed and the primary taken down: both were seen
	// unavailable.
	for _, r := range svgs[3].all(withClass("state-row")) {
		var states []string
		for _, s := range r.all(withClass("state")) {
			states = append(states, s.attrs["data-state"])
		}
		if n := r.attrs["data-name"]; (n == "replica1" || n == "primary") && !strings.Contains(strings.Join(states, " "), "unavailable") {
			t.Errorf("%s never unavailable: %v", n, states)
		}
	}
	if !strings.Contains(allText(root), "=== What happened") {
		t.Error("the report lacks the summary")
	}

	shot := screenshot(t, path)
	checkScreenshot(t, shot)
}

// chromium returns Chromium's path; it skips the test without one, or
// fails it under CI=true.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found (scripts/test.sh installs Debian's chromium package)")
	}
	t.Skip("chromium not found: the rendering check is skipped (scripts/test.sh installs it)")
	return ""
}

// screenshot renders the HTML file at 1280x2000 and returns the PNG.
func screenshot(t *testing.T, path string) image.Image {
	t.Helper()
	bin := chromium(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The flags keep Chromium off the network (the machine has none) and
	// out of the user's profile.
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+out, "--window-size=1280,2000",
		"file://"+path)
	cmd.WaitDelay = 5 * time.Second // its helpers may hold the output pipes open
	start := time.Now()
	logs, err := cmd.CombinedOutput()
	t.Logf("chromium ran in %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, logs)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, logs)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if keep := os.Getenv("RWPOOL_KEEP_SCREENSHOT"); keep != "" {
		if b, err := os.ReadFile(out); err == nil {
			_ = os.WriteFile(keep, b, 0o644)
		}
	}
	return img
}

// checkScreenshot fails t with the screenshot's problems.
func checkScreenshot(t *testing.T, img image.Image) {
	t.Helper()
	for _, p := range screenshotProblems(t, img) {
		t.Error(p)
	}
}

// screenshotProblems says why img does not show the report: a blank page,
// missing chart colours (the state bands' green and red, the node series'
// colours), too few distinct colours.
func screenshotProblems(t *testing.T, img image.Image) []string {
	var probs []string
	b := img.Bounds()
	if b.Dx() != 1280 || b.Dy() != 2000 {
		probs = append(probs, fmt.Sprintf("screenshot %dx%d, want 1280x2000", b.Dx(), b.Dy()))
	}
	type rgb struct{ r, g, b uint8 }
	counts := map[rgb]int{}
	nonWhite := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := rgb{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}
			counts[c]++
			if c.r < 240 || c.g < 240 || c.b < 240 {
				nonWhite++
			}
		}
	}
	total := b.Dx() * b.Dy()
	t.Logf("screenshot: %.1f%% non-white pixels, %d distinct colours", 100*float64(nonWhite)/float64(total), len(counts))
	if nonWhite < total/50 {
		probs = append(probs, fmt.Sprintf("only %d of %d pixels are not white: blank page?", nonWhite, total))
	}
	near := func(hex string) int {
		var want rgb
		for i, p := range []*uint8{&want.r, &want.g, &want.b} {
			v, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
			*p = uint8(v)
		}
		n := 0
		for c, k := range counts {
			if absDiff(c.r, want.r) <= 12 && absDiff(c.g, want.g) <= 12 && absDiff(c.b, want.b) <= 12 {
				n += k
			}
		}
		return n
	}
	for _, c := range []struct{ what, hex string }{
		{"state available (green)", "#2ca02c"},
		{"state unavailable (red)", "#d62728"},
		{"first series (blue)", "#0072B2"},
		{"second series (orange)", "#D55E00"},
		{"third series (green)", "#009E73"},
	} {
		if n := near(c.hex); n < 200 {
			probs = append(probs, fmt.Sprintf("%s: %d pixels near %s, want at least 200", c.what, n, c.hex))
		}
	}
	significant := 0
	for _, k := range counts {
		if k >= 100 {
			significant++
		}
	}
	if significant < 8 {
		probs = append(probs, fmt.Sprintf("only %d colours cover 100 pixels or more", significant))
	}
	return probs
}

// TestScreenshotCheck checks the screenshot check itself: it rejects a
// blank page and one without the charts' colours.
func TestScreenshotCheck(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 1280, 2000))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	if p := screenshotProblems(t, img); len(p) < 6 {
		t.Errorf("blank page: problems %q", p)
	}
	// Black text only: not blank, but no chart.
	draw.Draw(img, image.Rect(0, 0, 1280, 300), image.NewUniform(color.Black), image.Point{}, draw.Src)
	if p := screenshotProblems(t, img); len(p) != 6 || strings.Contains(strings.Join(p, ";"), "blank") {
		t.Errorf("text only: problems %q", p)
	}
}

func absDiff(a, b uint8) uint8 {
	if a > b {
		return a - b
	}
	return b - a
}
