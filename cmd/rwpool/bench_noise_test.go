package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
)

func TestRoundOrder(t *testing.T) {
	vs := []string{"a", "b", "c"}
	for i, want := range [][]string{{"a", "b", "c"}, {"b", "c", "a"}, {"c", "a", "b"}, {"a", "b", "c"}} {
		if got := roundOrder(vs, i); !slices.Equal(got, want) {
			t.Errorf("round %d: %v, want %v", i, got, want)
		}
	}
	if !slices.Equal(vs, []string{"a", "b", "c"}) {
		t.Errorf("roundOrder changed its argument: %v", vs)
	}
	if baseVariant("bare-again") != "bare" || baseVariant("rwpool") != "rwpool" || variantLabel("bare-again") != "bare (again)" {
		t.Error("bare-again is not bare measured again")
	}
}

func TestLatencyHist(t *testing.T) {
	us := time.Microsecond
	var h latencyHist
	h.addAll([]time.Duration{10 * us, 49 * us, 50 * us, 300 * us, time.Millisecond, 7 * time.Millisecond, time.Second})
	h.addAll(nil)
	if want := [7]int64{2, 1, 1, 1, 1, 0, 1}; h.n != want || h.total != 7 {
		t.Errorf("hist %v total %d, want %v total 7", h.n, h.total, want)
	}
	for n, want := range map[int64]string{0: "0", 1: "0.01%", 150: "1.5%", 2000: "20%"} {
		if got := share(n, 10000); got != want {
			t.Errorf("share(%d, 10000) = %q, want %q", n, got, want)
		}
	}
}

func TestSpread(t *testing.T) {
	s := spreadOf([]float64{1.1, 0.9, 1.0, 0.95})
	if s.med != 0.975 || s.lo != 0.9 || s.hi != 1.1 || s.ratio() != "0.97 (0.90–1.10)" && s.ratio() != "0.98 (0.90–1.10)" {
		t.Errorf("spread %+v, %s", s, s.ratio())
	}
	if got := spreadOf(nil).ratio(); got != "—" {
		t.Errorf("no rounds: %q", got)
	}
	if got := spreadOf([]float64{float64(2 * time.Millisecond)}).dur(); got != "2.00ms" {
		t.Errorf("one round: %q", got)
	}
}

func TestFiguresOf(t *testing.T) {
	r := loadResult{stmts: 4, elapsed: time.Second, lat: []time.Duration{1, 2, 3, 4}, perWorker: []int{1, 3}}
	f := figuresOf(r)
	if f.qps != 4 || f.p50 != 2 || f.p99 != 4 || f.minShare != 0.5 || f.maxShare != 1.5 {
		t.Errorf("%+v", f)
	}
}

func TestPoolDelta(t *testing.T) {
	before := &rwpool.Snapshot{Nodes: []rwpool.NodeStats{{Name: "primary", Served: 5}, {Name: "replica1", Served: 10, WaitCount: 1,
		WaitDuration: time.Millisecond, Dials: 2}}}
	after := &rwpool.Snapshot{Nodes: []rwpool.NodeStats{{Name: "primary", Served: 6}, {Name: "replica1", Served: 110, WaitCount: 4,
		WaitDuration: 5 * time.Millisecond, Dials: 3, Open: 8, MaxOpen: 100}}}
	got := poolDelta(before, after)
	want := poolFigures{node: "replica1", served: 100, waitCount: 3, waitDuration: 4 * time.Millisecond, dials: 1, open: 8, max: 100}
	if got == nil || *got != want {
		t.Errorf("poolDelta = %+v, want %+v", got, want)
	}
	if poolDelta(nil, after) != nil || poolStats(napReader{}) != nil {
		t.Error("pool figures for a variant that is not rwpool")
	}
}

// TestShimCostLeadsThroughput: benchstat/06-shim-cost.md leads the
// throughput section and is not repeated among the speed-ups.
func TestShimCostLeadsThroughput(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "benchstat"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"01-a.md": "### first\n", shimCostFile: "### shim cost\n\nfigures\n"} {
		if err := os.WriteFile(filepath.Join(root, "benchstat", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := sampleReport()
	r.changes, r.shimCost = loadChanges(root), loadShimCost(root)
	if len(r.changes) != 1 || r.shimCost != "### shim cost\n\nfigures" {
		t.Fatalf("changes %q, shim cost %q", r.changes, r.shimCost)
	}
	md := r.markdown()
	i, j, k := strings.Index(md, "## Throughput and latency"), strings.Index(md, "### shim cost"), strings.Index(md, "Variants:")
	if !(i >= 0 && i < j && j < k) || strings.Count(md, "### shim cost") != 1 {
		t.Errorf("the shim's cost does not lead the throughput section once:\n%s", md)
	}
	if !strings.Contains(md, "## Throughput and latency\n\nMeasured on 2026-01-02 03:04 UTC, in 7m0s (the whole run), with:\n\n    go run ./cmd/rwpool bench ") {
		t.Errorf("the throughput section does not say when and how it was measured:\n%s", md)
	}
	if loadShimCost(filepath.Join(root, "missing")) != "" {
		t.Error("a missing file gave a shim cost")
	}
}
