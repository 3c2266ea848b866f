package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tsenart/nap"

	"github.com/rwpool/rwpool/cmd/rwpool/internal/faultproxy"
)

// The failover scenarios: the primary goes away and replica1 takes over,
// under a mixed load, for clients that reach the primary through an
// endpoint (a DNS name, VIP or proxy that failover tooling moves; here a
// faultproxy.Proxy) and for rwpool following the promotion on its own.

// failoverVariant is one client of the failover scenarios. Another rwpool
// configuration (hedge_after=50ms, balance=adaptive, ...) is one more line
// in failoverVariants.
type failoverVariant struct {
	id     string // for --failover-variants
	kind   string // bare, rwpool, dbresolver or nap
	extra  string // DSN items appended to rwpool's DSN ("key=value;key=value")
	direct bool   // no endpoint: the DSN names the servers, rwpool follows the roles they report
}

// name is the variant in the report: the kind and its DSN extras.
func (v failoverVariant) name() string {
	if v.extra == "" {
		return v.kind
	}
	return v.kind + " " + strings.ReplaceAll(v.extra, ";", " ")
}

// failoverVariants are the clients of the failover scenarios, in order.
var failoverVariants = []failoverVariant{
	{id: "bare", kind: "bare"},
	{id: "dbresolver", kind: "dbresolver"},
	{id: "nap", kind: "nap"},
	{id: "rwpool", kind: "rwpool"},
	{id: "rwpool-wait", kind: "rwpool", extra: "failover_wait=5s"},
	{id: "rwpool-follow", kind: "rwpool", extra: "follow_promotion=on", direct: true},
	{id: "rwpool-follow-wait", kind: "rwpool", extra: "follow_promotion=on;failover_wait=5s", direct: true},
	// The proxies are the endpoint themselves: Pgpool-II looks for the new
	// primary on its own; HAProxy's write server is moved (and its sessions
	// to the old primary cut) with its runtime API, as failover tooling would.
	{id: "pgpool", kind: "pgpool", direct: true},
	{id: "haproxy", kind: "haproxy", direct: true},
}

// failoverScenario is one way the primary goes away.
type failoverScenario struct {
	name   string // for --failovers
	driver string // the engine it runs on
	title  string // in the report
}

var failoverScenarios = []failoverScenario{
	{"switchover", "mysql", "switchover behind an endpoint"},
	{"promotion", "postgres", "primary killed, replica1 promoted"},
}

// The failover load, as in the integration tests: 4 writers, 8 readers.
const (
	failoverWriters   = 4
	failoverReaders   = 8
	failoverOpTimeout = 10 * time.Second // context of each operation: longer than failover_wait
	failoverTable     = "rwpool_bench_failover"
)

// failoverRow is the outcome of one failover scenario for one variant.
type failoverRow struct {
	driver, label, scenario, variant string
	faultCmd                         time.Duration // how long the read-only or kill command ran
	moved                            time.Duration // from the fault to the endpoint's move (or the promotion)
	writes, failedWrites             int
	failedInFlight                   int           // failed writes issued before the fault was complete
	back                             time.Duration // from the fault to the first successful write issued after it
	backOK                           bool
	normal                           time.Duration // from the fault until writes were normal again
	normalOK                         bool
	longest                          time.Duration // the slowest write, failed or not
	lost                             int           // acknowledged writes missing on the new primary
	lostBeforeFault                  int           // of which acknowledged before the fault (asynchronous replication)
	reads, failedReads               int
	firstWriteErr, firstReadErr      string
	stuck                            int    // operations still running when the bench gave up on them
	skip                             string // why the variant cannot run this scenario ("" if it ran)
	// For the charts: every operation, the fault (the fault command's
	// return) and the stop, in time since the load began.
	writeSamples, readSamples []sample
	faultAt, stopAt           time.Duration
	// The Patroni scenarios' own (bench_patroni.go).
	dup, offLeader, lostReads       int
	stalest                         time.Duration
	stalestWhere                    string // when the stalest read began, and where
	faultLabel, moveLabel, gapLabel string // the chart's markers; "" for the failover scenarios' own
}

// selectedFailoverVariants are the variants --failover-variants names, in
// the order of failoverVariants.
func selectedFailoverVariants(o benchOpts) []failoverVariant {
	var out []failoverVariant
	for _, v := range failoverVariants {
		if slices.Contains(o.failoverVariants, v.id) {
			out = append(out, v)
		}
	}
	return out
}

