package rwpool_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/testcluster"
)

// The follow_promotion=on scenarios of issue 15: no endpoint, rwpool
// reaches every server directly and follows the roles they report. Both
// end with the other nodes re-pointed to the promoted one (cluster.sh
// repoint-node), as failover tooling does, and both restore the topology
// `up` made (primary at the base port, replicas at +1 and +2 following
// it) before the next test.

// TestIntegrationFollowPromotion: the PostgreSQL primary killed, replica1
// promoted with pg_promote(), replica2 re-pointed to it: writes reach the
// promoted node, nothing acknowledged after the kill is lost, reads never
// fail, replica2 serves reads again, and a session reads its own writes
// across the promotion. With failover_wait the writes of the outage wait
// for the promotion instead of failing.
func TestIntegrationFollowPromotion(t *testing.T) {
	withAndWithoutFailoverWait(t, followPromotion, testcluster.Postgres, testcluster.PgBouncerTx, testcluster.PgBouncerTxPgx, testcluster.PgBouncerSession)
}

func followPromotion(t *testing.T, cl *cluster, wait time.Duration) {
	const table = "rw_follow"
	primaryPort, newPrimary, other := portOf(cl.Primary), cl.Replicas[0], cl.Replicas[1]
	// The old primary comes back as the primary (start-node); both
	// standbys are cloned from it again: neither can go back to its
	// timeline.
	r := newFailoverRig(t, cl, table, fmt.Sprintf("follow_promotion=on;failover_wait=%s", wait), false, [][]string{
		{"start-node", primaryPort},
		{"rejoin-node", portOf(newPrimary)},
		{"rejoin-node", portOf(other)},
		{"wait-sync"},
	})
	sess := sessionWrite(t, r.db, table, -1)
	tok := takeToken(t, r, table, -7)

	tFault := time.Now()
	if out, err := clusterScript("kill-node", primaryPort); err != nil {
		t.Fatalf("kill-node: %v\n%s", err, out)
	}
	// The processes died somewhere in [tFault, tKilled]: a write that
	// started before tKilled may have been in flight, and may have been
	// applied: it fails, failover_wait or not (it cannot be retried
	// without risking a second copy).
	tKilled := time.Now()
	if out, err := clusterScript("promote-node", portOf(newPrimary)); err != nil {
		t.Fatalf("promote-node: %v\n%s", err, out)
	}
	tPromoted := time.Now()
	noReadsUntilRepointed(t, r.db, 2, "replica2, still a standby of the killed primary")
	out, err := clusterScript("repoint-node", portOf(other), portOf(newPrimary))
	if err != nil {
		t.Fatalf("repoint-node: %v\n%s", err, out)
	}
	// A standby that got WAL the promoted one never had cannot follow it,
	// and is cloned from it instead (cluster.sh says so).
	how := "followed the new timeline"
	if strings.Contains(out, "base backup") {
		how = "re-cloned: it had WAL past the fork"
	}
	t.Logf("kill→promoted %s; repoint-node replica2 took %s (%s)", tPromoted.Sub(tFault).Round(time.Millisecond),
		time.Since(tPromoted).Round(time.Millisecond), how)
	servesReadsAgain(t, r.db, 2, "replica2, re-pointed to the promoted replica1")
	// Long enough after the promotion to see writes come back late.
	soak(max(failoverCheckInterval, time.Until(tPromoted.Add(failoverCheckInterval+2*time.Second))))
	wr, rr := r.writers.stop(), r.readers.stop()

	f := followFigures{wait: wait, tFault: tFault, tFaultDone: tKilled, tPromoted: tPromoted, wr: wr, rr: rr}
	f.check(t, cl, r.w, newPrimary, table)
	if wait > 0 {
		errs := wr.failures(tKilled, time.Time{})
		if cl.Via != nil && !isPgx(cl) {
			// pgx keeps PgBouncer's own error, and rwpool runs a write
			// the pooler never gave to a server again
			// (driverinfo.PoolerNeverSent); lib/pq loses it.
			errs = notPooledAway(t, errs)
		}
		if len(errs) > 0 {
			t.Errorf("with failover_wait=%s, %d writes issued after the kill failed: %s", wait, len(errs), errSummary(errs, 3))
		}
	}
	checkRole(t, r.db, 1, "primary")
	sessionReadsItsWrites(t, r.db, sess, table, -1, -2)
	tok.readsAcross(t, table)
}

