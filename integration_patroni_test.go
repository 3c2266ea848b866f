package rwpool_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/testcluster"
)

// Issue 23's Patroni scenarios, on the Patroni-managed cluster that
// scripts/patroni.sh starts (etcd, three PostgreSQL nodes, ttl 10 s,
// loop_wait 1 s): rwpool is given the three nodes as a static list with
// follow_promotion=on and check_interval=1s, as an operator would, under 4
// writers and 8 readers. Patroni, not the test, decides who leads, promotes,
// re-points the other standby and rewinds the old leader; the test only
// crashes or asks, and measures.

// patroniCheckInterval is rwpool's check_interval in these scenarios; the
// stale window's bound is check_interval + 1 s.
const patroniCheckInterval = time.Second

// TestPatroniLeaderCrash: SIGKILL of the leader's Patroni agent and of its
// PostgreSQL. Patroni promotes a standby once the leader key expires; the
// crashed node, started again, is rewound and rejoins as a standby.
func TestPatroniLeaderCrash(t *testing.T) { patroniScenario(t, false) }

// TestPatroniSwitchover: a planned switchover through Patroni's REST API.
func TestPatroniSwitchover(t *testing.T) { patroniScenario(t, true) }

func patroniScenario(t *testing.T, switchover bool) {
	pc := testcluster.PatroniCluster(t)
	// 25 s is longer than Patroni's failover here (the ttl, 10 s, plus up
	// to about 6 s for the leader race: 10.6-16.4 s measured): with it, no
	// write issued after the fault may fail. 15 s was not: a crash
	// failover of 16.0 s failed the writes that had waited 15 s.
	for _, wait := range []time.Duration{0, 25 * time.Second} {
		t.Run(fmt.Sprintf("failover_wait=%s", wait), func(t *testing.T) {
			runPatroni(t, pc, switchover, wait, false)
		})
	}
}

// patroniScript runs `$RWPOOL_PATRONI_SCRIPT args...` (scripts/patroni.sh)
// as clusterScript runs cluster.sh.
func patroniScript(args ...string) (string, error) {
	return runScript("RWPOOL_PATRONI_SCRIPT", "$RWPOOL_PATRONI_DIR/env", args...)
}