// runFailovers runs scenario s for each selected variant, restoring the
// topology after each.
func runFailovers(ctx context.Context, o benchOpts, cl *cluster, d benchDriver, s failoverScenario, logf func(string, ...any)) ([]failoverRow, error) {
	var rows []failoverRow
	for _, v := range selectedFailoverVariants(o) {
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
		logf("failover %s (%s): %s, %d writers + %d readers, an operation every %s each, %s steady + %s after the move",
			s.name, d.Driver, v.name(), failoverWriters, failoverReaders, o.faultPace, o.faultSteady, o.failoverWindow)
		row, err := runFailover(ctx, o, cl, d, s, v)
		if err != nil {
			return rows, fmt.Errorf("failover %s, %s: %w", s.name, v.name(), err)
		}
		if row.skip != "" {
			logf("  %s", row.skip)
			rows = append(rows, row)
			continue
		}
		logf("  fault command %s, moved after %s; writes: %d, %d failed, back after %s, normal again %s, %d lost; reads: %d, %d failed",
			fmtDur(row.faultCmd), fmtDur(row.moved), row.writes, row.failedWrites, row.backText(), row.normalText(), row.lost, row.reads, row.failedReads)
		rows = append(rows, row)
	}
	return rows, nil
}

func (r failoverRow) backText() string {
	if !r.backOK {
		return "never (within window)"
	}
	return fmtDur(r.back)
}

func (r failoverRow) normalText() string {
	switch {
	case !r.normalOK:
		return "never (within window)"
	case r.normal == 0:
		return "0 (no disruption)"
	}
	return fmtDur(r.normal)
}

// closeOnce returns a function that closes c the first time it is called
// and does nothing after: a scenario closes its client before it reads
// the outcome, and again (a no-op) on its way out, whatever happened.
func closeOnce(c client) func() error {
	closed := false
	return func() error {
		if closed {
			return nil
		}
		closed = true
		return c.Close()
	}
}

// mixedLoad is the failover scenarios' load: writers and readers, each an
// operation every pace (the next at once after a slower one), each with a
// context of timeout, recorded by kind.
type mixedLoad struct {
	pace, timeout time.Duration
	begin         time.Time
	writes, reads opLog
	halt          atomic.Bool
	wg            sync.WaitGroup
	cur           []*atomic.Int64 // each worker's operation in flight: its start since begin, +1; 0 between operations
	stopped       bool
	stuck         []time.Duration // the starts of the operations a driver did not let go of by the stop's bound
}

func newMixedLoad(pace, timeout time.Duration) *mixedLoad {
	return &mixedLoad{pace: pace, timeout: timeout, begin: time.Now()}
}

// write and read start a writer and a reader running op.
func (l *mixedLoad) write(op func(context.Context) error) { l.start(op, &l.writes) }
func (l *mixedLoad) read(op func(context.Context) error)  { l.start(op, &l.reads) }

func (l *mixedLoad) start(op func(context.Context) error, log *opLog) {
	cur := new(atomic.Int64)
	l.cur = append(l.cur, cur)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		paced(&l.halt, l.pace, l.begin, cur, l.timeout, op, log.add)
	}()
}

// stop stops the workers and waits for them, or gives up on those a
// driver does not let go (their goroutines end when it does) and
// remembers their operations as stuck. Only the first call does anything.
func (l *mixedLoad) stop() {
	if l.stopped {
		return
	}
	l.stopped = true
	l.halt.Store(true)
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(l.timeout + 20*time.Second):
		for _, cur := range l.cur {
			if s := cur.Load(); s != 0 {
				l.stuck = append(l.stuck, time.Duration(s-1))
			}
		}
	}
}

