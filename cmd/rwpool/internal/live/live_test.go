package live

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/cmd/rwpool/internal/workload"
)

func TestCollector(t *testing.T) {
	c := NewCollector()
	for i := 1; i <= 100; i++ {
		c.Record(workload.Attempt{Kind: workload.Read, Node: "replica1", ServedBy: "replica1", Latency: time.Duration(i) * time.Millisecond})
	}
	c.Record(workload.Attempt{Kind: workload.Read, Node: "replica2", ServedBy: "primary", Latency: time.Millisecond})
	c.Record(workload.Attempt{Kind: workload.Read, Node: "replica2", Replays: 1, Latency: time.Millisecond})
	c.Record(workload.Attempt{Kind: workload.Read, Node: "replica2", Retried: true, Timeout: true,
		Err: errors.New("deadline"), Latency: time.Second})
	c.Record(workload.Attempt{Kind: workload.Read, Err: errors.New("boom")})
	c.Record(workload.Attempt{Kind: workload.Write, Node: "primary", Latency: 2 * time.Millisecond})
	for _, d := range []time.Duration{10, 20, 30} {
		c.Record(workload.Attempt{Kind: workload.Write, Latency: d * time.Microsecond,
			Err: fmt.Errorf("rwpool: node primary: %w", rwpool.ErrUnavailable)})
	}
	c.Record(workload.Attempt{Kind: workload.Write, Node: "primary", Err: errors.New("reset")})

	tot := c.Totals()
	check := func(name string, got, want int64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	check("ReadsOK", tot.ReadsOK, 102)
	check("ReadsFailed", tot.ReadsFailed, 1)
	check("WritesOK", tot.WritesOK, 1)
	check("WritesFailed", tot.WritesFailed, 4)
	check("WritesUnavailable", tot.WritesUnavailable, 3)
	check("ReadTimeouts", tot.ReadTimeouts, 1)
	check("Replayed", tot.Replayed, 1)
	check("Checked", tot.Checked, 101)
	check("Mismatched", tot.Mismatched, 1)
	check("OK", tot.OK(), 103)
	check("Failed", tot.Failed(), 5)
	if tot.UnavailableP50 != 20*time.Microsecond || tot.UnavailableMax != 30*time.Microsecond {
		t.Errorf("fail-fast latency p50 %s max %s", tot.UnavailableP50, tot.UnavailableMax)
	}
	if tot.Mismatch != "rwpool.Route says replica2, the server says primary" {
		t.Errorf("Mismatch = %q", tot.Mismatch)
	}
	if tot.Errors["read: boom"] != 1 || tot.Errors["write: reset"] != 1 || len(tot.Errors) != 2 {
		t.Errorf("Errors = %v", tot.Errors)
	}

	lat := c.Interval()
	if l := lat["replica1"]; l.N != 100 || l.P50 != 50*time.Millisecond || l.P99 != 99*time.Millisecond {
		t.Errorf("replica1 latency %+v", l)
	}
	if l := lat["replica2"]; l.N != 3 || l.P99 != time.Second {
		t.Errorf("replica2 latency %+v", l)
	}
	if len(c.Interval()) != 0 {
		t.Error("Interval does not start a new interval")
	}
}

func frame() Frame {
	return Frame{
		Title: "rwpool demo", Elapsed: 3 * time.Second, Duration: 30 * time.Second, Step: "kill replica1",
		Nodes: []NodeRow{
			{Name: "primary", Role: "primary", Available: true, Share: 0.1, Latency: Latency{N: 5, P50: 800 * time.Microsecond, P99: 12 * time.Millisecond},
				Open: 3, InUse: 1, Max: 16, Served: 100},
			{Name: "replica1", Role: "replica", Down: 1500 * time.Millisecond, Note: "proxy: kill", Open: 0, Max: 16, Trips: 1},
		},
		Totals: Totals{ReadsOK: 90, WritesOK: 10},
	}
}

func TestViewPlain(t *testing.T) {
	var b bytes.Buffer
	v := NewView(&b, false, nil)
	v.Event(2*time.Second, "replica1 (replica) -> UNAVAILABLE: refused")
	v.Draw(frame())
	v.Close()
	out := b.String()
	for _, want := range []string{
		"event    2.0s  replica1 (replica) -> UNAVAILABLE: refused\n",
		"[3.0s] step: kill replica1 | ok 100 (reads 90, writes 10) failed 0",
		"    primary   primary available   share  10%  p50   800µs  p99  12.0ms  pool 3/1/16  served 100",
		"    replica1  replica DOWN 1.5s   share   0%  p50       -  p99       -  pool 0/0/16  served 0  errors 0  trips 1  proxy: kill",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Error("escape codes in plain output")
	}
}

func TestViewANSI(t *testing.T) {
	var b bytes.Buffer
	v := NewView(&b, true, func() int { return 60 })
	v.Event(2*time.Second, "replica1 (replica) -> UNAVAILABLE: "+strings.Repeat("x", 200))
	v.Draw(frame())
	first := b.String()
	if !strings.HasPrefix(first, "\x1b[?25l\x1b[J") {
		t.Errorf("first frame does not hide the cursor and clear: %q", first[:min(20, len(first))])
	}
	lines := strings.Count(first, "\n")
	for _, l := range strings.Split(first, "\n") {
		if w := visibleWidth(l); w > 59 {
			t.Errorf("line of width %d on a 60-column terminal: %q", w, l)
		}
	}
	b.Reset()
	v.Draw(frame())
	if want := fmt.Sprintf("\x1b[%dF\x1b[J", lines); !strings.HasPrefix(b.String(), want) {
		t.Errorf("second frame does not go back %d lines: %q", lines, b.String()[:20])
	}
	b.Reset()
	v.Close()
	if b.String() != "\x1b[?25h" {
		t.Errorf("Close wrote %q", b.String())
	}
}

// visibleWidth counts the runes of s outside escape sequences.
func visibleWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j + 1
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return n
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"short\n", 10, "short\n"},
		{"0123456789abc\n", 10, "0123456789" + reset + "\n"},
		{red + "0123456789abc" + reset, 4, red + "0123" + reset},
		{"µµµµµ", 3, "µµµ" + reset},
	} {
		if got := truncate(tc.in, tc.width); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}

func TestFmtDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		850 * time.Microsecond:  "850µs",
		2500 * time.Microsecond: "2.50ms",
		123 * time.Millisecond:  "123.0ms",
		1250 * time.Millisecond: "1.25s",
	} {
		if got := FmtDur(d); got != want {
			t.Errorf("FmtDur(%s) = %q, want %q", d, got, want)
		}
	}
}
