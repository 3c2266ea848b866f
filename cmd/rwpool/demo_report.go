package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rwpool/rwpool/cmd/rwpool/internal/live"
	"github.com/rwpool/rwpool/cmd/rwpool/internal/workload"
	"github.com/rwpool/rwpool/health"
)

// report is the summary printed at the end of the demo.
func (d *demo) report(end time.Time) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	t := d.col.Totals()
	ran := end.Sub(d.start).Round(100 * time.Millisecond)
	fmt.Fprintf(&b, "=== What happened: %s, %d goroutines, %.0f%% reads ===\n", ran, d.o.goroutines, 100*d.o.mix)

	if d.cluster != nil {
		b.WriteString("\nScenario (time since the workload started)\n")
		for _, s := range d.steps {
			fmt.Fprintf(&b, "  %7s  %s", fmtSecs(s.at), s.title)
			if s.err != nil {
				fmt.Fprintf(&b, " (FAILED: %s)", oneLine(s.err.Error()))
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "  %7s  end\n", fmtSecs(end.Sub(d.start)))
	}

	snap := d.lastSnap
	var replays, fallbacks int64
	for _, n := range snap.Nodes {
		replays += n.Replays
		fallbacks += n.Fallbacks
	}
	b.WriteString("\nRequests\n")
	fmt.Fprintf(&b, "  reads:  %d ok, %d failed\n", t.ReadsOK, t.ReadsFailed)
	fmt.Fprintf(&b, "          %d replayed by rwpool on another node after a connection-level failure (%d succeeded there)\n", replays, t.Replayed)
	fmt.Fprintf(&b, "          %d attempts timed out on a node that stopped answering and were run again by the workload\n", t.ReadTimeouts)
	fmt.Fprintf(&b, "          %d served by the primary as a fallback while no replica was available\n", fallbacks)
	fmt.Fprintf(&b, "  writes: %d ok, %d failed\n", t.WritesOK, t.WritesFailed)
	d.reportFailures(&b)
	if t.Checked > 0 {
		if t.Mismatched == 0 {
			fmt.Fprintf(&b, "  routing check: each of the %d reads was answered by the very server rwpool.WithRoute named (each server reports its own name): 0 mismatches\n", t.Checked)
		} else {
			fmt.Fprintf(&b, "  routing check: %d of %d reads were answered by another server than rwpool.WithRoute named; first: %s\n", t.Mismatched, t.Checked, t.Mismatch)
		}
	}
	var served int64
	for _, n := range snap.Nodes {
		served += n.Served
	}
	if served > 0 {
		var parts []string
		for _, n := range snap.Nodes {
			parts = append(parts, fmt.Sprintf("%s %d (%.0f%%)", n.Name, n.Served, 100*float64(n.Served)/float64(served)))
		}
		fmt.Fprintf(&b, "  statements per node: %s\n", strings.Join(parts, ", "))
	}

	if len(d.faults) > 0 {
		b.WriteString("\nFailover: how fast traffic moved away from each failed node\n")
		for _, f := range d.faults {
			b.WriteString("  " + d.failoverLine(f, end) + "\n")
		}
		b.WriteString("\nRecovery: how fast each node came back\n")
		for _, f := range d.faults {
			b.WriteString("  " + d.recoveryLine(f, end) + "\n")
		}
		fmt.Fprintf(&b, "  (statement times are sampled from rwpool.Stats every %s; trip and recovery times are rwpool's events)\n", sampleEvery)
	}

	b.WriteString("\nNode events (rwpool.WithEventHandler)\n")
	if len(d.events) == 0 {
		b.WriteString("  none: every node stayed available\n")
	}
	for _, e := range d.events {
		fmt.Fprintf(&b, "  %7s  %s\n", fmtSecs(e.At.Sub(d.start)), describeEvent(e))
	}
	if d.cluster != nil {
		var behind int64
		for _, r := range d.cluster.Replicas {
			behind += d.cluster.Behind(r.Name)
		}
		fmt.Fprintf(&b, "\nReplication: the primary logged %d statements; the replicas are %d behind at the end\n",
			d.cluster.Logged(), behind)
	}
	return b.String()
}