// tally fills row from a stopped load: its samples, counts, failures
// (those issued before faultAt apart), the longest write, when writes were
// normal again, the first errors, and with back, the first successful
// write issued after faultAt. Operations still running at stopAt count as
// ending there.
func (row *failoverRow) tally(l *mixedLoad, faultAt, stopAt time.Duration, back bool) {
	ws, werr := l.writes.snapshot()
	rs, rerr := l.reads.snapshot()
	var window []sample
	for _, s := range ws {
		if s.end > stopAt {
			s.end, s.failed = stopAt, false
		}
		window = append(window, s)
	}
	for _, start := range l.stuck {
		window = append(window, sample{start: start, end: stopAt})
	}
	row.stuck = len(l.stuck)
	row.writeSamples, row.readSamples, row.faultAt, row.stopAt = ws, rs, faultAt, stopAt
	row.writes, row.reads = len(ws), len(rs)
	row.normal, row.normalOK = timeToNormal(window, faultAt, stopAt)
	for _, s := range ws {
		if s.failed {
			row.failedWrites++
			if s.start < faultAt {
				row.failedInFlight++
			}
		} else if back && s.start >= faultAt && (!row.backOK || s.end-faultAt < row.back) {
			row.back, row.backOK = s.end-faultAt, true
		}
		row.longest = max(row.longest, s.end-s.start)
	}
	for _, s := range rs {
		if s.failed {
			row.failedReads++
		}
	}
	if werr != nil {
		row.firstWriteErr = oneLine(werr.Error())
	}
	if rerr != nil {
		row.firstReadErr = oneLine(rerr.Error())
	}
}

// opLog records the operations of one kind (writes or reads).
type opLog struct {
	mu      sync.Mutex
	samples []sample
	first   error
}

func (l *opLog) add(s sample, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.samples = append(l.samples, s)
	if err != nil && l.first == nil {
		l.first = err
	}
}

func (l *opLog) snapshot() ([]sample, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.samples), l.first
}

// openFailoverVariant opens v with primary as the address of the primary
// (the endpoint's, or the server's for a direct variant) and both replicas.
func openFailoverVariant(v failoverVariant, d benchDriver, primary string) (client, error) {
	switch v.kind {
	case "bare":
		return openSQL(d.Driver, d.NodeDSN(primary))
	case "rwpool":
		return openSQL("rwpool", d.DSNOver(primary, d.Replicas, v.extra))
	}
	return openPeer(v.kind, d, primary, d.Replicas)
}

// openPeer opens one of the peers rwpool is compared with, kind
// dbresolver, nap, pgpool or haproxy, over primary and replicas
// (host:port; the proxies have their own configuration).
func openPeer(kind string, d benchDriver, primary string, replicas []string) (client, error) {
	dsns := make([]string, len(replicas))
	for i, r := range replicas {
		dsns[i] = d.NodeDSN(r)
	}
	switch kind {
	case "dbresolver":
		g, err := openGorm(d.Driver, d.NodeDSN(primary), dsns...)
		if err != nil {
			return nil, err
		}
		return g, nil
	case "nap":
		db, err := nap.Open(d.Driver, strings.Join(append([]string{d.NodeDSN(primary)}, dsns...), ";"))
		if err != nil {
			return nil, err
		}
		db.SetMaxIdleConns(maxIdle)
		return napReader{db}, nil
	case "pgpool", "haproxy":
		return openProxyVariant(kind, d)
	}
	return nil, fmt.Errorf("unknown variant kind %q", kind)
}

