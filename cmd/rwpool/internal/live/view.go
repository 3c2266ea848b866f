package live

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Frame is everything one refresh shows.
type Frame struct {
	Title    string        // first line, e.g. "rwpool demo: 3 embedded MySQL servers"
	Elapsed  time.Duration // since the workload started
	Duration time.Duration // planned run time
	Step     string        // scenario step now running
	Nodes    []NodeRow
	Totals   Totals
	Replays  int64 // sum of rwpool's per-node Replays
	Fallback int64 // sum of rwpool's per-node Fallbacks
}

// NodeRow is one node's line.
type NodeRow struct {
	Name, Role, State string
	Available         bool
	Down              time.Duration // how long it has been unavailable
	Share             float64       // share of the statements of the interval, 0..1
	Latency           Latency       // this interval
	Open, InUse, Max  int
	Served, Errors    int64
	Trips             int64
	Note              string // e.g. the fault injected on its proxy
}

// View draws frames on w. With ANSI set it redraws the previous frame in
// place (for a terminal); without, it prints each frame as one plain line
// per node under a header line, for logs and pipes.
type View struct {
	mu    sync.Mutex
	w     io.Writer
	ansi  bool
	width func() int // terminal width, 0 if unknown (ANSI)
	lines int        // lines of the frame on screen (ANSI)
	last  []string   // recent events (ANSI)
}

// NewView returns a View writing to w. For ANSI, width returns the
// terminal's width (0 if unknown): longer lines are cut, since a wrapped
// line would break the redraw in place.
func NewView(w io.Writer, ansi bool, width func() int) *View {
	if width == nil {
		width = func() int { return 0 }
	}
	return &View{w: w, ansi: ansi, width: width}
}

const maxEvents = 6

// Event reports a node transition or scenario step as it happens: printed
// at once in plain mode, shown under the next frames in ANSI mode.
func (v *View) Event(elapsed time.Duration, msg string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	line := fmt.Sprintf("%7s  %s", fmtElapsed(elapsed), msg)
	if !v.ansi {
		fmt.Fprintln(v.w, "event "+line)
		return
	}
	v.last = append(v.last, line)
	if len(v.last) > maxEvents {
		v.last = v.last[len(v.last)-maxEvents:]
	}
}

// Draw renders f.
func (v *View) Draw(f Frame) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ansi {
		v.drawANSI(f)
	} else {
		v.drawPlain(f)
	}
}

// Close ends the live display: the last frame stays on screen.
func (v *View) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ansi {
		fmt.Fprint(v.w, "\x1b[?25h") // show the cursor again
	}
	v.lines = 0
}

const (
	bold  = "\x1b[1m"
	dim   = "\x1b[2m"
	red   = "\x1b[31m"
	green = "\x1b[32m"
	amber = "\x1b[33m"
	reset = "\x1b[0m"
)

func (v *View) drawANSI(f Frame) {
	var b strings.Builder
	if v.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dF", v.lines) // back to the frame's first line
	} else {
		b.WriteString("\x1b[?25l") // hide the cursor while live
	}
	b.WriteString("\x1b[J") // clear to the end of the screen
	fmt.Fprintf(&b, "%s%s%s  %s / %s\n", bold, f.Title, reset, fmtElapsed(f.Elapsed), fmtElapsed(f.Duration))
	fmt.Fprintf(&b, "step: %s%s%s\n\n", amber, f.Step, reset)

	nw := len("NODE")
	for _, n := range f.Nodes {
		nw = max(nw, len(n.Name))
	}
	fmt.Fprintf(&b, "%s%-*s  %-7s  %-12s  %5s  %8s  %8s  %-18s  %9s  %7s  %5s%s\n", dim, nw, "NODE", "ROLE", "STATE",
		"SHARE", "P50", "P99", "POOL open/use/max", "SERVED", "ERRORS", "TRIPS", reset)
	for _, n := range f.Nodes {
		col := green
		if !n.Available {
			col = red + bold
		}
		// Pad before colouring: escape codes have no width.
		fmt.Fprintf(&b, "%-*s  %-7s  %s%-12s%s  %5s  %8s  %8s  %-18s  %9d  %7d  %5d  %s\n",
			nw, n.Name, n.Role, col, stateText(n), reset, shareText(n.Share),
			latText(n.Latency, false), latText(n.Latency, true),
			fmt.Sprintf("%d / %d / %d", n.Open, n.InUse, n.Max), n.Served, n.Errors, n.Trips, n.Note)
	}
	tt := f.Totals
	fmt.Fprintf(&b, "\nok %s%d%s (reads %d, writes %d)   failed %s%d%s (reads %d, writes %d, %d fail-fast ErrUnavailable)   replays %d   fallbacks %d   read timeouts retried %d\n",
		green, tt.OK(), reset, tt.ReadsOK, tt.WritesOK, failColour(tt.Failed()), tt.Failed(), reset,
		tt.ReadsFailed, tt.WritesFailed, tt.WritesUnavailable, f.Replays, f.Fallback, tt.ReadTimeouts)
	if len(v.last) > 0 {
		fmt.Fprintf(&b, "\n%srecent events:%s\n", dim, reset)
		for _, e := range v.last {
			b.WriteString(e + "\n")
		}
	}
	out := b.String()
	if w := v.width(); w > 0 {
		lines := strings.SplitAfter(out, "\n")
		for i, l := range lines {
			lines[i] = truncate(l, w-1)
		}
		out = strings.Join(lines, "")
	}
	v.lines = strings.Count(out, "\n")
	io.WriteString(v.w, out)
}

