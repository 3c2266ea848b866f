package balance

import (
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

func TestObserveBusyNodeMovesByMinAlpha(t *testing.T) {
	var m Meter
	m.Observe(0, time.Millisecond)
	if got := m.Estimate(); got != time.Millisecond {
		t.Fatalf("first observation: estimate %s, want 1ms", got)
	}
	// A busy node (an observation every 100 µs) and one slow read.
	m.Observe(ms/10, 101*time.Millisecond)
	if got, want := m.Estimate(), 3*time.Millisecond; got != want {
		t.Fatalf("one slow read on a busy node: estimate %s, want %s (MinAlpha of the difference)", got, want)
	}
}

func TestObserveAfterQuietSpellReplaces(t *testing.T) {
	var m Meter
	m.Observe(0, 200*time.Millisecond)
	m.Observe(int64(ProbeEvery), time.Millisecond)
	if got := m.Estimate(); got != time.Millisecond {
		t.Fatalf("read after ProbeEvery of quiet: estimate %s, want 1ms (replaced)", got)
	}
	m.Observe(int64(ProbeEvery)+int64(ProbeEvery)/2, 201*time.Millisecond)
	if got, want := m.Estimate(), 51*time.Millisecond; got != want {
		t.Fatalf("read after half of ProbeEvery: estimate %s, want %s (alpha 1/4)", got, want)
	}
}

func TestClaimOncePerProbeEvery(t *testing.T) {
	var m Meter
	m.Observe(0, time.Second)
	now := int64(ProbeEvery) - 1
	if m.Claim(now) {
		t.Fatal("claimed before ProbeEvery without an observation")
	}
	now++
	if !m.Claim(now) || m.Claim(now) {
		t.Fatal("want exactly one claim at ProbeEvery")
	}
	if m.Claim(now+int64(ProbeEvery)-1) || !m.Claim(now+int64(ProbeEvery)) {
		t.Fatal("want the next claim ProbeEvery after the last")
	}
}

func TestCostCountsStallsOnly(t *testing.T) {
	var m Meter
	m.Observe(0, time.Millisecond)
	base := float64(time.Millisecond + Floor)
	if got := m.Cost(10 * ms); got != base {
		t.Fatalf("idle node: cost %g, want %g", got, base)
	}
	m.Start(10 * ms)
	m.Start(10 * ms)
	if got := m.Cost(10*ms + 4*ms + int64(Stall)); got != base {
		t.Fatalf("node silent within 4 × its estimate + Stall: cost %g, want %g", got, base)
	}
	now := 10*ms + 5*ms + int64(Stall)
	if got, want := m.Cost(now), float64(5*ms+int64(Stall)+int64(Floor)); got != want {
		t.Fatalf("stalled node: cost %g, want its silence + Floor, %g", got, want)
	}
	m.Done(now, 5*time.Millisecond+Stall, true)
	if m.InFlight() != 1 {
		t.Fatalf("in flight %d, want 1", m.InFlight())
	}
	// It answered: silence counts from then.
	if got := m.Cost(now + ms); got >= float64(Stall) {
		t.Fatalf("node that just answered: cost %g, want its estimate's", got)
	}
	m.Done(now, time.Millisecond, false) // broke: not measured
	if m.InFlight() != 0 {
		t.Fatalf("in flight %d, want 0", m.InFlight())
	}
}