// runFailover runs one variant through scenario s and puts the topology
// back.
func runFailover(ctx context.Context, o benchOpts, cl *cluster, d benchDriver, s failoverScenario, v failoverVariant) (row failoverRow, err error) {
	row = failoverRow{driver: d.Driver, label: d.label, scenario: s.name, variant: v.name()}
	primaryPort, newPrimary := portOf(d.Primary), d.Replicas[0]
	if row.skip = proxySkip(v.kind, d.Driver); row.skip != "" {
		return row, nil
	}

	// The table, written through the bare driver on the primary.
	setup, err := sql.Open(d.Driver, d.NodeDSN(d.Primary))
	if err != nil {
		return row, err
	}
	defer setup.Close()
	for _, q := range []string{"DROP TABLE IF EXISTS " + failoverTable, "CREATE TABLE " + failoverTable + " (id BIGINT PRIMARY KEY, w INT)"} {
		if _, err := setup.ExecContext(ctx, q); err != nil {
			return row, fmt.Errorf("primary: %s: %w", q, err)
		}
	}
	if err := cl.waitHealthy(ctx); err != nil {
		return row, err
	}

	if err := cl.freshProxy(ctx, v.kind); err != nil {
		return row, err
	}
	primary := d.Primary
	var ep *faultproxy.Proxy
	if !v.direct {
		if ep, err = faultproxy.New("127.0.0.1:0", d.Primary); err != nil {
			return row, err
		}
		defer ep.Close()
		primary = ep.Addr()
	}
	c, err := openFailoverVariant(v, d, primary)
	if err != nil {
		return row, err
	}
	closeClient := closeOnce(c)
	defer closeClient()

	var (
		ids   atomic.Int64
		ackMu sync.Mutex
		acked = map[int64]time.Duration{} // id → when acknowledged, since begin
		load  = newMixedLoad(o.faultPace, failoverOpTimeout)
		begin = load.begin
	)
	for w := range failoverWriters {
		load.write(func(ctx context.Context) error {
			id := ids.Add(1)
			if err := c.exec(ctx, fmt.Sprintf("INSERT INTO %s (id, w) VALUES (%d, %d)", failoverTable, id, w)); err != nil {
				return err
			}
			ackMu.Lock()
			acked[id] = time.Since(begin)
			ackMu.Unlock()
			return nil
		})
	}
	for range failoverReaders {
		load.read(func(ctx context.Context) error {
			_, err := c.scanInt(ctx, "SELECT COALESCE(MAX(id), 0) FROM "+failoverTable)
			return err
		})
	}

	injected, restored := false, false
	stopLoad := load.stop
	// restore puts the old primary back in charge and replica1 back under
	// it, whatever happened.
	restore := func() error {
		if restored || !injected {
			return nil
		}
		restored = true
		bg := context.Background()
		var errs []error
		if s.name == "switchover" {
			_, roErr := cl.run(bg, "set-read-only", primaryPort, "off")
			errs = append(errs, cl.nodeOp(bg, "rejoin-node", newPrimary), roErr)
		} else {
			errs = append(errs, cl.nodeOp(bg, "start-node", d.Primary), cl.nodeOp(bg, "rejoin-node", newPrimary))
		}
		errs = append(errs, cl.waitHealthy(bg))
		if _, err := setup.ExecContext(bg, "DROP TABLE IF EXISTS "+failoverTable); err != nil {
			errs = append(errs, fmt.Errorf("primary: drop %s: %w", failoverTable, err))
		}
		return errors.Join(errs...)
	}
	defer func() {
		stopLoad()
		err = errors.Join(err, closeClient(), restore())
	}()

	if !sleepCtx(ctx, o.faultSteady) {
		return row, ctx.Err()
	}
	injected = true
	cmdAt := time.Since(begin)
	if s.name == "switchover" {
		// A graceful switchover: the primary stops taking writes, replica1
		// catches up with it and is promoted, the endpoint moves.
		if _, err := cl.run(ctx, "set-read-only", primaryPort, "on"); err != nil {
			return row, err
		}
	} else if err := cl.nodeOp(ctx, "kill-node", d.Primary); err != nil {
		return row, err
	}
	faultAt := time.Since(begin)
	row.faultCmd = faultAt - cmdAt
	if s.name == "switchover" {
		if _, err := cl.run(ctx, "wait-sync"); err != nil {
			return row, err
		}
	}
	if err := cl.nodeOp(ctx, "promote-node", newPrimary); err != nil {
		return row, err
	}
	if ep != nil {
		if err := ep.MoveTo(newPrimary); err != nil {
			return row, err
		}
	}
	if v.kind == "haproxy" {
		if err := moveHAProxyWrite(ctx, d.proxies, newPrimary); err != nil {
			return row, err
		}
	}
	row.moved = time.Since(begin) - faultAt
	if !sleepCtx(ctx, faultAt+row.moved+o.failoverWindow-time.Since(begin)) {
		return row, ctx.Err()
	}
	stopAt := time.Since(begin)
	stopLoad()
	if err := closeClient(); err != nil {
		return row, err
	}

	row.tally(load, faultAt, stopAt, true)

	// Lost: acknowledged, yet not on the new primary.
	have, err := idsOn(ctx, d, newPrimary)
	if err != nil {
		return row, err
	}
	ackMu.Lock() // a stuck writer may still acknowledge
	for id, at := range acked {
		if !have[id] {
			row.lost++
			if at < faultAt {
				row.lostBeforeFault++
			}
		}
	}
	ackMu.Unlock()
	return row, nil
}

// idsOn reads the ids of the failover table on the server at addr.
func idsOn(ctx context.Context, d benchDriver, addr string) (map[int64]bool, error) {
	db, err := sql.Open(d.Driver, d.NodeDSN(addr))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT id FROM "+failoverTable)
	if err != nil {
		return nil, fmt.Errorf("new primary %s: %w", addr, err)
	}
	defer rows.Close()
	have := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		have[id] = true
	}
	return have, rows.Err()
}