func mustPatroni(t *testing.T, args ...string) string {
	t.Helper()
	out, err := patroniScript(args...)
	if err != nil {
		t.Fatalf("patroni.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// patroniWrite is one acknowledged write: when, which server took it.
type patroniWrite struct {
	start, acked time.Time
	port         string
}

// patroniRead is one successful read: when it started, what it saw.
type patroniRead struct {
	start time.Time
	max   int64
	node  string // rwpool's Route.Node
}

// patroniLog records what the load saw, beside load's own records.
type patroniLog struct {
	mu     sync.Mutex
	writes map[int64]patroniWrite
	reads  []patroniRead
}

// TestPatroniDiscoveryFailover: a switchover with the standbys found
// through Patroni's /cluster (discover='patroni:…') instead of listed:
// the standby Patroni promotes is a discovered node, which its source
// stops listing as a replica the moment it leads; rwpool must keep it
// and follow it, and the old leader, back as a standby, must not join
// twice (it is the DSN's primary node). The crash runs so too with
// -rwpool.patroni-crash-discovery (30 s more: Patroni's ttl; it passed
// on the final code, README's figures), left out of CI for its budget.
func TestPatroniDiscoveryFailover(t *testing.T) {
	pc := testcluster.PatroniCluster(t)
	if *patroniCrashDiscovery {
		t.Run("crash", func(t *testing.T) { runPatroni(t, pc, false, 25*time.Second, true) })
	}
	t.Run("switchover", func(t *testing.T) { runPatroni(t, pc, true, 25*time.Second, true) })
}

var patroniCrashDiscovery = flag.Bool("rwpool.patroni-crash-discovery", false, "also run TestPatroniDiscoveryFailover's leader crash")

// runPatroni runs one scenario; with discover, rwpool is given the
// leader alone and finds the standbys through Patroni's REST API.
func runPatroni(t *testing.T, pc *testcluster.Patroni, switchover bool, wait time.Duration, discover bool) {
	const table = "rw_patroni"
	// Whatever the last scenario left (a crashed node being rewound): every
	// member runs and streams from the leader.
	mustPatroni(t, "wait-members")
	oldAddr := "127.0.0.1:" + mustPatroni(t, "leader")
	cl := &cluster{pc.Backend(oldAddr)}
	setup, err := sql.Open(cl.Driver, cl.NodeDSN(oldAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	mustExec(t, setup, "DROP TABLE IF EXISTS "+table)
	// No primary key: a write applied twice shows as two rows.
	mustExec(t, setup, "CREATE TABLE "+table+" (id BIGINT NOT NULL, w INT)")
	mustPatroni(t, "wait-members") // the replicas have the table
	setup.Close()

	addrs := append([]string{cl.Primary}, cl.Replicas...)
	names := map[string]string{cl.Primary: "primary"} // node names by address
	extra := fmt.Sprintf("check_interval=%s;follow_promotion=on;failover_wait=%s", patroniCheckInterval, wait)
	dsnText := cl.DSN(extra)
	if discover {
		var urls []string
		for _, r := range pc.REST {
			urls = append(urls, "http://"+r)
		}
		dsnText = cl.DSNOver(cl.Primary, nil, extra+";discover='patroni:"+strings.Join(urls, ",")+"' every=500ms")
		for i, a := range pc.Nodes {
			if a != cl.Primary {
				names[a] = fmt.Sprintf("patroni/pg%d", i) // scripts/patroni.sh names the members so
			}
		}
	} else {
		for i, a := range cl.Replicas {
			names[a] = fmt.Sprintf("replica%d", i+1)
		}
	}
	db, err := sql.Open("rwpool", dsnText)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if discover {
		if _, ok := poll(15*time.Second, func() bool {
			got, _ := discoveredNodes(t, db)
			return len(got) == 2
		}); !ok {
			t.Fatal("the standbys did not join from Patroni's /cluster within 15 s")
		}
	}

	lg := &patroniLog{writes: map[int64]patroniWrite{}}
	evs := collectEvents(t, db)
	tl := startTimeline(t, db)
	var ids sync.Mutex
	next := int64(0)
	writers := startLoadTimeout(t, db, 4, wait+10*time.Second, func(ctx context.Context, w int) error {
		ids.Lock()
		next++
		id := next
		ids.Unlock()
		start := time.Now()
		var port string
		err := db.QueryRowContext(ctx, fmt.Sprintf("INSERT INTO %s (id, w) VALUES (%d, %d) RETURNING inet_server_port()::text", table, id, w)).Scan(&port)
		if err != nil {
			return err
		}
		lg.mu.Lock()
		lg.writes[id] = patroniWrite{start: start, acked: time.Now(), port: port}
		lg.mu.Unlock()
		return nil
	})
	readers := startLoad(t, db, 8, func(ctx context.Context, _ int) error {
		start := time.Now()
		var m int64
		var r rwpool.Route
		if err := db.QueryRowContext(rwpool.WithRoute(ctx, &r), "SELECT coalesce(max(id), 0) FROM "+table).Scan(&m); err != nil {
			return err
		}
		lg.mu.Lock()
		lg.reads = append(lg.reads, patroniRead{start: start, max: m, node: r.Node})
		lg.mu.Unlock()
		return nil
	})
	soak(time.Second)

	watch, err := testcluster.WatchLeader(cl.Backend, addrs, oldAddr)
	if err != nil {
		t.Fatal(err)
	}
	tFault := time.Now()
	if switchover {
		mustPatroni(t, "switchover")
	} else {
		mustPatroni(t, "kill-node", testcluster.Port(oldAddr))
	}
	tKilled := time.Now()
	newAddr, tWritable, err := watch.NewLeader(t.Context(), 40*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The old leader took no more writes from tDown on: when a poll first
	// saw it down or in recovery, or once the kill returned (the
	// processes died somewhere in [tFault, tKilled]).
	tDown := watch.OldDown()
	if !switchover && (tDown.IsZero() || tKilled.Before(tDown)) {
		tDown = tKilled
	}
	oldIdx := 0 // the DSN's primary, first in Stats
	if _, ok := poll(10*time.Second, func() bool {
		s, err := rwpool.Stats(db)
		return err == nil && slices.ContainsFunc(s.Nodes, func(n rwpool.NodeStats) bool { return n.Name == names[newAddr] && n.Role == "primary" })
	}); !ok {
		t.Fatalf("rwpool did not follow Patroni's new leader %s within 10 s", newAddr)
	}
	soak(max(0, time.Until(tWritable.Add(2*time.Second))))
	if !switchover {
		mustPatroni(t, "start-node", testcluster.Port(oldAddr))
	}
	tRestarted := time.Now()
	mustPatroni(t, "wait-members")
	t.Logf("fault→old leader down %s (the fault's command took %s), →new leader %s writable %s; old leader streaming from it %s after that",
		tDown.Sub(tFault).Round(time.Millisecond), tKilled.Sub(tFault).Round(time.Millisecond), newAddr, tWritable.Sub(tFault).Round(time.Millisecond),
		time.Since(tRestarted).Round(time.Millisecond))
	servesReadsAgain(t, db, oldIdx, "the old leader, now a standby of "+newAddr)
	if s, _ := rwpool.Stats(db); discover && len(s.Nodes) != 3 {
		// Patroni lists the old leader as a standby now, at the DSN
		// primary's address: it must not join a second time.
		t.Errorf("%d nodes after the failover, want the 3 members once each:\n%s", len(s.Nodes), s)
	}
	soak(time.Second)
	wr, rr := writers.stop(), readers.stop()
	watch.Stop()
	tl.stop()

	f := patroniFigures{switchover: switchover, wait: wait, oldPort: testcluster.Port(oldAddr), newPort: testcluster.Port(newAddr),
		tFault: tFault, tDown: tDown, tWritable: tWritable, wr: wr, rr: rr, lg: lg, evs: evs, tl: tl}
	f.check(t, idsOn(t, cl, newAddr, "SELECT id FROM "+table), idsOn(t, cl, newAddr, "SELECT id FROM "+table+" GROUP BY id HAVING count(*) > 1"))
}

// patroniFigures are a Patroni scenario's measurements.
type patroniFigures struct {
	switchover       bool
	wait             time.Duration
	oldPort, newPort string
	// tFault: just before the crash or the switchover request; tDown: the
	// old leader certainly took no more writes (the kill returned, or a
	// poll saw it down or in recovery); tWritable: a poll first saw the
	// new leader writable.
	tFault, tDown, tWritable time.Time
	wr, rr                   results
	lg                       *patroniLog
	// evs and tl tell, when a read was too stale, what rwpool knew then.
	evs *eventLog
	tl  *timeline
}

// check logs the figures issue 23 asks for and checks its promises, given
// the ids on the new leader at the end (have) and those it has twice.
func (f patroniFigures) check(t *testing.T, have, dup []int64) {
	t.Helper()
	f.lg.mu.Lock()
	defer f.lg.mu.Unlock()
	onLeader := make(map[int64]bool, len(have))
	for _, id := range have {
		onLeader[id] = true
	}
	// Lost: acknowledged, not on the new leader. Before the old leader
	// was down, a crashed leader may have acknowledged writes it never
	// sent to a standby (asynchronous replication loses them by design):
	// counted apart. Any other is rwpool's loss.
	var lostAtCrash, lost []int64
	var offLeader []string
	var back time.Time
	for id, w := range f.lg.writes {
		if !onLeader[id] {
			if !f.switchover && w.start.Before(f.tDown) {
				lostAtCrash = append(lostAtCrash, id)
			} else {
				lost = append(lost, id)
			}
		}
		switch {
		case w.port == f.newPort:
			if back.IsZero() || w.acked.Before(back) {
				back = w.acked
			}
		case w.port == f.oldPort && w.start.After(f.tDown):
			offLeader = append(offLeader, fmt.Sprintf("id %d on the old leader (%s), started %s after it was down", id, w.port, w.start.Sub(f.tDown)))
		case w.port != f.oldPort:
			offLeader = append(offLeader, fmt.Sprintf("id %d on %s, never the leader", id, w.port))
		}
	}
	failed := f.wr.failures(time.Time{}, time.Time{})
	tKnown := f.wr.known(f.tFault, f.tDown)
	failedAfter := f.wr.failures(tKnown, time.Time{})
	staleAll, staleAfter, stalest, lostReads := f.staleness(onLeader)
	backAfter := back.Sub(f.tWritable)
	t.Logf("failover_wait=%s: %d of %d writes failed (%d issued once the old leader was seen down and a failure had shown it)%s; writes back %s after the new leader was writable (%s after the fault); longest write %s",
		f.wait, len(failed), f.wr.count(time.Time{}, time.Time{}), len(failedAfter), errSummary(failed, 3),
		backAfter.Round(time.Millisecond), back.Sub(f.tFault).Round(time.Millisecond), f.wr.max(time.Time{}, time.Time{}).Round(time.Millisecond))
	t.Logf("lost %d (lost at the crash, acknowledged by the old leader and never replicated: %d); applied twice %d; written off the leader %d; reads %s; reads of lost writes %d; stalest read after the new leader was writable %s (over the whole run %s)",
		len(lost), len(lostAtCrash), len(dup), len(offLeader), f.rr.summary(time.Time{}, time.Time{}), lostReads,
		staleAfter.Round(time.Millisecond), staleAll.Round(time.Millisecond))

	if back.IsZero() {
		t.Fatalf("no write reached the new leader: %s", f.wr.summary(f.tWritable, time.Time{}))
	}
	if backAfter > time.Second {
		t.Errorf("writes came back %s after the new leader was writable, want within 1 s", backAfter)
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		t.Errorf("%d acknowledged writes are missing on the new leader: %v", len(lost), lost[:min(len(lost), 10)])
	}
	if len(dup) > 0 {
		t.Errorf("%d writes applied twice: %v", len(dup), dup[:min(len(dup), 10)])
	}
	for _, s := range offLeader[:min(len(offLeader), 5)] {
		t.Errorf("a write off the leader: %s", s)
	}
	if errs := f.rr.failures(time.Time{}, time.Time{}); len(errs) > 0 {
		t.Errorf("%d reads failed: %s", len(errs), errSummary(errs, 3))
	}
	if lostReads > 0 {
		t.Errorf("%d reads after the old leader was down saw a write the new leader does not have", lostReads)
	}
	if limit := patroniCheckInterval + time.Second; staleAfter > limit {
		t.Errorf("a read after the new leader was writable missed a write acknowledged %s before it, want at most check_interval + 1 s (%s): on %s, begun %s after the new leader was writable",
			staleAfter, limit, stalest.node, stalest.start.Sub(f.tWritable))
		f.explain(t, stalest.start.Add(-staleAfter), stalest.start)
	}
	if f.wait > 0 && len(failedAfter) > 0 {
		t.Errorf("with failover_wait=%s, %d writes issued once the old leader was seen down and a failure had shown it failed: %s", f.wait, len(failedAfter), errSummary(failedAfter, 3))
		for _, c := range f.wr.in(time.Time{}, time.Time{}) {
			if c.err != nil {
				t.Logf("failed write: began %s after the fault (%s after the old leader was seen down, %s after the first failure ended), took %s",
					c.start.Sub(f.tFault).Round(time.Millisecond), c.start.Sub(f.tDown).Round(time.Millisecond),
					c.start.Sub(tKnown).Round(time.Millisecond), c.dur.Round(time.Millisecond))
			}
		}
	}
}

// staleness measures the reads (testcluster.Staleness): the stalest of
// all, and of those that began after the new leader was writable (and
// that read), and how many reads after the old leader was down saw a row
// the new leader lacks.
func (f patroniFigures) staleness(onLeader map[int64]bool) (all, after time.Duration, stalest patroniRead, lostReads int) {
	var acks []testcluster.Ack
	for id, w := range f.lg.writes {
		if onLeader[id] {
			acks = append(acks, testcluster.Ack{ID: id, At: w.acked.Sub(f.tFault)})
		}
	}
	s := testcluster.NewStaleness(acks)
	for _, r := range f.lg.reads {
		if r.max > 0 && !onLeader[r.max] && r.start.After(f.tDown) {
			lostReads++
		}
		if d, ok := s.Of(r.start.Sub(f.tFault), r.max); ok {
			all = max(all, d)
			if r.start.After(f.tWritable) && d > after {
				after, stalest = d, r
			}
		}
	}
	return all, after, stalest, lostReads
}

// explain logs, for a read found too stale, rwpool's events and its view
// of every node from a second before the write it missed (acked) to the
// read's start (read), against the fault's time.
func (f patroniFigures) explain(t *testing.T, acked, read time.Time) {
	t.Helper()
	from, to := acked.Add(-time.Second), read.Add(100*time.Millisecond)
	rel := func(at time.Time) string { return at.Sub(f.tFault).Round(time.Millisecond).String() }
	t.Logf("fault at 0; old leader down %s; new leader writable %s; missed write acknowledged %s; read begun %s",
		rel(f.tDown), rel(f.tWritable), rel(acked), rel(read))
	f.evs.mu.Lock()
	for _, e := range f.evs.evs {
		if !e.At.Before(from.Add(-10*time.Second)) && !e.At.After(to) {
			t.Logf("event %s: %s %s %s→%s read-only=%t cause=%v", rel(e.At), e.Node, e.Kind, e.From, e.To, e.ReadOnly, e.Cause)
		}
	}
	f.evs.mu.Unlock()
	for _, s := range f.tl.between(from, to) {
		t.Logf("stats %s: %s", rel(s.at), s.text)
	}
}

// timeline samples rwpool.Stats every 50 ms while a scenario runs, to
// show what rwpool knew of each node when something went wrong.
type timeline struct {
	mu      sync.Mutex
	samples []timelineSample
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

type timelineSample struct {
	at   time.Time
	text string
}

func startTimeline(t *testing.T, db *sql.DB) *timeline {
	tl := &timeline{done: make(chan struct{})}
	t.Cleanup(tl.stop)
	tl.wg.Add(1)
	go func() {
		defer tl.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		last := ""
		for {
			select {
			case <-tl.done:
				return
			case <-tick.C:
			}
			s, err := rwpool.Stats(db)
			if err != nil {
				continue
			}
			var b strings.Builder
			for _, n := range s.Nodes {
				fmt.Fprintf(&b, "[%s %s %s reports=%q pos=%s rejoining=%t behind=%t] ", n.Name, n.Role, n.State, n.Reports, n.Position, n.Rejoining, n.Behind)
			}
			if text := b.String(); text != last { // changes only
				last = text
				tl.mu.Lock()
				tl.samples = append(tl.samples, timelineSample{time.Now(), text})
				tl.mu.Unlock()
			}
		}
	}()
	return tl
}

func (tl *timeline) stop() { tl.once.Do(func() { close(tl.done) }); tl.wg.Wait() }

// between returns the samples taken in [from, to], with the last one
// before from (what held at from).
func (tl *timeline) between(from, to time.Time) []timelineSample {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []timelineSample
	for i, s := range tl.samples {
		if s.at.After(to) {
			break
		}
		if !s.at.Before(from) || i+1 < len(tl.samples) && !tl.samples[i+1].at.Before(from) {
			out = append(out, s)
		}
	}
	return out
}
