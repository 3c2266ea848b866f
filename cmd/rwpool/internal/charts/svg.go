// Package charts renders the small SVG charts of rwpool's reports: a
// timeline of several series over seconds with fault markers and spans
// (Timeline), grouped bars (Bars) and a state band per node over time
// (States). Each chart's SVG method returns one <svg> element with width,
// height and viewBox, usable as a file of its own or inline in HTML.
//
// The SVG is written here, with encoding/xml's escaping, rather than by a
// charting library. Of the Go libraries this project can use, gonum/plot is
// well kept but brings gonum, embedded fonts, LaTeX and PDF back ends into
// the command's module, and its SVG has no structure to test (no grouping
// by series); go-analyze/charts (pre-1.0) and the go-chart it forks from
// have fixed chart types whose mark lines are statistical (min, max,
// average) only, with no vertical event markers, shaded spans or state
// bands, which are what these charts are about; wcharczuk/go-chart itself
// has seen little maintenance for years. What is needed (axes with round
// ticks, paths, rectangles, text) is a few hundred lines, has no
// dependency, and marks its elements with classes (series, marker, span,
// bar, state) that tests and CSS can rely on.
package charts

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// palette holds the default series colours (colour-blind safe,
// Okabe-Ito order).
var palette = [...]string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"}

// Color returns the default colour of the i-th series.
func Color(i int) string { return palette[((i%len(palette))+len(palette))%len(palette)] }

// svgWriter accumulates one SVG document.
type svgWriter struct{ b bytes.Buffer }

// esc returns s escaped for text and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}

// num formats a coordinate compactly.
func num(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
}

func (w *svgWriter) open(width, height int, title string) {
	fmt.Fprintf(&w.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" font-family="sans-serif" font-size="12">`,
		width, height, width, height)
	fmt.Fprintf(&w.b, "<title>%s</title>", esc(title))
	fmt.Fprintf(&w.b, `<rect class="background" x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`, width, height)
	if title != "" {
		fmt.Fprintf(&w.b, `<text class="title" x="%d" y="18" text-anchor="middle" font-size="14" font-weight="bold">%s</text>`, width/2, esc(title))
	}
}

func (w *svgWriter) close() []byte {
	w.b.WriteString("</svg>")
	return w.b.Bytes()
}

// raw writes markup built by the caller.
func (w *svgWriter) raw(format string, args ...any) { fmt.Fprintf(&w.b, format, args...) }

// text writes a text element; attrs are already escaped.
func (w *svgWriter) text(x, y float64, attrs, s string) {
	fmt.Fprintf(&w.b, `<text x="%s" y="%s" %s>%s</text>`, num(x), num(y), attrs, esc(s))
}

// scale maps [lo, hi] onto [a, b].
type scale struct{ lo, hi, a, b float64 }

func (s scale) at(v float64) float64 {
	if s.hi == s.lo {
		return s.a
	}
	return s.a + (v-s.lo)/(s.hi-s.lo)*(s.b-s.a)
}

