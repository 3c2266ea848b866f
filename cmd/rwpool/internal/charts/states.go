package charts

import (
	"fmt"
	"math"
)

// StateSpan is a range of X during which a row was in State.
type StateSpan struct {
	From, To float64
	State    string
}

// StateRow is one band of a States chart (a node).
type StateRow struct {
	Name  string
	Spans []StateSpan
}

// States draws one horizontal band per row, coloured by state over time,
// with the same markers and spans as a Timeline, labelled by tooltips
// only: text over the bands would hide them.
type States struct {
	Title  string
	XLabel string
	Width  int // default 900; the height follows from the rows
	Rows   []StateRow
	// Colors maps a state to its colour; rwpool's states (available,
	// lagging, unavailable) default to green, amber and red, others get
	// the palette's colours in order of appearance.
	Colors     map[string]string
	Markers    []Marker
	Spans      []Span
	XMin, XMax float64 // the x range when XMax > XMin; otherwise the spans'
}

// stateColor is the default colour of rwpool's node states.
func stateColor(state string) (string, bool) {
	switch state {
	case "available":
		return "#2ca02c", true
	case "lagging":
		return "#ffbf00", true
	case "unavailable":
		return "#d62728", true
	case "unknown":
		return "#bbbbbb", true
	}
	return "", false
}

// SVG renders the chart.
func (c States) SVG() []byte {
	const rowH, gap = 26.0, 8.0
	width, _ := dims(c.Width, 0, 900, 0)
	top := 30.0
	height := int(top + float64(len(c.Rows))*(rowH+gap) + 62)
	var w svgWriter
	w.open(width, height, c.Title)
	p := plotArea{left: 90, top: top, right: float64(width) - 20, bottom: float64(height) - 62}

	xlo, xhi := c.XMin, c.XMax
	if !(xhi > xlo) {
		xlo, xhi = math.Inf(1), math.Inf(-1)
		for _, r := range c.Rows {
			for _, s := range r.Spans {
				xlo, xhi = math.Min(xlo, s.From), math.Max(xhi, s.To)
			}
		}
		if math.IsInf(xlo, 0) {
			xlo, xhi = 0, 1
		}
	}
	xs := scale{xlo, xhi, p.left, p.right}
	xt, _, _ := niceTicks(xlo, xhi, 10)
	w.spans(p, xs, c.Spans, false)
	w.xAxis(p, xs, within(xt, xlo, xhi), c.XLabel, true)

	colors := map[string]string{}
	var order []string
	color := func(state string) string {
		if col, ok := colors[state]; ok {
			return col
		}
		col, ok := c.Colors[state]
		if !ok {
			col, ok = stateColor(state)
		}
		if !ok {
			col = Color(len(colors))
		}
		colors[state] = col
		order = append(order, state)
		return col
	}
	for i, r := range c.Rows {
		y := p.top + gap/2 + float64(i)*(rowH+gap)
		w.raw(`<g class="state-row" data-name="%s">`, esc(r.Name))
		w.text(p.left-6, y+rowH/2+4, `text-anchor="end" fill="#333333"`, r.Name)
		for _, s := range r.Spans {
			from, to := math.Max(xs.at(s.From), p.left), math.Min(xs.at(s.To), p.right)
			if to <= from {
				continue
			}
			w.raw(`<rect class="state" data-state="%s" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
				esc(s.State), num(from), num(y), num(to-from), num(rowH), esc(color(s.State)),
				esc(fmt.Sprintf("%s %s from %.1f to %.1f", r.Name, s.State, s.From, s.To)))
		}
		w.raw(`</g>`)
	}
	w.markers(p, xs, c.Markers, false)
	var items []legendItem
	for _, s := range order {
		items = append(items, legendItem{s, colors[s]})
	}
	w.legend(p.left, float64(height)-8, p.right, items)
	return w.close()
}
