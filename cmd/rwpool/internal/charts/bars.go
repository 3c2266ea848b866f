package charts

import (
	"fmt"
	"math"
)

// BarSeries is one variant of a Bars chart: a value per group.
type BarSeries struct {
	Name   string
	Color  string    // "" for the default colour of its position
	Values []float64 // one per group; NaN for none (drawn as "n/a")
}

// Bars is a grouped bar chart: for each group (a concurrency, say) one bar
// per series (a variant).
type Bars struct {
	Title         string
	XLabel        string
	YLabel        string
	Width, Height int // default 900 x 320
	Groups        []string
	Series        []BarSeries
	// Format formats a bar's value label; nil for none.
	Format func(float64) string
}

// SVG renders the chart.
func (c Bars) SVG() []byte {
	width, height := dims(c.Width, c.Height, 900, 320)
	var w svgWriter
	w.open(width, height, c.Title)
	p := plotArea{left: 60, top: 30, right: float64(width) - 20, bottom: float64(height) - 62}

	ymax := 0.0
	for _, s := range c.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				ymax = math.Max(ymax, v)
			}
		}
	}
	yt, _, ytop := niceTicks(0, math.Max(ymax, 1e-9), 5)
	if ymax == 0 {
		yt, ytop = []float64{0, 1}, 1
	}
	ys := scale{0, ytop, p.bottom, p.top}
	w.yAxis(p, func(v float64) (float64, bool) { return ys.at(v), true }, yt, c.YLabel)
	w.raw(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333"/>`, num(p.left), num(p.bottom), num(p.right), num(p.bottom))

	ng, ns := len(c.Groups), len(c.Series)
	var items []legendItem
	colors := make([]string, ns)
	for i, s := range c.Series {
		colors[i] = s.Color
		if colors[i] == "" {
			colors[i] = Color(i)
		}
		items = append(items, legendItem{s.Name, colors[i]})
	}
	if ng > 0 && ns > 0 {
		groupW := (p.right - p.left) / float64(ng)
		barW := groupW * 0.8 / float64(ns)
		for g, name := range c.Groups {
			gx := p.left + float64(g)*groupW
			w.raw(`<g class="group" data-name="%s">`, esc(name))
			w.text(gx+groupW/2, p.bottom+16, `text-anchor="middle" fill="#333333"`, name)
			for i, s := range c.Series {
				x := gx + groupW*0.1 + float64(i)*barW
				v := math.NaN()
				if g < len(s.Values) {
					v = s.Values[g]
				}
				if math.IsNaN(v) || math.IsInf(v, 0) {
					w.text(x+barW/2, p.bottom-4, `class="bar-missing" text-anchor="middle" font-size="9" fill="#777777"`, "n/a")
					continue
				}
				y := ys.at(v)
				w.raw(`<rect class="bar" data-series="%s" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
					esc(s.Name), num(x+1), num(y), num(math.Max(barW-2, 1)), num(p.bottom-y), esc(colors[i]),
					esc(fmt.Sprintf("%s, %s: %g", s.Name, name, v)))
				if c.Format != nil {
					w.text(x+barW/2, y-3, `text-anchor="middle" font-size="9" fill="#333333"`, c.Format(v))
				}
			}
			w.raw(`</g>`)
		}
	}
	if c.XLabel != "" {
		w.text((p.left+p.right)/2, p.bottom+32, `class="axis-label" text-anchor="middle" fill="#333333"`, c.XLabel)
	}
	w.legend(p.left, float64(height)-8, p.right, items)
	return w.close()
}