// TestIntegrationFollowSwitchover: a graceful MariaDB switchover without an
// endpoint: the old primary set read-only, replica1 caught up and
// promoted, replica2 and the old primary re-pointed to it. Writes reach the
// promoted node, none acknowledged is lost, reads never fail, a session
// reads its own writes across the promotion, and the old primary, once it
// follows the new one, is a replica that serves reads. With failover_wait
// no write fails at all: those of the switchover wait for it.
func TestIntegrationFollowSwitchover(t *testing.T) {
	withAndWithoutFailoverWait(t, followSwitchover, testcluster.MariaDB)
}

func followSwitchover(t *testing.T, cl *cluster, wait time.Duration) {
	const table = "rw_follow_switch"
	primaryPort, newPrimary, other := portOf(cl.Primary), cl.Replicas[0], cl.Replicas[1]
	// A switchback: the old primary first (replica1 read-only, the old
	// primary catches up with it, stops replicating, writable), then the
	// replicas follow it again.
	r := newFailoverRig(t, cl, table, fmt.Sprintf("follow_promotion=on;failover_wait=%s", wait), false, [][]string{
		{"rejoin-node", primaryPort},
		{"rejoin-node", portOf(newPrimary)},
		{"rejoin-node", portOf(other)},
		{"wait-sync"},
	})
	sess := sessionWrite(t, r.db, table, -1)

	tFault := time.Now()
	if out, err := clusterScript("set-read-only", primaryPort, "on"); err != nil {
		t.Fatalf("set-read-only: %v\n%s", err, out)
	}
	tReadOnly := time.Now()
	// A graceful switchover waits for the replica to have everything
	// (MASTER_GTID_WAIT on both replicas).
	if out, err := clusterScript("wait-sync"); err != nil {
		t.Fatalf("wait-sync: %v\n%s", err, out)
	}
	if out, err := clusterScript("promote-node", portOf(newPrimary)); err != nil {
		t.Fatalf("promote-node: %v\n%s", err, out)
	}
	tPromoted := time.Now()
	if out, err := clusterScript("repoint-node", portOf(other), portOf(newPrimary)); err != nil {
		t.Fatalf("repoint-node replica2: %v\n%s", err, out)
	}
	t.Logf("read-only→promoted %s; repoint-node replica2 took %s", tPromoted.Sub(tFault).Round(time.Millisecond),
		time.Since(tPromoted).Round(time.Millisecond))
	// Until the old primary follows the new one it has nothing written
	// since: it must serve no read, for a status check or two.
	eventually(t, 10*time.Second, "rwpool follows the promotion", func() bool {
		s, err := rwpool.Stats(r.db)
		return err == nil && s.Nodes[1].Role == "primary" && s.Nodes[0].Role == "replica"
	})
	served := func() int64 {
		s, err := rwpool.Stats(r.db)
		if err != nil {
			t.Fatal(err)
		}
		return s.Nodes[0].Served
	}
	before := served()
	soak(failoverCheckInterval + 200*time.Millisecond)
	if n := served() - before; n > 0 {
		t.Errorf("the old primary, read-only and following nobody, served %d reads", n)
	}
	if out, err := clusterScript("repoint-node", primaryPort, portOf(newPrimary)); err != nil {
		t.Fatalf("repoint-node old primary: %v\n%s", err, out)
	}
	servesReadsAgain(t, r.db, 0, "the old primary, re-pointed to the promoted replica1")
	servesReadsAgain(t, r.db, 2, "replica2, re-pointed to the promoted replica1")
	// Long enough after the promotion to see writes come back late.
	soak(max(failoverCheckInterval, time.Until(tPromoted.Add(failoverCheckInterval+2*time.Second))))
	wr, rr := r.writers.stop(), r.readers.stop()

	f := followFigures{wait: wait, graceful: true, tFault: tFault, tFaultDone: tReadOnly, tPromoted: tPromoted, wr: wr, rr: rr}
	f.check(t, cl, r.w, newPrimary, table)
	if wait > 0 {
		// Nothing breaks in a graceful switchover: a write refused as
		// read-only was not applied, and waits for the new primary.
		if errs := wr.failures(time.Time{}, time.Time{}); len(errs) > 0 {
			t.Errorf("with failover_wait=%s, %d writes failed: %s", wait, len(errs), errSummary(errs, 3))
		}
	}
	checkRole(t, r.db, 1, "primary")
	checkRole(t, r.db, 0, "replica")
	sessionReadsItsWrites(t, r.db, sess, table, -1, -2)
}

