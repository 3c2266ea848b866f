package rwpool

import (
	"math/rand/v2"
	"testing"
)

// TestHedgeBudgetHolds drives the budget through two minutes of a steady
// load (each 100 ms slot's reads vary by ±20 %), of which a changing share
// would like a hedge (from none to all), and checks every 10 s window,
// slot by slot: none has more hedges than the budget's share of its reads
// (plus the one hedge a window's first second may owe to reads before it).
func TestHedgeBudgetHolds(t *testing.T) {
	for _, share := range []float64{0.10, 0.30} {
		b := hedgeBudget{share: share}
		rng := rand.New(rand.NewPCG(1, uint64(share*100)))
		const slots = 1200
		var reads, hedges [slots]int64
		start := int64(17_000_000_000)
		want := 0.5
		for s := range int64(slots) {
			if s%50 == 0 {
				want = rng.Float64() // share of the reads that would like a hedge
			}
			for range 24 + rng.IntN(13) {
				b.read(start + s)
				reads[s]++
				if rng.Float64() < want && b.allow(start+s) {
					hedges[s]++
				}
			}
		}
		var total, wanted int64
		for s := range slots {
			total += hedges[s]
			wanted += reads[s]
		}
		if float64(total) < share*float64(wanted)*0.5 {
			t.Errorf("share %.0f%%: only %d hedges allowed for %d reads", share*100, total, wanted)
		}
		worst := 0.0
		for s := 0; s+hedgeSlots <= slots; s++ {
			var r, h int64
			for i := s; i < s+hedgeSlots; i++ {
				r += reads[i]
				h += hedges[i]
			}
			worst = max(worst, float64(h)/float64(r))
			if float64(h) > share*float64(r)+1 {
				t.Errorf("share %.0f%%: slots %d..%d: %d hedges for %d reads (%.2f%%)", share*100, s, s+hedgeSlots-1, h, r, 100*float64(h)/float64(r))
			}
		}
		t.Logf("share %.0f%%: %d hedges for %d reads; worst 10 s window %.2f%%", share*100, total, wanted, worst*100)
	}
}

// TestHedgeBudgetForgets: reads older than the window no longer pay for
// hedges, and a burst cannot spend in one second what ten allow.
func TestHedgeBudgetForgets(t *testing.T) {
	b := hedgeBudget{share: 0.5}
	for range 100 {
		b.read(100)
	}
	if !b.allow(105) {
		t.Fatal("a hedge half a second after 100 reads was refused")
	}
	if b.allow(100 + hedgeSlots) {
		t.Fatal("a hedge was allowed by reads that left the window")
	}
	b = hedgeBudget{share: 0.1}
	for s := range int64(hedgeSlots) {
		for range 10 {
			b.read(1000 + s)
		}
	}
	// 1000 reads over 10 s allow 100 hedges, but the last second's 100
	// reads only 10 of them, and one more.
	n := 0
	for b.allow(1000 + hedgeSlots - 1) {
		n++
	}
	if n != 11 {
		t.Fatalf("a burst got %d hedges in one slot, want 11", n)
	}
}

// A steady low read rate gets its share too: 5 reads a second for 10 s
// at a 10 % budget allow a hedge.
func TestHedgeBudgetLowRate(t *testing.T) {
	b := hedgeBudget{share: 0.10}
	const start = int64(17_000_000_000)
	for s := range int64(hedgeSlots) {
		if s%2 == 0 {
			b.read(start + s)
		}
	}
	if !b.allow(start + hedgeSlots - 1) {
		t.Fatal("50 reads over 10 s at hedge_budget=10% allow no hedge at all")
	}
}
