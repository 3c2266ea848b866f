package rwpool_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/health"
)

var chaosDuration = flag.Duration("rwpool.chaos", 60*time.Second,
	"how long the chaos test injects faults on each database (CI runs the default)")

// TestChaos runs 32 goroutines of mixed traffic (autocommit reads and
// writes, transactions, *sql.Conn sessions, prepared statements) while a
// controller kills, hangs and restarts random nodes, the primary included,
// one at a time. At the end it checks that every write the application saw
// succeed is on the primary, that no replica ever refused a statement as a
// write, that no transaction is partly applied, that every session read its
// own write, that nothing leaked, and that reads were fast again one
// second after each fault was detected. It runs on both databases (lib/pq
// and go-sql-driver/mysql; the fault tests cover pgx).
func TestChaos(t *testing.T) {
	for _, cl := range realClusters(t) {
		if isPgx(cl) {
			continue
		}
		t.Run(cl.Name, func(t *testing.T) { runChaos(t, cl) })
	}
}

const (
	chaosWorkers    = 32
	chaosKinds      = 5 // read, write, transaction, session, prepared
	chaosReadBound  = 100 * time.Millisecond
	chaosCallBudget = 2 * time.Second
	// chaosPause paces each worker: 32 workers without a pause saturate a
	// 2-core machine, and the read latencies would measure its run queue.
	chaosPause = 20 * time.Millisecond
)

var chaosKindNames = [chaosKinds]string{"read", "write", "transaction", "session", "prepared"}

// chaosState is what the workers record for the checks.
type chaosState struct {
	mu       sync.Mutex
	acked    map[int][]int64 // writer → seqs the application saw committed
	txAcked  []int64         // transactions the application saw committed
	refused  []string        // statements a replica refused as writes
	lostSess []string        // sessions that did not read their own write
	ops      [chaosKinds]atomic.Int64
	fails    [chaosKinds]atomic.Int64
	nextTx   atomic.Int64
}

func (s *chaosState) ack(writer int, seq int64) {
	s.mu.Lock()
	s.acked[writer] = append(s.acked[writer], seq)
	s.mu.Unlock()
}

// refusedAsWrite recognises a replica refusing a write: PostgreSQL's
// read-only transaction error and MariaDB's --read-only error.
func refusedAsWrite(err error) bool {
	if err == nil {
		return false
	}
	m := err.Error()
	return strings.Contains(m, "read-only transaction") || strings.Contains(m, "--read-only") ||
		strings.Contains(m, "Error 1290")
}

// chaosFault is one injected fault.
type chaosFault struct {
	node, op string
	start    time.Time // the fault command started
	undo     time.Time // the command undoing it started (SIGCONT or restart)
	end      time.Time // the node is back
}