// portOf is the port of host:port.
func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// failoverTables are, per scenario, each variant's outcome.
func (r *benchReport) failoverTables() []table {
	var out []table
	var cur *table
	for _, f := range r.failovers {
		title := f.scenario
		for _, s := range failoverScenarios {
			if s.name == f.scenario {
				title = s.title
			}
		}
		title += ", " + f.label
		if cur == nil || cur.title != title {
			out = append(out, table{title: title,
				head: []string{"variant", "moved", "writes", "failed", "writes back", "normal again", "longest",
					"lost", "reads", "failed reads", "first error"},
				right: []bool{false, true, true, true, false, false, true, true, true, true, false},
				chart: r.chartFor(failoverChartName(f))})
			cur = &out[len(out)-1]
		}
		if f.skip != "" {
			cur.rows = append(cur.rows, []string{f.variant, "—", "—", "—", "—", "—", "—", "—", "—", "—", f.skip})
			continue
		}
		var notes []string
		if f.stuck > 0 {
			notes = append(notes, fmt.Sprintf("%d operations still stuck when the bench gave up on them", f.stuck))
		}
		if f.failedInFlight > 0 && f.failedInFlight < f.failedWrites {
			notes = append(notes, fmt.Sprintf("%d of the failed writes were issued before the fault command returned", f.failedInFlight))
		} else if f.failedInFlight > 0 {
			notes = append(notes, "every failed write was issued before the fault command returned")
		}
		if f.lostBeforeFault == 1 {
			notes = append(notes, "the lost write was acknowledged before the fault")
		} else if f.lostBeforeFault > 0 {
			notes = append(notes, fmt.Sprintf("%d lost writes were acknowledged before the fault", f.lostBeforeFault))
		}
		if f.firstWriteErr != "" {
			notes = append(notes, "write: "+shorten(f.firstWriteErr, 80))
		}
		if f.firstReadErr != "" {
			notes = append(notes, "read: "+shorten(f.firstReadErr, 80))
		}
		cur.rows = append(cur.rows, []string{f.variant, fmtDur(f.moved), fmt.Sprint(f.writes), fmt.Sprint(f.failedWrites),
			f.backText(), f.normalText(), fmtDur(f.longest), fmt.Sprint(f.lost), fmt.Sprint(f.reads), fmt.Sprint(f.failedReads),
			strings.Join(notes, "; ")})
	}
	return out
}

// failoverDefinitions explain the failover report.
func failoverDefinitions(o benchOpts) string {
	return fmt.Sprintf(`Each scenario: %d writers INSERT a row with a fresh id, %d readers SELECT
COALESCE(MAX(id), 0) of the same table, each worker one operation every %s
(the next at once after a slower one), each with its own %s context
timeout, through a fresh instance of the variant: the primary through an
endpoint (a TCP forwarder standing for a DNS name, VIP or proxy: moving it
sends new connections to the new target, open ones stay where they were),
replica1 and replica2 directly (bare: the endpoint only). The variants
marked follow_promotion=on have no endpoint: rwpool names the servers
themselves and follows the roles they report. After %s of steady load:
  switchover (MariaDB): the primary is set read-only (cluster.sh
           set-read-only on) and left running, replica1 catches up
           (wait-sync), is promoted (promote-node: STOP SLAVE, read_only=0)
           and the endpoint moves to it.
  promotion (PostgreSQL): the primary is killed (kill-node, SIGKILL),
           replica1 promoted (promote-node: pg_promote()), the endpoint
           moved to it.
The load goes on for %s after the move; then the variant is closed and
the topology restored (rejoin-node replica1 and set-read-only off, or
start-node and rejoin-node; wait-sync) before the next variant. rwpool
runs with its defaults (check_interval=2s, probe_timeout=1s) plus the
DSN items in the variant's name.
  moved         from the fault (the moment the read-only or kill command
                returned: writes issued while it ran may fail too) to the
                endpoint's move (for follow_promotion: the promotion)
  failed        writes that returned an error (a write in flight when the
                primary was killed may have been applied: no client can
                retry it safely)
  writes back   from the fault to the end of the first successful write
                issued after it
  normal again  from the fault until every write in flight succeeded in
                under 100ms, for at least 1s before the load stopped
  longest       the slowest write, failed or not
  lost          acknowledged writes missing on the new primary afterwards
                (acknowledged before a kill and not yet replicated: lost
                to asynchronous replication, whatever the client)
`, failoverWriters, failoverReaders, o.faultPace, failoverOpTimeout, o.faultSteady, o.failoverWindow)
}
