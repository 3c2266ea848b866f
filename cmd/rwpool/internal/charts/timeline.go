package charts

import (
	"math"
	"strconv"
	"strings"
)

// Point is one value of a series; a NaN Y is a gap (nothing measured).
type Point struct{ X, Y float64 }

// Series is one named line of a Timeline.
type Series struct {
	Name   string
	Color  string // "" for the default colour of its position
	Points []Point
}

// Timeline is a chart of several series over time (X in seconds, say),
// with shaded spans and labelled vertical markers.
type Timeline struct {
	Title          string
	XLabel, YLabel string
	Width, Height  int // default 900 x 300
	// Step draws each value as constant until the next point (counts per
	// interval); otherwise points are joined by straight lines.
	Step    bool
	Series  []Series
	Markers []Marker
	Spans   []Span
	// XMin, XMax fix the x range when XMax > XMin; otherwise it is the
	// data's, markers' and spans'. YMax fixes the top of the y axis when
	// positive (100 for percentages); the y axis starts at 0.
	XMin, XMax float64
	YMax       float64
	// LogY draws the y axis on a log10 scale from the power of ten below
	// the smallest positive value (latencies from microseconds to
	// timeouts); values <= 0 are gaps.
	LogY bool
}

// SVG renders the chart.
func (c Timeline) SVG() []byte {
	width, height := dims(c.Width, c.Height, 900, 300)
	var w svgWriter
	w.open(width, height, c.Title)
	p := plotArea{left: 60, top: 30, right: float64(width) - 20, bottom: float64(height) - 62}

	xlo, xhi := c.XMin, c.XMax
	ymax, ymin := 0.0, math.Inf(1)
	if !(xhi > xlo) {
		xlo, xhi = math.Inf(1), math.Inf(-1)
		for _, s := range c.Series {
			for _, pt := range s.Points {
				xlo, xhi = math.Min(xlo, pt.X), math.Max(xhi, pt.X)
			}
		}
		for _, m := range c.Markers {
			xlo, xhi = math.Min(xlo, m.X), math.Max(xhi, m.X)
		}
		for _, s := range c.Spans {
			xlo, xhi = math.Min(xlo, s.From), math.Max(xhi, s.To)
		}
		if math.IsInf(xlo, 0) {
			xlo, xhi = 0, 1
		}
	}
	for _, s := range c.Series {
		for _, pt := range s.Points {
			if !math.IsNaN(pt.Y) && !math.IsInf(pt.Y, 0) {
				ymax = math.Max(ymax, pt.Y)
				if pt.Y > 0 {
					ymin = math.Min(ymin, pt.Y)
				}
			}
		}
	}
	if c.YMax > 0 {
		ymax = c.YMax
	}
	xt, _, _ := niceTicks(xlo, xhi, 10)
	xt = within(xt, xlo, xhi)
	xs := scale{xlo, xhi, p.left, p.right}
	var ys scale
	var yt []float64
	ymap := func(v float64) (float64, bool) { return ys.at(v), !math.IsNaN(v) && !math.IsInf(v, 0) }
	if c.LogY {
		var lo, hi float64
		yt, lo, hi = logTicks(ymin, ymax)
		ys = scale{math.Log10(lo), math.Log10(hi), p.bottom, p.top}
		ymap = func(v float64) (float64, bool) {
			if !(v > 0) || math.IsInf(v, 0) {
				return 0, false
			}
			return ys.at(math.Log10(v)), true
		}
	} else {
		var ytop float64
		yt, _, ytop = niceTicks(0, math.Max(ymax, 1e-9), 5)
		if ymax == 0 {
			yt, ytop = []float64{0, 1}, 1
		}
		ys = scale{0, ytop, p.bottom, p.top}
	}

	w.spans(p, xs, c.Spans, true)
	w.yAxis(p, ymap, yt, c.YLabel)
	w.xAxis(p, xs, xt, c.XLabel, false)
	var items []legendItem
	for i, s := range c.Series {
		color := s.Color
		if color == "" {
			color = Color(i)
		}
		items = append(items, legendItem{s.Name, color})
		w.raw(`<g class="series" data-name="%s">`, esc(s.Name))
		if d := linePath(s.Points, xs, ymap, c.Step, xhi); d != "" {
			w.raw(`<path d="%s" fill="none" stroke="%s" stroke-width="1.8" stroke-linejoin="round"/>`, d, esc(color))
		}
		w.raw(`</g>`)
	}
	w.markers(p, xs, c.Markers, true)
	w.legend(p.left, float64(height)-8, p.right, items)
	return w.close()
}

// linePath is the path of points, broken where ymap refuses a value (NaN).
// A step line holds each value until the next point's X (the last one for
// one more interval, at most to xmax).
func linePath(pts []Point, xs scale, ymap func(float64) (float64, bool), step bool, xmax float64) string {
	var b strings.Builder
	pen := false
	for i, pt := range pts {
		y, ok := ymap(pt.Y)
		if !ok {
			pen = false
			continue
		}
		x := xs.at(pt.X)
		if pen && !step {
			b.WriteString("L" + num(x) + " " + num(y))
		} else if pen {
			b.WriteString("V" + num(y))
		} else {
			b.WriteString("M" + num(x) + " " + num(y))
			pen = true
		}
		if step {
			next := xmax
			if i+1 < len(pts) {
				next = pts[i+1].X
			} else if i > 0 {
				next = math.Min(xmax, pt.X+(pt.X-pts[i-1].X))
			}
			b.WriteString("H" + num(xs.at(math.Max(next, pt.X))))
		}
	}
	return b.String()
}

// within returns the ticks in [lo, hi].
func within(ticks []float64, lo, hi float64) []float64 {
	var out []float64
	eps := (hi - lo) * 1e-9
	for _, t := range ticks {
		if t >= lo-eps && t <= hi+eps {
			out = append(out, t)
		}
	}
	return out
}

// dims applies default dimensions.
func dims(w, h, dw, dh int) (int, int) {
	if w <= 0 {
		w = dw
	}
	if h <= 0 {
		h = dh
	}
	return w, h
}

// logTicks returns the ticks of a log scale covering [lo, hi] (lo > 0):
// powers of ten, with 2 and 5 between them when the range spans at most
// two decades, and the range's ends.
func logTicks(lo, hi float64) (ticks []float64, nlo, nhi float64) {
	if math.IsInf(lo, 0) || !(lo > 0) {
		lo, hi = 1, 10
	}
	elo, ehi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if ehi <= elo {
		ehi = elo + 1
	}
	mults := []float64{1}
	if ehi-elo <= 2 {
		mults = []float64{1, 2, 5}
	}
	for e := elo; e <= ehi; e++ {
		for _, m := range mults {
			if v := m * math.Pow(10, e); e < ehi || m == 1 {
				ticks = append(ticks, roundSig(v))
			}
		}
	}
	return ticks, math.Pow(10, elo), math.Pow(10, ehi)
}

// roundSig removes the float noise of m*10^e.
func roundSig(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return f
}