// niceTicks returns round tick values covering [lo, hi], about n of them,
// and the extended range.
func niceTicks(lo, hi float64, n int) (ticks []float64, nlo, nhi float64) {
	if !(hi > lo) {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(max(n, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	nlo = math.Floor(lo/step) * step
	nhi = math.Ceil(hi/step-1e-9) * step
	for v := nlo; v <= nhi+step/2; v += step {
		ticks = append(ticks, math.Round(v/step)*step)
	}
	return ticks, nlo, nhi
}

// fmtTick formats a tick value without needless decimals.
func fmtTick(v float64) string {
	if math.Abs(v) >= 1e6 {
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	}
	if math.Abs(v) >= 1e4 {
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// plotArea is the rectangle the data is drawn in.
type plotArea struct{ left, top, right, bottom float64 }

// xAxis draws the x axis's ticks, grid and label.
func (w *svgWriter) xAxis(p plotArea, xs scale, ticks []float64, label string, grid bool) {
	w.raw(`<g class="axis x-axis">`)
	w.raw(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333"/>`, num(p.left), num(p.bottom), num(p.right), num(p.bottom))
	for _, t := range ticks {
		x := xs.at(t)
		if grid {
			w.raw(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e5e5e5"/>`, num(x), num(p.top), num(x), num(p.bottom))
		}
		w.raw(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333"/>`, num(x), num(p.bottom), num(x), num(p.bottom+4))
		w.text(x, p.bottom+16, `text-anchor="middle" fill="#333333"`, fmtTick(t))
	}
	if label != "" {
		w.text((p.left+p.right)/2, p.bottom+32, `class="axis-label" text-anchor="middle" fill="#333333"`, label)
	}
	w.raw(`</g>`)
}

// yAxis draws the y axis's ticks, grid and label; ymap places a value.
func (w *svgWriter) yAxis(p plotArea, ymap func(float64) (float64, bool), ticks []float64, label string) {
	w.raw(`<g class="axis y-axis">`)
	w.raw(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333"/>`, num(p.left), num(p.top), num(p.left), num(p.bottom))
	for _, t := range ticks {
		y, ok := ymap(t)
		if !ok {
			continue
		}
		w.raw(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e5e5e5"/>`, num(p.left), num(y), num(p.right), num(y))
		w.text(p.left-6, y+4, `text-anchor="end" fill="#333333"`, fmtTick(t))
	}
	if label != "" {
		x, y := 14.0, (p.top+p.bottom)/2
		w.raw(`<text class="axis-label" x="%s" y="%s" text-anchor="middle" fill="#333333" transform="rotate(-90 %s %s)">%s</text>`,
			num(x), num(y), num(x), num(y), esc(label))
	}
	w.raw(`</g>`)
}

// legendItem is one entry of a legend.
type legendItem struct{ name, color string }

// legend draws the entries left to right from (x, y), wrapping at maxX.
func (w *svgWriter) legend(x, y, maxX float64, items []legendItem) {
	w.raw(`<g class="legend">`)
	cx, cy := x, y
	for _, it := range items {
		width := 22 + 7*float64(len([]rune(it.name)))
		if cx+width > maxX && cx > x {
			cx, cy = x, cy+16
		}
		w.raw(`<rect x="%s" y="%s" width="12" height="10" fill="%s"/>`, num(cx), num(cy-9), esc(it.color))
		w.text(cx+16, cy, `fill="#333333"`, it.name)
		cx += width + 10
	}
	w.raw(`</g>`)
}

// Marker is a labelled vertical line at X (an event: a fault injected).
type Marker struct {
	X     float64
	Label string
}

// Span is a labelled shaded range of X (a fault from its start to its end).
type Span struct {
	From, To float64
	Label    string
}

// spans draws spans (behind the data), markers draws markers (in front);
// each has its label as a tooltip, and as text where labels is set.
func (w *svgWriter) spans(p plotArea, xs scale, spans []Span, labels bool) {
	for i, s := range spans {
		from, to := math.Max(xs.at(s.From), p.left), math.Min(xs.at(s.To), p.right)
		if to < from {
			continue
		}
		w.raw(`<g class="span"><title>%s</title><rect x="%s" y="%s" width="%s" height="%s" fill="#d62728" fill-opacity="0.10"/>`,
			esc(s.Label), num(from), num(p.top), num(math.Max(to-from, 1)), num(p.bottom-p.top))
		if labels {
			// Labels of overlapping spans are staggered.
			w.text(from+3, p.bottom-6-12*float64(i%3), `font-size="10" fill="#a01010"`, s.Label)
		}
		w.raw(`</g>`)
	}
}

func (w *svgWriter) markers(p plotArea, xs scale, markers []Marker, labels bool) {
	for i, m := range markers {
		x := xs.at(m.X)
		if x < p.left-0.5 || x > p.right+0.5 {
			continue
		}
		w.raw(`<g class="marker"><title>%s</title><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#7f3fbf" stroke-width="1.5" stroke-dasharray="4 3"/>`,
			esc(m.Label), num(x), num(p.top), num(x), num(p.bottom))
		if labels {
			w.text(x+3, p.top+10+11*float64(i%4), `font-size="10" fill="#5a2a8a"`, m.Label)
		}
		w.raw(`</g>`)
	}
}
