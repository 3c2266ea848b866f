package rwpool_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/testcluster"
)

// endpoint is a TCP forwarder standing for a DNS name, virtual IP or proxy
// that failover tooling moves to the new primary: a connection goes to the
// target of the moment it is opened, and stays with it after a move. It
// also makes a slow server (setDelay): every server→client chunk is held
// back, as by a busy server or a long network path.
type endpoint struct {
	ln     net.Listener
	target atomic.Pointer[string]
	delay  atomic.Int64 // ns each server→client chunk is held back
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

func newEndpoint(t *testing.T, target string) *endpoint {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &endpoint{ln: ln, conns: map[net.Conn]bool{}}
	e.target.Store(&target)
	e.wg.Add(1)
	go e.serve()
	t.Cleanup(e.close)
	return e
}

func (e *endpoint) addr() string         { return e.ln.Addr().String() }
func (e *endpoint) moveTo(target string) { e.target.Store(&target) }

// setDelay holds back every server→client chunk that arrives from now on
// by d (0: none), on every connection, open or future.
func (e *endpoint) setDelay(d time.Duration) { e.delay.Store(int64(d)) }

func (e *endpoint) serve() {
	defer e.wg.Done()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", *e.target.Load(), 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		if !e.track(c, up) {
			return
		}
		e.wg.Add(2)
		go e.pipe(c, up, &e.delay)
		go e.pipe(up, c, nil)
	}
}

func (e *endpoint) track(cs ...net.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		e.conns[c] = true
	}
	return true
}

// pipe copies one way, each chunk held back by delay's value when it
// arrives (nil: no delay); when either side ends, both are closed.
func (e *endpoint) pipe(dst, src net.Conn, delay *atomic.Int64) {
	defer e.wg.Done()
	if delay == nil {
		io.Copy(dst, src)
	} else {
		copyDelayed(dst, src, delay)
	}
	dst.Close()
	src.Close()
}