// followFigures are the measurements of a follow scenario.
type followFigures struct {
	wait time.Duration
	// graceful: nothing crashed, so no acknowledged write may be missing
	// at all.
	graceful bool
	// tFault is just before the fault was injected, tFaultDone once it
	// certainly had taken effect (the cluster.sh command returned), and
	// tPromoted once the promotion had.
	tFault, tFaultDone, tPromoted time.Time
	wr, rr                        results
}

// recovery is the time from the fault until the first successful write:
// the end of the earliest successful write among those that started
// after tFaultDone (earlier ones may have succeeded on the old primary
// before the fault took effect), measured from tFault.
func (f followFigures) recovery() (time.Duration, bool) {
	first := time.Time{}
	for _, c := range f.wr.in(f.tFaultDone, time.Time{}) {
		if end := c.start.Add(c.dur); c.err == nil && (first.IsZero() || end.Before(first)) {
			first = end
		}
	}
	return first.Sub(f.tFault), !first.IsZero()
}

// check logs the scenario's figures and checks what both scenarios
// promise: writes on the promoted node within check_interval + 1 s of
// the promotion, no acknowledged write lost or applied twice there, no
// failed read, and with failover_wait no write longer than the recovery
// time (+100 ms).
func (f followFigures) check(t *testing.T, cl *cluster, w *ackedWrites, newPrimary, table string) {
	t.Helper()
	wr, rr := f.wr, f.rr
	back, ok := firstSuccessAfter(wr, f.tPromoted)
	if !ok {
		t.Fatalf("no write succeeded after the promotion: %s", wr.summary(f.tPromoted, time.Time{}))
	}
	recovery, _ := f.recovery()
	missing := w.missingOn(t, cl, newPrimary, table)
	dup := w.duplicatesOn(t, cl, newPrimary, table)
	failed := wr.failures(time.Time{}, time.Time{})
	longest := wr.max(time.Time{}, time.Time{})
	t.Logf("failover_wait=%s: writes back %s after the promotion, recovery %s after the fault; %d of %d writes failed (%d started before the fault was done)%s; longest write %s; lost %d; applied twice %d",
		f.wait, back.Round(time.Millisecond), recovery.Round(time.Millisecond), len(failed), wr.count(time.Time{}, time.Time{}),
		len(wr.failures(time.Time{}, f.tFaultDone)), errSummary(failed, 3), longest.Round(time.Millisecond), len(missing), len(dup))
	t.Logf("reads: %s", rr.summary(time.Time{}, time.Time{}))
	if back > failoverCheckInterval+time.Second {
		t.Errorf("writes reached the promoted node %s after the promotion, want within check_interval + 1s", back)
	}
	w.mu.Lock()
	for _, id := range missing {
		// Acknowledged before the fault was done: a crashed primary may
		// have acknowledged what it never sent (asynchronous replication,
		// not rwpool's loss); after it, only the new primary acknowledges.
		if f.graceful || w.acked[id].After(f.tFaultDone) {
			t.Errorf("write %d, acknowledged at %s (fault at %s), is missing on the new primary", id,
				w.acked[id].Format("15:04:05.000"), f.tFault.Format("15:04:05.000"))
		}
	}
	w.mu.Unlock()
	if len(dup) > 0 {
		t.Errorf("%d writes applied twice on the new primary: %v", len(dup), dup[:min(len(dup), 10)])
	}
	if errs := rr.failures(time.Time{}, time.Time{}); len(errs) > 0 {
		t.Errorf("%d reads failed: %s", len(errs), errSummary(errs, 3))
	}
	if f.wait > 0 {
		tolerance := 100 * time.Millisecond
		if cl.Via != nil {
			// A statement PgBouncer queued for the dead server waits
			// there, without an error, until query_wait_timeout.
			tolerance += pgbouncerQueryWait
		}
		if longest > recovery+tolerance {
			t.Errorf("longest write %s, want at most the recovery time %s + %s", longest, recovery, tolerance)
		}
	}
}

