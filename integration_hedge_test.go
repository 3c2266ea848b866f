package rwpool_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
)

// TestFaultHangReplicaHedged is issue #16's hedging target: replica1 holds
// a quarter of the reads (weights 1:3) and hangs (SIGSTOP) under 8 readers
// whose reads carry 1 s deadlines, with hedge_after=50ms and
// hedge_budget=30%. Reads on it are answered by their hedges: none fails,
// none takes more than 500 ms, and the p99 over the whole hang is under
// 150 ms.
//
// A 500 ms bound measures rwpool only while the machine runs what it is
// asked to. The shared 2-core CI machine sometimes does not: in CI runs
// that failed this test, every call in flight when the SIGSTOP landed took
// 0.6-1 s, dials to the healthy replica included. So a round in which the
// test's own goroutines were held up (hangWindow.stall: a ticker's worst
// lateness) for more than hedgeStall is not judged, and the test runs
// another, at most hedgeRounds in all; if every round stalled, it fails.
// (It used to judge by how long hang-node, a shell script, took; in one CI
// run that took 0.55-1.6 s in all six rounds while the slowest call of
// the hang took 57-64 ms: the script is slow on a loaded machine, the
// goroutines were not.) An implementation that stalls the machine itself
// (a spinning retry, say) stalls every round and fails; one that misses
// the bound misses it in the round that is judged.
func TestFaultHangReplicaHedged(t *testing.T) {
	const (
		longest     = 500 * time.Millisecond
		hedgeRounds = 3
	)
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		for round := 1; round <= hedgeRounds; round++ {
			w := hedgedHang(t, cl, longest)
			if w.stall <= hedgeStall {
				return
			}
			t.Logf("%s: round %d not judged: the test's goroutines were held up %s (more than %s): the machine stalled",
				cl.Name, round, w.stall.Round(time.Millisecond), hedgeStall)
		}
		t.Errorf("the machine stalled in each of %d rounds (goroutines held up more than %s): nothing measured", hedgeRounds, hedgeStall)
	})
}

// hedgeStall is how long the test's goroutines may be held up (a
// ticker's lateness) in a round that is judged.
const hedgeStall = 200 * time.Millisecond

// hedgedHang runs one round of TestFaultHangReplicaHedged and judges it
// unless the machine stalled (hangWindow.stall over hedgeStall).
func hedgedHang(t *testing.T, cl *cluster, longest time.Duration) hangWindow {
	db := cl.open(t, "hedge_after=50ms;hedge_budget=30%", 1, 3)
	defer db.Close()
	r1 := cl.Replicas[0]
	seen := newSightings()
	l := startLoadTimeout(t, db, 8, time.Second, cl.readFn(db, seen))
	warmUp(t, cl, db, seen)

	w := cl.hangNode(t, l, r1, 4*time.Second, longest)
	res := l.stop()

	var zero time.Time
	st := nodeStats(t, db, "replica1")
	t.Logf("%s: whole run: %s", cl.Name, res.summary(zero, zero))
	t.Logf("%s: hang..resume: %s", cl.Name, res.summary(w.hung, w.resume))
	t.Logf("%s: replica1: %d reads hedged, %d hedges won, %d refused; longest in flight while hung %s; hang-node took %s; goroutines held up at most %s",
		cl.Name, st.Hedges, st.HedgeWins, st.HedgesRefused, w.oldest.Round(time.Millisecond), w.command.Round(time.Millisecond), w.stall.Round(time.Millisecond))
	if w.stall > hedgeStall {
		return w
	}
	if errs := res.failures(zero, zero); len(errs) > 0 {
		t.Errorf("%d reads failed, want 0: %s", len(errs), errSummary(errs, 3))
	}
	noCallOver(t, res, w, longest)
	if p := res.p99(w.hung, w.resume); p >= 150*time.Millisecond {
		t.Errorf("p99 over the hang %s, want < 150ms", p)
	}
	if st.HedgeWins == 0 {
		t.Errorf("no hedge of a read on the hung replica won")
	}
	return w
}

// slowOn returns a read that answers the port of the server that runs it,
// after sleeping secs on the server listening on port only.
func slowOn(cl *cluster, port string, secs float64) string {
	if cl.Name == "mariadb" {
		return fmt.Sprintf("SELECT CAST(@@port AS CHAR), SLEEP(IF(@@port = %s, %g, 0))", port, secs)
	}
	return fmt.Sprintf("SELECT inet_server_port()::text, pg_sleep(CASE WHEN inet_server_port() = %s THEN %g ELSE 0 END)", port, secs)
}

// hedgeLoad runs 8 readers of q for d and samples, every 100 ms, the reads
// issued and the hedges started (NodeStats.Hedges, all nodes) so far.
func hedgeLoad(t *testing.T, db *sql.DB, q string, d time.Duration) (reads, hedges []int64, res results) {
	var issued atomic.Int64
	l := startLoadTimeout(t, db, 8, 5*time.Second, func(ctx context.Context, _ int) error {
		issued.Add(1)
		var port string
		var ignored any
		return db.QueryRowContext(ctx, q).Scan(&port, &ignored)
	})
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
		s, err := rwpool.Stats(db)
		if err != nil {
			t.Fatal(err)
		}
		var h int64
		for _, n := range s.Nodes {
			h += n.Hedges
		}
		reads, hedges = append(reads, issued.Load()), append(hedges, h)
	}
	return reads, hedges, l.stop()
}