func runChaos(t *testing.T, cl *cluster) {
	db := cl.open(t, "")
	events := collectEvents(t, db)
	mustExec(t, db, "DROP TABLE IF EXISTS chaos_w")
	mustExec(t, db, "DROP TABLE IF EXISTS chaos_tx")
	mustExec(t, db, "CREATE TABLE chaos_w (writer INT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (writer, seq))")
	mustExec(t, db, "CREATE TABLE chaos_tx (tx BIGINT NOT NULL, part INT NOT NULL, PRIMARY KEY (tx, part))")
	ph := func(i int) string {
		if cl.Driver == "mysql" {
			return "?"
		}
		return fmt.Sprintf("$%d", i)
	}
	insW := "INSERT INTO chaos_w (writer, seq) VALUES (" + ph(1) + ", " + ph(2) + ")"
	insTx := "INSERT INTO chaos_tx (tx, part) VALUES (" + ph(1) + ", " + ph(2) + ")"
	countW := "SELECT count(*) FROM chaos_w WHERE writer = " + ph(1) + " AND seq = " + ph(2)
	prepIns, err := db.Prepare(insW)
	if err != nil {
		t.Fatal(err)
	}
	defer prepIns.Close()
	prepRead, err := db.Prepare(cl.PortQuery + " WHERE 1 = " + ph(1))
	if err != nil {
		t.Fatal(err)
	}
	defer prepRead.Close()

	st := &chaosState{acked: map[int][]int64{}}
	seqs := make([]atomic.Int64, chaosWorkers)
	note := func(err error, what string) {
		if refusedAsWrite(err) {
			st.mu.Lock()
			st.refused = append(st.refused, what+": "+err.Error())
			st.mu.Unlock()
		}
	}
	work := func(ctx context.Context, w int) error {
		kind := w % chaosKinds
		st.ops[kind].Add(1)
		err := chaosCall(ctx, db, cl, st, kind, w, seqs[w].Add(1), insW, insTx, countW, prepIns, prepRead, note)
		if err != nil {
			st.fails[kind].Add(1)
		}
		return err
	}
	l := startLoadPaced(t, db, chaosWorkers, chaosCallBudget, chaosPause, work)

	// The controller: one fault at a time on a random node, held 2-4 s,
	// then restored, then 2 s of calm.
	var faults []chaosFault
	deadline := time.Now().Add(*chaosDuration)
	nodes := cl.allAddrs()
	for time.Now().Before(deadline) {
		addr := nodes[rand.IntN(len(nodes))]
		op, undo := "kill-node", "start-node"
		if rand.IntN(2) == 0 {
			op, undo = "hang-node", "resume-node"
		}
		f := chaosFault{node: cl.nodeName(addr), op: op, start: time.Now()}
		cl.fault(t, op, addr)
		soak(time.Duration(2000+rand.IntN(2000)) * time.Millisecond)
		f.undo = time.Now()
		cl.fault(t, undo, addr)
		f.end = time.Now()
		faults = append(faults, f)
		soak(2 * time.Second)
	}
	res := l.stop()
	cl.waitSync(t)

	// Nothing leaked: every borrowed connection came back.
	eventually(t, 10*time.Second, "no connection in use after the load stopped", func() bool {
		s, err := rwpool.Stats(db)
		if err != nil {
			return false
		}
		for _, n := range s.Nodes {
			if n.InUse != 0 {
				return false
			}
		}
		return true
	})

	// Every acknowledged write is on the primary.
	primary := rwpool.WithPrimary(context.Background())
	eventually(t, 3*recoveryBound, "the primary answering", func() bool {
		return db.PingContext(primary) == nil
	})
	var ackedRows, lostRows int
	var ackSum, foundSum int64
	for w, acked := range st.acked {
		rows, err := db.QueryContext(primary, "SELECT seq FROM chaos_w WHERE writer = "+ph(1), w)
		if err != nil {
			t.Fatal(err)
		}
		have := map[int64]bool{}
		for rows.Next() {
			var s int64
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			have[s] = true
		}
		rows.Close()
		for _, s := range acked {
			ackedRows++
			ackSum += s
			if have[s] {
				foundSum += s
			} else {
				lostRows++
			}
		}
	}
	// No transaction is partly applied; every acknowledged one is whole.
	var partial int
	if err := db.QueryRowContext(primary, "SELECT count(*) FROM (SELECT tx FROM chaos_tx GROUP BY tx HAVING count(*) <> 2) p").Scan(&partial); err != nil {
		t.Fatal(err)
	}
	var lostTx int
	for _, tx := range st.txAcked {
		var n int
		if err := db.QueryRowContext(primary, "SELECT count(*) FROM chaos_tx WHERE tx = "+ph(1), tx).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			lostTx++
		}
	}

	// Reads were fast again one second after each fault was detected, for
	// as long as the fault held. The window ends when the undo starts: a
	// resumed or restarted node (a primary above all) releases a burst of
	// queued work and WAL to replay, which is recovery, not the fault.
	var slowWindows []string
	var detected int
	var worst time.Duration
	for _, f := range faults {
		trip, ok := firstTrip(events.forNode(f.node), f.start)
		if !ok || trip.After(f.end) {
			continue
		}
		detected++
		from, to := trip.Add(time.Second), f.undo
		if !from.Before(to) {
			continue
		}
		var durs []time.Duration
		for _, c := range res.in(from, to) {
			if c.worker%chaosKinds == 0 {
				durs = append(durs, c.dur)
			}
		}
		p := p99Of(durs)
		worst = max(worst, p)
		if p > chaosReadBound {
			slowWindows = append(slowWindows, fmt.Sprintf("%s %s: read p99 %v", f.op, f.node, p))
		}
	}

	// The summary table.
	var b strings.Builder
	fmt.Fprintf(&b, "chaos on %s: %s, %d goroutines\n", cl.Name, chaosDuration.String(), chaosWorkers)
	fmt.Fprintf(&b, "  %-12s %9s %9s\n", "load", "calls", "failed")
	for k := range chaosKinds {
		fmt.Fprintf(&b, "  %-12s %9d %9d\n", chaosKindNames[k], st.ops[k].Load(), st.fails[k].Load())
	}
	var reads []time.Duration
	for _, c := range res.in(time.Time{}, time.Time{}) {
		if c.worker%chaosKinds == 0 && c.err == nil {
			reads = append(reads, c.dur)
		}
	}
	slices.Sort(reads)
	if len(reads) > 0 {
		fmt.Fprintf(&b, "  successful reads: p50 %v, p99 %v over the whole run\n",
			reads[len(reads)/2].Round(10*time.Microsecond), reads[(len(reads)-1)*99/100].Round(10*time.Microsecond))
	}
	fmt.Fprintf(&b, "  faults injected: %d (%d detected by the breaker)\n", len(faults), detected)
	for _, f := range faults {
		fmt.Fprintf(&b, "    %-11s %-8s held %v\n", f.op, f.node, f.end.Sub(f.start).Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "  invariants:\n")
	check := func(ok bool, what string) {
		mark := "ok  "
		if !ok {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "    %s %s\n", mark, what)
	}
	check(lostRows == 0, fmt.Sprintf("acknowledged writes on the primary: %d/%d (checksum %d/%d)", ackedRows-lostRows, ackedRows, foundSum, ackSum))
	check(len(st.refused) == 0, fmt.Sprintf("statements refused by a replica as writes: %d", len(st.refused)))
	check(partial == 0 && lostTx == 0, fmt.Sprintf("transactions partly applied: %d; acknowledged transactions missing: %d of %d", partial, lostTx, len(st.txAcked)))
	check(len(st.lostSess) == 0, fmt.Sprintf("sessions that lost their own write: %d", len(st.lostSess)))
	check(len(slowWindows) == 0, fmt.Sprintf("read p99 under %v from 1 s after each detection until the undo: %d slow windows (worst %v)",
		chaosReadBound, len(slowWindows), worst.Round(10*time.Microsecond)))
	check(true, "no connection in use after the load stopped; goroutines checked by goleak at exit")
	t.Log("\n" + b.String())
	writeReport(t, "chaos-"+cl.Name+".txt", b.String())

	if lostRows > 0 || len(st.refused) > 0 || partial > 0 || lostTx > 0 || len(st.lostSess) > 0 || len(slowWindows) > 0 {
		t.Errorf("chaos invariants broken: refused %v; lost sessions %v; slow %v", first(st.refused, 3), first(st.lostSess, 3), slowWindows)
	}
	if ackedRows == 0 || len(st.txAcked) == 0 || len(faults) == 0 {
		t.Errorf("the chaos test exercised nothing: %d writes, %d transactions, %d faults", ackedRows, len(st.txAcked), len(faults))
	}
}