// servesReadsAgain waits (while the readers run) until node idx of db's
// Stats is an available replica that follows the primary (its applied
// position reaches the primary's written position of the call) and serves
// reads: its Served count grows.
// noReadsUntilRepointed checks that node idx, a replica the failover left
// following nothing, serves no read once rwpool has followed the
// promotion: it is Rejoining, and over the next second (the readers run)
// its Served count stays where it was.
func noReadsUntilRepointed(t *testing.T, db *sql.DB, idx int, what string) {
	t.Helper()
	var base rwpool.NodeStats
	if _, ok := poll(10*time.Second, func() bool {
		s, err := rwpool.Stats(db)
		if err != nil {
			return false
		}
		base = s.Nodes[idx]
		return s.Nodes[1].Role == "primary" && base.Rejoining
	}); !ok {
		t.Fatalf("%s: not Rejoining 10 s after the promotion (replica1 primary? %+v)", what, base)
	}
	soak(time.Second)
	s, err := rwpool.Stats(db)
	if err != nil {
		t.Fatal(err)
	}
	n := s.Nodes[idx]
	t.Logf("%s: Rejoining %v; served %d reads over 1 s after the promotion was followed (before: %d)", what, n.Rejoining, n.Served-base.Served, base.Served)
	if n.Served != base.Served {
		t.Errorf("%s served %d reads after the promotion was followed, before it was re-pointed", what, n.Served-base.Served)
	}
}

func servesReadsAgain(t *testing.T, db *sql.DB, idx int, what string) {
	t.Helper()
	s, err := rwpool.Stats(db)
	if err != nil {
		t.Fatal(err)
	}
	target := primaryPosition(s)
	base := int64(-1)
	d, ok := poll(15*time.Second, func() bool {
		s, err := rwpool.Stats(db)
		if err != nil {
			return false
		}
		n := s.Nodes[idx]
		if n.Role != "replica" || !n.Available || !positionCovers(n.Position, target) {
			return false
		}
		if base < 0 {
			base = n.Served
			return false
		}
		return n.Served > base
	})
	if !ok {
		s, _ := rwpool.Stats(db)
		n := s.Nodes[idx]
		t.Errorf("%s does not serve reads within 15s: role %s, state %s, served %d, reports %s, rejoining %t, behind %t, position %s (primary's: %s then, %s now), status error %q",
			what, n.Role, n.State, n.Served, n.Reports, n.Rejoining, n.Behind, n.Position, target, primaryPosition(s), n.StatusError)
		return
	}
	t.Logf("%s serves reads again %s later", what, d.Round(time.Millisecond))
}

// primaryPosition returns the position of s's primary node.
func primaryPosition(s rwpool.Snapshot) string {
	for _, n := range s.Nodes {
		if n.Role == "primary" {
			return n.Position
		}
	}
	return ""
}