// reportFailures explains the failed operations: writes failed fast while
// the primary was down, and anything else grouped by message.
func (d *demo) reportFailures(b *strings.Builder) {
	var fast []time.Duration
	var fastFirst, fastLast time.Time
	other := map[string]int{}
	otherWhen := map[string]string{}
	for _, f := range d.failures {
		if f.kind == workload.Write && f.unavailable {
			fast = append(fast, f.latency)
			if fastFirst.IsZero() || f.at.Before(fastFirst) {
				fastFirst = f.at
			}
			if f.at.After(fastLast) {
				fastLast = f.at
			}
			continue
		}
		key := f.kind.String() + ": " + shorten(f.err, 160)
		other[key]++
		if _, ok := otherWhen[key]; !ok {
			otherWhen[key] = d.whereIn(f.end)
		}
	}
	if len(fast) > 0 {
		slices.Sort(fast)
		fmt.Fprintf(b, "          %d failed fast with rwpool.ErrUnavailable while the primary was down (%s to %s): latency p50 %s, max %s\n",
			len(fast), fmtSecs(fastFirst.Sub(d.start)), fmtSecs(fastLast.Sub(d.start)),
			live.FmtDur(fast[len(fast)/2]), live.FmtDur(fast[len(fast)-1]))
	}
	keys := slices.Collect(maps.Keys(other))
	sort.Slice(keys, func(i, j int) bool { return other[keys[i]] > other[keys[j]] })
	for _, k := range keys {
		fmt.Fprintf(b, "          %d failed %s: %s\n", other[k], otherWhen[k], k)
	}
}

// whereIn says in which fault window t (when an operation failed) falls,
// for the failure report.
func (d *demo) whereIn(t time.Time) string {
	for _, f := range d.faults {
		to := f.to
		if to.IsZero() {
			to = t.Add(time.Second)
		}
		if !t.Before(f.from) && t.Before(to) {
			trip := d.firstEvent(f.node, health.Unavailable, f.from)
			if !trip.IsZero() && t.Before(trip) {
				return fmt.Sprintf("while %s was %s, before rwpool tripped it", f.node, f.kind)
			}
			return fmt.Sprintf("while %s was %s", f.node, f.kind)
		}
	}
	return "outside any injected fault"
}

// firstEvent returns when node first moved to state at or after from.
func (d *demo) firstEvent(node string, to health.State, from time.Time) time.Time {
	for _, e := range d.events {
		if e.Node == node && e.To == to && !e.At.Before(from) {
			return e.At
		}
	}
	return time.Time{}
}

// failoverLine tells how fast a fault moved traffic away from its node.
func (d *demo) failoverLine(f *faultWindow, end time.Time) string {
	to := f.to
	if to.IsZero() {
		to = end
	}
	s := fmt.Sprintf("%-8s %s at %s: ", f.node, f.kind, fmtSecs(f.from.Sub(d.start)))
	trip := d.firstEvent(f.node, health.Unavailable, f.from)
	if trip.IsZero() || !trip.Before(to) {
		s += "NOT tripped before it was restored"
	} else {
		s += "tripped after " + live.FmtDur(trip.Sub(f.from))
	}
	var last time.Time
	for _, t := range d.served[f.node] {
		if !t.Before(f.from) && t.Before(to) {
			last = t
		}
	}
	if last.IsZero() {
		s += "; it received no statement after the fault"
	} else {
		s += "; last statement to get a connection to it " + live.FmtDur(last.Sub(f.from)) + " after the fault"
	}
	if f.node == "primary" {
		s += "; writes then failed fast, reads went on on the replicas"
	} else {
		s += "; its reads went to the other nodes"
	}
	return s
}

// recoveryLine tells how fast a node came back after its restore.
func (d *demo) recoveryLine(f *faultWindow, end time.Time) string {
	s := fmt.Sprintf("%-8s ", f.node)
	if f.to.IsZero() {
		return s + "was not restored before the end"
	}
	s += fmt.Sprintf("restored at %s: ", fmtSecs(f.to.Sub(d.start)))
	back := d.firstEvent(f.node, health.Available, f.to)
	if back.IsZero() {
		s += "NOT available again before the end"
	} else {
		s += "available again after " + live.FmtDur(back.Sub(f.to))
	}
	var first time.Time
	for _, t := range d.served[f.node] {
		if !t.Before(f.to) {
			first = t
			break
		}
	}
	if first.IsZero() {
		s += "; no statement served before the end"
	} else {
		s += "; first statement served " + live.FmtDur(first.Sub(f.to)) + " after the restore"
	}
	return s
}

func fmtSecs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