// chaosCall runs one call of the given kind.
func chaosCall(ctx context.Context, db *sql.DB, cl *cluster, st *chaosState, kind, w int, seq int64,
	insW, insTx, countW string, prepIns, prepRead *sql.Stmt, note func(error, string)) error {
	switch kind {
	case 0: // autocommit read
		var port string
		err := db.QueryRowContext(ctx, cl.PortQuery).Scan(&port)
		note(err, "read")
		return err
	case 1: // autocommit write
		_, err := db.ExecContext(ctx, insW, w, seq)
		note(err, "write")
		if err == nil {
			st.ack(w, seq)
		}
		return err
	case 2: // transaction: two rows, all or nothing
		id := st.nextTx.Add(1)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for part := 1; part <= 2; part++ {
			if _, err := tx.ExecContext(ctx, insTx, id, part); err != nil {
				note(err, "transaction")
				tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		st.mu.Lock()
		st.txAcked = append(st.txAcked, id)
		st.mu.Unlock()
		return nil
	case 3: // session: a write, then the same *sql.Conn reads it at once
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, insW, w, seq); err != nil {
			note(err, "session write")
			return err
		}
		st.ack(w, seq)
		var n int
		if err := c.QueryRowContext(ctx, countW, w, seq).Scan(&n); err != nil {
			note(err, "session read")
			return err
		}
		if n != 1 {
			st.mu.Lock()
			st.lostSess = append(st.lostSess, fmt.Sprintf("writer %d seq %d read %d rows", w, seq, n))
			st.mu.Unlock()
		}
		return nil
	default: // prepared statements: a write and a read
		if _, err := prepIns.ExecContext(ctx, w, seq); err != nil {
			note(err, "prepared write")
			return err
		}
		st.ack(w, seq)
		var port string
		err := prepRead.QueryRowContext(ctx, 1).Scan(&port)
		note(err, "prepared read")
		return err
	}
}

// firstTrip returns when node first became unavailable at or after since.
func firstTrip(evs []rwpool.Event, since time.Time) (time.Time, bool) {
	for _, e := range evs {
		if e.To == health.Unavailable && !e.At.Before(since) {
			return e.At, true
		}
	}
	return time.Time{}, false
}

func p99Of(durs []time.Duration) time.Duration {
	if len(durs) == 0 {
		return 0
	}
	s := slices.Clone(durs)
	slices.Sort(s)
	return s[(len(s)-1)*99/100]
}

func first(s []string, n int) []string {
	return s[:min(n, len(s))]
}

// writeReport saves a report under $RWPOOL_REPORT_DIR, when set, so that
// scripts/test.sh can print it after a run whose passing tests are quiet.
func writeReport(t *testing.T, name, text string) {
	dir := os.Getenv("RWPOOL_REPORT_DIR")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("report: %v", err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Logf("report: %v", err)
	}
}