// positionCovers reports whether Stats position p (a PostgreSQL LSN
// "X/Y", or MariaDB GTIDs "domain-server-seq,...") is at or past q. For
// GTIDs, every domain of q must be reached in p (sequence numbers grow
// within a domain under gtid_strict_mode, whatever the server).
func positionCovers(p, q string) bool {
	if q == "" {
		return true
	}
	if hi, lo, ok := strings.Cut(q, "/"); ok {
		var qh, ql, ph, pl uint64
		if _, err := fmt.Sscanf(hi+" "+lo, "%x %x", &qh, &ql); err != nil {
			return false
		}
		if _, err := fmt.Sscanf(strings.Replace(p, "/", " ", 1), "%x %x", &ph, &pl); err != nil {
			return false
		}
		return ph<<32|pl >= qh<<32|ql
	}
	seqs := map[string]uint64{}
	for _, g := range strings.Split(p, ",") {
		var d, srv, n uint64
		if _, err := fmt.Sscanf(g, "%d-%d-%d", &d, &srv, &n); err == nil {
			seqs[fmt.Sprint(d)] = n
		}
	}
	for _, g := range strings.Split(q, ",") {
		var d, srv, n uint64
		if _, err := fmt.Sscanf(g, "%d-%d-%d", &d, &srv, &n); err != nil || seqs[fmt.Sprint(d)] < n {
			return false
		}
	}
	return true
}

// checkRole checks the role rwpool gives node idx.
func checkRole(t *testing.T, db *sql.DB, idx int, want string) {
	t.Helper()
	s, err := rwpool.Stats(db)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Nodes[idx]; n.Role != want {
		t.Errorf("%s's role: %s, want %s", n.Name, n.Role, want)
	}
}

// sessionWrite writes row id in a new session, whose reads must see it.
func sessionWrite(t *testing.T, db *sql.DB, table string, id int) context.Context {
	t.Helper()
	sess := rwpool.WithSession(context.Background())
	mustExecCtx(t, db, sess, fmt.Sprintf("INSERT INTO %s (id, w) VALUES (%d, %d)", table, id, id))
	return sess
}

// sessionReadsItsWrites checks that the session reads its write from
// before the promotion (id before), and, once it writes id after, that
// one too, wherever its reads go.
func sessionReadsItsWrites(t *testing.T, db *sql.DB, sess context.Context, table string, before, after int) {
	t.Helper()
	var n int
	if err := db.QueryRowContext(sess, fmt.Sprintf("SELECT count(*) FROM %s WHERE id = %d", table, before)).Scan(&n); err != nil || n != 1 {
		t.Errorf("the session's write from before the promotion: %d rows (%v)", n, err)
	}
	mustExecCtx(t, db, sess, fmt.Sprintf("INSERT INTO %s (id, w) VALUES (%d, %d)", table, after, after))
	for range 20 {
		if err := db.QueryRowContext(sess, fmt.Sprintf("SELECT count(*) FROM %s WHERE id = %d", table, after)).Scan(&n); err != nil || n != 1 {
			t.Errorf("the session's write after the promotion: %d rows (%v)", n, err)
			return
		}
	}
}

// TestIntegrationPromotedReplicaGetsNoWrite: with follow_promotion=on, a
// replica made writable while the primary is healthy gets no write: every
// acknowledged write is on the primary, none on the replica.
func TestIntegrationPromotedReplicaGetsNoWrite(t *testing.T) {
	for _, cl := range realClusters(t) {
		if cl.Name == "pgx" { // the same servers as postgres
			continue
		}
		t.Run(cl.Name, func(t *testing.T) { promotedReplicaGetsNoWrite(t, cl) })
	}
}