func failColour(n int64) string {
	if n > 0 {
		return red
	}
	return green
}

func (v *View) drawPlain(f Frame) {
	var b strings.Builder
	tt := f.Totals
	fmt.Fprintf(&b, "[%s] step: %s | ok %d (reads %d, writes %d) failed %d (reads %d, writes %d, fail-fast %d) replays %d fallbacks %d read-timeouts-retried %d\n",
		fmtElapsed(f.Elapsed), f.Step, tt.OK(), tt.ReadsOK, tt.WritesOK, tt.Failed(), tt.ReadsFailed, tt.WritesFailed,
		tt.WritesUnavailable, f.Replays, f.Fallback, tt.ReadTimeouts)
	for _, n := range f.Nodes {
		fmt.Fprintf(&b, "    %-9s %-7s %-11s share %4s  p50 %7s  p99 %7s  pool %d/%d/%d  served %d  errors %d  trips %d%s\n",
			n.Name, n.Role, stateText(n), shareText(n.Share), latText(n.Latency, false), latText(n.Latency, true),
			n.Open, n.InUse, n.Max, n.Served, n.Errors, n.Trips, noteText(n.Note))
	}
	io.WriteString(v.w, b.String())
}

func noteText(s string) string {
	if s == "" {
		return ""
	}
	return "  " + s
}

func stateText(n NodeRow) string {
	if n.Available {
		return "available"
	}
	return "DOWN " + fmtElapsed(n.Down)
}

func shareText(s float64) string { return fmt.Sprintf("%.0f%%", 100*s) }

func latText(l Latency, p99 bool) string {
	if l.N == 0 {
		return "-"
	}
	if p99 {
		return FmtDur(l.P99)
	}
	return FmtDur(l.P50)
}

// FmtDur formats a duration for people: 850µs, 12.3ms, 1.25s.
func FmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func fmtElapsed(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// truncate cuts line (which may end in a newline) to width visible
// characters; ANSI escape sequences take no width and are kept, and the
// colour is reset where the line is cut.
func truncate(line string, width int) string {
	nl := strings.HasSuffix(line, "\n")
	body := strings.TrimSuffix(line, "\n")
	var b strings.Builder
	vis := 0
	cut := false
	for i := 0; i < len(body); {
		if body[i] == 0x1b {
			// ESC [ parameters final-byte
			j := i + 1
			if j < len(body) && body[j] == '[' {
				j++
				for j < len(body) && (body[j] < 0x40 || body[j] > 0x7e) {
					j++
				}
				j++
			}
			j = min(j, len(body))
			b.WriteString(body[i:j])
			i = j
			continue
		}
		if vis == width {
			cut = true
			break
		}
		_, size := utf8.DecodeRuneInString(body[i:])
		b.WriteString(body[i : i+size])
		i += size
		vis++
	}
	if cut {
		b.WriteString(reset)
	}
	if nl {
		b.WriteString("\n")
	}
	return b.String()
}