// TestHedgeBudgetOnCluster: replica1 answers every read 100 ms late (the
// read sleeps there), so every read it gets (half of them) would like a
// hedge after hedge_after=20ms; with hedge_budget=10% no 10 s window has
// more than 10 % of its reads hedged (plus what the test's sampling cannot
// tell apart: one of rwpool's 100 ms slots).
func TestHedgeBudgetOnCluster(t *testing.T) {
	const hedgeSlots = 100 // rwpool's budget: 100 slots of 100 ms
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "hedge_after=20ms;hedge_budget=10%")
		reads, hedges, res := hedgeLoad(t, db, slowOn(cl, portOf(cl.Replicas[0]), 0.1), 13*time.Second)
		var zero time.Time
		if errs := res.failures(zero, zero); len(errs) > 0 {
			t.Errorf("%d reads failed: %s", len(errs), errSummary(errs, 3))
		}
		worst := 0.0
		const window = 100 // samples: 10 s
		for i := 0; i+window < len(reads); i++ {
			r, h := reads[i+window]-reads[i], hedges[i+window]-hedges[i]
			if r == 0 {
				t.Fatalf("no read in 10 s")
			}
			share := float64(h) / float64(r)
			worst = max(worst, share)
			// The test's window runs from one of its own ticks to
			// another, which rwpool's 100 ms slots do not line up with:
			// it overlaps 101 of them, and the budget holds the share
			// exactly over any 100. So the window may hold one slot's
			// hedges more: the share of a slot's reads, plus one (a
			// CI run measured 153 of 1529, 10.006 %).
			if float64(h) > 0.10*float64(r)*(hedgeSlots+1)/hedgeSlots+1 {
				t.Errorf("10 s window from %.1fs: %d of %d reads hedged (%.1f%%), want at most 10%%", float64(i)/10, h, r, 100*share)
			}
		}
		last := len(reads) - 1
		t.Logf("%s: %d reads, %d hedged (%.1f%%); worst 10 s window %.2f%%; %s", cl.Name, reads[last], hedges[last],
			100*float64(hedges[last])/float64(reads[last]), 100*worst, res.summary(zero, zero))
		if hedges[last] == 0 {
			t.Errorf("nothing was hedged: the test would pass without a budget")
		}
	})
}

// TestHedgeCostOnHealthyCluster: with hedge_after=50ms, the default
// hedge_budget (10%) and no fault, rwpool hedges only reads that went
// unanswered for hedge_after, and no more than the budget allows.
//
// The test used to require at most 1.05 statements per read in one of
// three 3 s rounds. "Healthy" is a property of the machine too: in a CI
// run every round had a p99 of 150-270 ms (the servers share the two
// cores with the tests) and 1.075-1.097 statements per read, all hedges
// of reads that had waited hedge_after, within the budget: rwpool was
// right and the test failed. So it now judges what holds on any machine:
//
//   - hedges <= the reads that took at least hedge_after (a hedge starts
//     only after a read waited that long, so its caller saw at least that),
//     plus the 8 readers' reads in flight at the first and last sample;
//   - hedges <= hedge_budget's share of the reads, plus those 8 and the one
//     hedge the budget's short windows allow beyond the share.
//
// An implementation that hedges a read it need not (at once, or a fast
// one) breaks the first; one that hedges every slow read beyond the budget
// breaks the second on a stalled machine, which is when it matters. The
// statements per read are logged, with the share of slow reads beside
// them, for the healthy-machine figure.
func TestHedgeCostOnHealthyCluster(t *testing.T) {
	const (
		hedgeAfter = 50 * time.Millisecond
		share      = 0.10 // hedge_budget's default
		inFlight   = 8    // hedgeLoad's readers
	)
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, "hedge_after=50ms")
		stall := meterStalls()
		reads, hedges, res := hedgeLoad(t, db, slowOn(cl, "1", 0), 5*time.Second)
		held := stall()
		var zero time.Time
		if errs := res.failures(zero, zero); len(errs) > 0 {
			t.Fatalf("%d reads failed: %s", len(errs), errSummary(errs, 3))
		}
		// Stats count from the database's opening: the load's hedges are
		// those since its first sample.
		last := len(reads) - 1
		r, h := reads[last], hedges[last]-hedges[0]
		if r == 0 {
			t.Fatalf("no read in 5 s")
		}
		var slow int64
		for _, c := range res.calls {
			if c.dur >= hedgeAfter {
				slow++
			}
		}
		t.Logf("%s: %d reads, %d slower than %s (%.2f%%), %d hedges: %.4f statements per read; goroutines held up at most %s; %s",
			cl.Name, r, slow, hedgeAfter, 100*float64(slow)/float64(r), h, float64(r+h)/float64(r),
			held.Round(time.Millisecond), res.summary(zero, zero))
		if h > slow+inFlight {
			t.Errorf("%d hedges, but only %d reads waited %s or more: reads were hedged that did not need it", h, slow, hedgeAfter)
		}
		if limit := share*float64(r) + inFlight + 1; float64(h) > limit {
			t.Errorf("%d hedges for %d reads: over the budget's %.0f%% (at most %.0f)", h, r, 100*share, limit)
		}
	})
}