func promotedReplicaGetsNoWrite(t *testing.T, cl *cluster) {
	{
		const table = "rw_splitguard"
		rogue := cl.Replicas[0]
		setup, err := sql.Open(cl.Driver, cl.NodeDSN(cl.Primary))
		if err != nil {
			t.Fatal(err)
		}
		defer setup.Close()
		mustExec(t, setup, "DROP TABLE IF EXISTS "+table)
		mustExec(t, setup, "CREATE TABLE "+table+" (id BIGINT PRIMARY KEY, w INT)")
		cl.waitSync(t)
		if out, err := clusterScript("promote-node", portOf(rogue)); err != nil {
			t.Fatalf("promote-node: %v\n%s", err, out)
		}
		defer func() {
			if out, err := clusterScript("rejoin-node", portOf(rogue)); err != nil {
				t.Errorf("cleanup: rejoin-node: %v\n%s", err, out)
			}
			if out, err := clusterScript("wait-sync"); err != nil {
				t.Errorf("cleanup: wait-sync: %v\n%s", err, out)
			}
			mustExec(t, setup, "DROP TABLE IF EXISTS "+table)
		}()
		db := cl.open(t, "follow_promotion=on;check_interval=200ms")
		eventually(t, 10*time.Second, "the rogue replica flagged as writable", func() bool {
			s, err := rwpool.Stats(db)
			return err == nil && s.Nodes[1].RoleMismatch()
		})
		w := &ackedWrites{acked: map[int64]time.Time{}}
		f := w.fn(db, table)
		for i := range 300 {
			if err := f(context.Background(), 0); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
		if missing := w.missingOn(t, cl, cl.Primary, table); len(missing) > 0 {
			t.Errorf("%d acknowledged writes missing on the primary", len(missing))
		}
		if onRogue := len(w.acked) - len(w.missingOn(t, cl, rogue, table)); onRogue > 0 {
			t.Errorf("%d writes reached the writable replica", onRogue)
		}
	}
}

func mustExecCtx(t *testing.T, db *sql.DB, ctx context.Context, q string) {
	t.Helper()
	if _, err := db.ExecContext(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// promotedToken is a session token taken before a failover, and a second
// Connector over the same nodes, opened then too (another process, that
// lives through the failover as the first does).
type promotedToken struct {
	tok   string
	id    int
	other *sql.DB
	db    *sql.DB
}

// takeToken writes row id in a session through r's database and takes
// the session's token.
func takeToken(t *testing.T, r *failoverRig, table string, id int) *promotedToken {
	t.Helper()
	sess := sessionWrite(t, r.db, table, id)
	tok := rwpool.SessionToken(sess)
	if tok == "" {
		t.Fatal("no token after a session write")
	}
	other, err := sql.Open("rwpool", r.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return &promotedToken{tok: tok, id: id, other: other, db: r.db}
}

// readsAcross resumes the token taken before the failover, through both
// Connectors, 100 times each: every read sees the row written before the
// failover (0 stale reads), and none takes longer than causal_wait
// (50ms) plus a round-trip allowance: a token never makes a read wait for
// a position no node will have.
func (p *promotedToken) readsAcross(t *testing.T, table string) {
	t.Helper()
	const allowance = 250 * time.Millisecond
	var longest time.Duration
	stale := 0
	for i := range 200 {
		db := p.db
		if i%2 == 1 {
			db = p.other
		}
		ctx, err := rwpool.WithSessionToken(context.Background(), p.tok)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		start := time.Now()
		var n int
		err = db.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE id = %d", table, p.id)).Scan(&n)
		longest = max(longest, time.Since(start))
		cancel()
		if err != nil {
			t.Fatalf("a read resuming a token from before the failover: %v", err)
		}
		if n != 1 {
			stale++
		}
	}
	t.Logf("200 reads resuming a token from before the failover: %d stale, longest %s", stale, longest.Round(time.Millisecond))
	if stale > 0 {
		t.Errorf("%d of 200 reads resuming a token from before the failover missed its write", stale)
	}
	if longest > 50*time.Millisecond+allowance {
		t.Errorf("a read resuming a token from before the failover took %s, want at most causal_wait (50ms) + %s", longest, allowance)
	}
}