// copyDelayed copies src to dst, writing each chunk read delay after it
// arrived: latency is added, throughput is not lost (chunks read while
// others wait are queued, not delayed one after another).
func copyDelayed(dst io.WriteCloser, src io.Reader, delay *atomic.Int64) {
	type chunk struct {
		due time.Time
		b   []byte
	}
	q := make(chan chunk, 256)
	done := make(chan struct{})
	go func() { // ends when q is closed; a failed write closes dst and drains q
		defer close(done)
		t := time.NewTimer(0)
		defer t.Stop()
		broken := false
		for c := range q {
			if broken {
				continue
			}
			if d := time.Until(c.due); d > 0 {
				t.Reset(d)
				<-t.C // the fault itself: this chunk's added latency
			}
			if _, err := dst.Write(c.b); err != nil {
				broken = true
				dst.Close() // so that the server side learns of it
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{due: time.Now().Add(time.Duration(delay.Load())), b: append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			break
		}
	}
	close(q)
	<-done
}

func (e *endpoint) close() {
	e.ln.Close()
	e.mu.Lock()
	e.closed = true
	for c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// ackedWrites inserts rows with fresh ids and remembers the ids the
// database acknowledged.
type ackedWrites struct {
	ids   atomic.Int64
	mu    sync.Mutex
	acked map[int64]time.Time // id → when the database acknowledged it
}

func (a *ackedWrites) fn(db *sql.DB, table string) func(ctx context.Context, worker int) error {
	return func(ctx context.Context, w int) error {
		id := a.ids.Add(1)
		if _, err := db.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (id, w) VALUES (%d, %d)", table, id, w)); err != nil {
			return err
		}
		a.mu.Lock()
		a.acked[id] = time.Now()
		a.mu.Unlock()
		return nil
	}
}

// missingOn returns the acknowledged ids that the server at addr lacks.
func (a *ackedWrites) missingOn(t *testing.T, cl *cluster, addr, table string) []int64 {
	t.Helper()
	have := map[int64]bool{}
	for _, id := range idsOn(t, cl, addr, "SELECT id FROM "+table) {
		have[id] = true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var missing []int64
	for id := range a.acked {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	return missing
}

// duplicatesOn returns the ids that the server at addr has more than once:
// writes that were applied twice.
func (a *ackedWrites) duplicatesOn(t *testing.T, cl *cluster, addr, table string) []int64 {
	t.Helper()
	return idsOn(t, cl, addr, "SELECT id FROM "+table+" GROUP BY id HAVING count(*) > 1")
}

// idsOn runs q, which selects one BIGINT column, on the server at addr
// through the bare driver.
func idsOn(t *testing.T, cl *cluster, addr, q string) []int64 {
	t.Helper()
	db, err := sql.Open(cl.Driver, cl.NodeDSN(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// firstSuccessAfter returns when the first call that started at or after
// from succeeded, as a duration since from.
func firstSuccessAfter(r results, from time.Time) (time.Duration, bool) {
	for _, c := range r.in(from, time.Time{}) {
		if c.err == nil {
			return c.start.Add(c.dur).Sub(from), true
		}
	}
	return 0, false
}

// failoverRig is what both failover scenarios set up: a table written by
// acknowledged writes, an endpoint in front of the primary, rwpool over
// the endpoint and the real replicas, and a mixed load (4 writers, 8
// readers) through it. restore lists the cluster.sh commands that put the
// topology back, run at the end whatever happened.
type failoverRig struct {
	db               *sql.DB
	dsn              string // db's, for another Connector (another process) over the same nodes
	ep               *endpoint
	move             func(t *testing.T, to string) // what promoteAndMove does to point the primary's address at to; nil: ep.moveTo
	w                *ackedWrites
	writers, readers *load
}

const failoverCheckInterval = time.Second

// extra is appended to rwpool's DSN. With endpoint, a forwarder stands in
// front of the primary (r.ep); without, rwpool reaches the primary
// directly (with follow_promotion=on in extra it must follow; or a
// PgBouncer in front of the primary is re-pointed).
func newFailoverRig(t *testing.T, cl *cluster, table, extra string, endpoint bool, restore [][]string) *failoverRig {
	t.Helper()
	// The bare driver on the primary: an rwpool *sql.DB would refuse
	// writes for a while after the primary was read-only.
	setup, err := sql.Open(cl.Driver, cl.NodeDSN(cl.Primary))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { setup.Close() }) // after the cleanup below
	mustExec(t, setup, "DROP TABLE IF EXISTS "+table)
	// No primary key: a write applied twice shows as two rows of one id
	// (duplicatesOn) instead of failing on the key.
	mustExec(t, setup, "CREATE TABLE "+table+" (id BIGINT NOT NULL, w INT)")
	cl.waitSync(t)
	t.Cleanup(func() {
		for _, args := range restore {
			if out, err := clusterScript(args...); err != nil {
				t.Errorf("cleanup: cluster.sh %v: %v\n%s", args, err, out)
			}
		}
		cl.awaitPoolers(t) // a PgBouncer refuses clients until it logs in to a restarted server again
		mustExec(t, setup, "DROP TABLE IF EXISTS "+table)
	})

	r := &failoverRig{w: &ackedWrites{acked: map[int64]time.Time{}}}
	primary := cl.Primary
	if endpoint {
		r.ep = newEndpoint(t, cl.Primary)
		primary = r.ep.addr()
	}
	var b []byte
	b = fmt.Appendf(b, "driver=%s;primary='%s';", cl.Driver, cl.NodeDSN(primary))
	for _, rep := range cl.Replicas {
		b = fmt.Appendf(b, "replica='%s';", cl.NodeDSN(rep))
	}
	b = fmt.Appendf(b, "check_interval=%s;%s", failoverCheckInterval, extra)
	r.dsn = string(b)
	if r.db, err = sql.Open("rwpool", r.dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.db.Close() })
	r.writers = startLoadTimeout(t, r.db, 4, 10*time.Second, r.w.fn(r.db, table))
	r.readers = startLoad(t, r.db, 8, cl.readFn(r.db, newSightings()))
	soak(time.Second)
	return r
}

// withAndWithoutFailoverWait runs scenario on the clusters called names,
// without failover_wait and with 5s of it.
func withAndWithoutFailoverWait(t *testing.T, scenario func(*testing.T, *cluster, time.Duration), names ...string) {
	for _, cl := range realClusters(t) {
		if !slices.Contains(names, cl.Name) {
			continue
		}
		for _, wait := range []time.Duration{0, 5 * time.Second} {
			t.Run(fmt.Sprintf("%s/failover_wait=%s", cl.Name, wait), func(t *testing.T) {
				cl.awaitPoolers(t) // the first run's restore may have restarted a server behind one
				scenario(t, cl, wait)
			})
		}
	}
}

// TestIntegrationSwitchoverBehindEndpoint is a graceful MariaDB switchover
// behind an endpoint: the old primary is set read-only and left running,
// replica1 catches up and is promoted, the endpoint moves to it. Every
// pooled connection and the probe connection still reach the old primary;
// rwpool must notice on a freshly dialled connection, retire them, and
// write to the new primary. With failover_wait the writes of the switchover
// wait for it instead of failing.
func TestIntegrationSwitchoverBehindEndpoint(t *testing.T) {
	withAndWithoutFailoverWait(t, switchoverBehindEndpoint, testcluster.MariaDB)
}

// Through PgBouncer (a backend with poolers) the endpoint is the PgBouncer
// that rwpool's primary DSN names, re-pointed and reloaded as an HA tool's
// callback does (TestIntegrationPgBouncerRepointed).
func switchoverBehindEndpoint(t *testing.T, cl *cluster, wait time.Duration) {
	const table = "rw_switchover"
	checkInterval := failoverCheckInterval
	primaryPort, newPrimary := portOf(cl.Primary), cl.Replicas[0]
	r := newFailoverRig(t, cl, table, fmt.Sprintf("failover_wait=%s", wait), cl.Via == nil, [][]string{
		{"rejoin-node", portOf(newPrimary)},
		{"set-read-only", primaryPort, "off"},
		{"wait-sync"},
	})
	if cl.Via != nil {
		pgbouncerMove(t, cl, r)
	}
	tok := takeToken(t, r, table, -7)
	var moved atomic.Int32
	if err := rwpool.Configure(r.db, rwpool.WithEventHandler(func(e rwpool.Event) {
		if e.Kind == rwpool.EndpointMoved && e.Node == "primary" {
			moved.Add(1)
		}
	})); err != nil {
		t.Fatal(err)
	}
	w := r.w

	tReadOnly := time.Now()
	if out, err := clusterScript("set-read-only", primaryPort, "on"); err != nil {
		t.Fatalf("set-read-only: %v\n%s", err, out)
	}
	// A graceful switchover waits for the replica to have everything.
	eventually(t, 10*time.Second, "replica1 caught up with the read-only primary", func() bool {
		return len(w.missingOn(t, cl, newPrimary, table)) == 0
	})
	tMove, back, wr, rr := promoteAndMove(t, r, newPrimary, checkInterval)
	recovery := tMove.Add(back).Sub(tReadOnly) // writes were refused from tReadOnly until back
	failed := wr.failures(time.Time{}, time.Time{})
	t.Logf("writes: back %s after the move (%s after the primary turned read-only); %d of %d failed (%s); longest %s; %d EndpointMoved events",
		back.Round(time.Millisecond), recovery.Round(time.Millisecond), len(failed), wr.count(time.Time{}, time.Time{}),
		errSummary(failed, 3), wr.max(time.Time{}, time.Time{}).Round(time.Millisecond), moved.Load())
	t.Logf("reads: %s", rr.summary(time.Time{}, time.Time{}))
	if back > checkInterval+time.Second {
		t.Errorf("writes came back %s after the endpoint moved, want within check_interval + 1s (%s)", back, checkInterval+time.Second)
	}
	if missing := w.missingOn(t, cl, newPrimary, table); len(missing) > 0 {
		t.Errorf("%d acknowledged writes missing on the new primary: %v", len(missing), missing[:min(len(missing), 10)])
	}
	if dup := w.duplicatesOn(t, cl, newPrimary, table); len(dup) > 0 {
		t.Errorf("%d writes applied twice on the new primary: %v", len(dup), dup[:min(len(dup), 10)])
	}
	if errs := rr.failures(time.Time{}, time.Time{}); len(errs) > 0 {
		t.Errorf("%d reads failed: %s", len(errs), errSummary(errs, 3))
	}
	if moved.Load() == 0 {
		t.Errorf("no EndpointMoved event for the primary")
	}
	tok.readsAcross(t, table)
	if wait > 0 {
		if len(failed) > 0 {
			t.Errorf("with failover_wait=%s, %d writes failed: %s", wait, len(failed), errSummary(failed, 3))
		}
		// The writes issued while the primary was read-only waited for the
		// move: none may have waited much longer than the switchover took.
		tolerance := 100 * time.Millisecond
		if longest := wr.max(time.Time{}, time.Time{}); longest > recovery+tolerance {
			t.Errorf("longest write %s, want at most the recovery time %s + %s", longest, recovery, tolerance)
		}
	} else {
		for _, err := range failed {
			if !errors.Is(err, rwpool.ErrReadOnly) && !isReadOnlyServerError(err) {
				t.Errorf("a write failed with %v, want a read-only refusal (the server's or rwpool's)", err)
				break
			}
		}
	}
}

// TestIntegrationKillPromoteMove is a PostgreSQL failover behind an
// endpoint: the primary is killed, a standby promoted, the endpoint moved
// to it. rwpool's health checker dials through the endpoint, finds a
// writable server, and writes resume there; with failover_wait the writes
// issued meanwhile wait for it instead of failing.
func TestIntegrationKillPromoteMove(t *testing.T) {
	withAndWithoutFailoverWait(t, killPromoteMove, testcluster.Postgres, testcluster.PgBouncerTx)
}

func killPromoteMove(t *testing.T, cl *cluster, wait time.Duration) {
	const table = "rw_killpromote"
	checkInterval := failoverCheckInterval
	primaryPort, newPrimary := portOf(cl.Primary), cl.Replicas[0]
	// The old primary comes back as the primary; the promoted standby is
	// made a standby of it again (a new base backup).
	r := newFailoverRig(t, cl, table, fmt.Sprintf("failover_wait=%s", wait), true, [][]string{
		{"start-node", primaryPort},
		{"rejoin-node", portOf(newPrimary)},
		{"wait-sync"},
	})
	w := r.w

	tKill := time.Now()
	if out, err := clusterScript("kill-node", primaryPort); err != nil {
		t.Fatalf("kill-node: %v\n%s", err, out)
	}
	// The processes died somewhere in [tKill, tKilled]: a write that
	// started before tKilled may have been in flight then.
	tKilled := time.Now()
	// Acknowledged before the kill: what the standby had replayed by then
	// survives; what it had not is lost to asynchronous replication, not
	// to rwpool. Remember the acknowledgements of the last moment apart.
	w.mu.Lock()
	ackedBeforeKill := len(w.acked)
	w.mu.Unlock()
	tMove, back, wr, rr := promoteAndMove(t, r, newPrimary, checkInterval)
	missing := w.missingOn(t, cl, newPrimary, table)
	if dup := w.duplicatesOn(t, cl, newPrimary, table); len(dup) > 0 {
		t.Errorf("%d writes applied twice on the new primary: %v", len(dup), dup[:min(len(dup), 10)])
	}
	// Issued during the outage: once the kill had returned and a failure
	// had shown it (results.known); before, a write may go out on a
	// connection whose server just died (through PgBouncer, on a server
	// connection PgBouncer has not yet seen die), its outcome unknown
	// (CI, pgbouncer_tx: 2 such writes).
	tKnown := wr.known(tKill, tKilled)
	inFlight := wr.failures(time.Time{}, tKnown) // may have been sent before the kill, or before anyone could know of it
	afterKill := wr.failures(tKnown, time.Time{})
	t.Logf("kill→move %s; writes back %s after the move; %d of %d failed (%d started before the kill was known: %s; %d after: %s); longest %s",
		tMove.Sub(tKill).Round(time.Millisecond), back.Round(time.Millisecond),
		len(inFlight)+len(afterKill), wr.count(time.Time{}, time.Time{}), len(inFlight), errSummary(inFlight, 2),
		len(afterKill), errSummary(afterKill, 2), wr.max(time.Time{}, time.Time{}).Round(time.Millisecond))
	t.Logf("acknowledged writes missing on the new primary: %d (of %d acknowledged before the kill)", len(missing), ackedBeforeKill)
	t.Logf("reads: %s", rr.summary(time.Time{}, time.Time{}))
	if back > checkInterval+time.Second {
		t.Errorf("writes came back %s after the endpoint moved, want within check_interval + 1s", back)
	}
	w.mu.Lock()
	for _, id := range missing {
		if w.acked[id].After(tKilled) {
			t.Errorf("write %d, acknowledged after the kill (by the new primary), is missing on it", id)
		}
	}
	w.mu.Unlock()
	if errs := rr.failures(time.Time{}, time.Time{}); len(errs) > 0 {
		t.Errorf("%d reads failed: %s", len(errs), errSummary(errs, 3))
	}
	if wait > 0 && len(afterKill) > 0 {
		t.Errorf("with failover_wait=%s, %d writes issued during the outage failed: %s", wait, len(afterKill), errSummary(afterKill, 3))
	}
}

// isReadOnlyServerError reports whether err is the server's refusal of a
// write as read-only (MySQL/MariaDB 1290 or 1792, PostgreSQL 25006).
func isReadOnlyServerError(err error) bool {
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		return st.SQLState() == "25006"
	}
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1290 || me.Number == 1792)
}

// promoteAndMove promotes newPrimary, moves the rig's endpoint to it, lets
// the load run for check_interval + 2 s and stops it. It returns when the
// endpoint moved, how long after that the first write succeeded, and the
// writers' and readers' results.
func promoteAndMove(t *testing.T, r *failoverRig, newPrimary string, checkInterval time.Duration) (tMove time.Time, back time.Duration, wr, rr results) {
	t.Helper()
	if out, err := clusterScript("promote-node", portOf(newPrimary)); err != nil {
		t.Fatalf("promote-node: %v\n%s", err, out)
	}
	tMove = time.Now()
	if r.move != nil {
		r.move(t, newPrimary)
	} else {
		r.ep.moveTo(newPrimary)
	}
	soak(checkInterval + 2*time.Second)
	wr, rr = r.writers.stop(), r.readers.stop()
	back, ok := firstSuccessAfter(wr, tMove)
	if !ok {
		if s, err := rwpool.Stats(r.db); err == nil {
			t.Logf("\n%s", s)
		}
		t.Fatalf("no write succeeded after the endpoint moved: %s; before the move: %s", wr.summary(tMove, time.Time{}), wr.summary(time.Time{}, tMove))
	}
	return tMove, back, wr, rr
}
