package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/testcluster"
)

// The Patroni scenarios (--patroni): issue 23's leader crash and planned
// switchover on a Patroni-managed cluster (scripts/patroni.sh: etcd, three
// PostgreSQL 15 nodes, ttl 10 s, loop_wait 1 s), where Patroni, not the
// bench, decides who leads, promotes, re-points and rewinds. Each client
// is given what its documentation asks for: rwpool the three nodes and
// follow_promotion=on; pgx the three hosts with target_session_attrs;
// HAProxy Patroni's REST checks; bare lib/pq the leader of the start.

// patroniScenarios are the --patroni scenarios, as failover scenarios (the
// report's tables and charts are the failover ones).
var patroniScenarios = []failoverScenario{
	{"crash", "postgres", "Patroni: leader crashed (SIGKILL of Patroni and PostgreSQL)"},
	{"switchover", "postgres", "Patroni: planned switchover (POST /switchover)"},
}

func benchPatroni() []string {
	var out []string
	for _, s := range patroniScenarios {
		out = append(out, s.name)
	}
	return out
}

// patroniVariant is one client of the Patroni scenarios.
type patroniVariant struct {
	id, kind, extra string
}

func (v patroniVariant) name() string {
	if v.extra == "" {
		return v.id
	}
	return v.kind + " " + strings.ReplaceAll(v.extra, ";", " ")
}

var patroniVariants = []patroniVariant{
	{id: "bare lib/pq", kind: "bare"},
	{id: "pgx multi-host", kind: "pgx"},
	{id: "haproxy", kind: "haproxy"},
	{id: "rwpool", kind: "rwpool", extra: "follow_promotion=on;check_interval=1s"},
	{id: "rwpool-wait", kind: "rwpool", extra: "follow_promotion=on;check_interval=1s;failover_wait=25s"},
}

// patroniOpTimeout is each operation's context: longer than rwpool-wait's
// failover_wait (25 s, itself longer than the crash failover: the ttl,
// 10 s, plus up to about 6 s for the leader race).
const patroniOpTimeout = 30 * time.Second

// patroniCluster is a running scripts/patroni.sh cluster.
type patroniCluster struct {
	script, dir string
	pg          *testcluster.Patroni
	haWrite     string // HAProxy's write endpoint, "" without HAProxy
	haRead      string
}

// patroniUp starts `patroni.sh up` beside cl's cluster.sh, or loads the
// env file --patroni-env names; stop undoes what it started.
func patroniUp(ctx context.Context, o benchOpts, cl *cluster, logf func(string, ...any)) (pc *patroniCluster, stop func() error, err error) {
	file := o.patroniEnv
	stop = func() error { return nil }
	if file == "" {
		script := filepath.Join(filepath.Dir(cl.script), "patroni.sh")
		dir := o.clusterDir + "-patroni"
		env := []string{"RWPOOL_PATRONI_DIR=" + dir}
		logf("bringing the Patroni cluster up: %s up (dir %s)", script, dir)
		if _, err := runScript(ctx, script, env, "up"); err != nil {
			return nil, stop, err
		}
		stop = func() error {
			if o.keepCluster {
				logf("--keep-cluster: Patroni cluster left running; env file %s/env", dir)
				return nil
			}
			logf("tearing the Patroni cluster down")
			_, err := runScript(context.Background(), script, env, "down")
			return err
		}
		file = filepath.Join(dir, "env")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, stop, fmt.Errorf("--patroni-env: %w", err)
	}
	vars := testcluster.ParseEnvFile(string(b))
	p, ok := testcluster.ReadPatroni(func(k string) string { return vars[k] })
	if !ok || vars["RWPOOL_PATRONI_SCRIPT"] == "" {
		return nil, stop, fmt.Errorf("%s: not an env file of scripts/patroni.sh up", file)
	}
	return &patroniCluster{script: vars["RWPOOL_PATRONI_SCRIPT"], dir: vars["RWPOOL_PATRONI_DIR"], pg: &p,
		haWrite: vars["RWPOOL_PATRONI_HAPROXY_WRITE"], haRead: vars["RWPOOL_PATRONI_HAPROXY_READ"]}, stop, nil
}

func (pc *patroniCluster) run(ctx context.Context, args ...string) (string, error) {
	out, err := runScript(ctx, pc.script, []string{"RWPOOL_PATRONI_DIR=" + pc.dir}, args...)
	return strings.TrimSpace(out), err
}

// runPatroni runs scenario s for every variant.
func runPatroni(ctx context.Context, o benchOpts, pc *patroniCluster, s failoverScenario, logf func(string, ...any)) ([]failoverRow, error) {
	var rows []failoverRow
	for _, v := range patroniVariants {
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
		logf("patroni %s: %s, %d writers + %d readers, an operation every %s each", s.name, v.name(), failoverWriters, failoverReaders, o.faultPace)
		row, err := runPatroniVariant(ctx, o, pc, s, v)
		if err != nil {
			return rows, fmt.Errorf("patroni %s, %s: %w", s.name, v.name(), err)
		}
		if row.skip != "" {
			logf("  %s", row.skip)
		} else {
			logf("  new leader writable %s after the fault; writes: %d, %d failed, back after %s, %d lost (%d at the crash), %d twice; reads: %d, %d failed, stalest %s after the new leader, %d saw lost rows",
				fmtDur(row.moved), row.writes, row.failedWrites, row.backText(), row.lost, row.lostBeforeFault, row.dup,
				row.reads, row.failedReads, fmtDur(row.stalest), row.lostReads)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// pgxMultiHost is the pgx URL over every member with the given
// target_session_attrs.
func pgxMultiHost(p *testcluster.Patroni, attrs string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(p.User, p.Password), Host: strings.Join(p.Nodes, ","), Path: "/" + p.Database}
	u.RawQuery = "sslmode=disable&connect_timeout=5&target_session_attrs=" + attrs
	return u.String()
}

func openPatroniVariant(v patroniVariant, pc *patroniCluster, b *testcluster.Backend) (client, error) {
	switch v.kind {
	case "bare":
		return openSQL(b.Driver, b.NodeDSN(b.Primary))
	case "rwpool":
		return openSQL("rwpool", b.DSN(v.extra))
	case "pgx":
		w, err := openSQL("pgx", pgxMultiHost(pc.pg, "read-write"))
		if err != nil {
			return nil, err
		}
		r, err := openSQL("pgx", pgxMultiHost(pc.pg, "prefer-standby"))
		if err != nil {
			w.Close()
			return nil, err
		}
		return splitClient{write: w.db, read: r.db}, nil
	case "haproxy":
		w, err := openSQL(b.Driver, b.NodeDSN(pc.haWrite))
		if err != nil {
			return nil, err
		}
		r, err := openSQL(b.Driver, b.NodeDSN(pc.haRead))
		if err != nil {
			w.Close()
			return nil, err
		}
		return splitClient{write: w.db, read: r.db}, nil
	}
	return nil, fmt.Errorf("unknown variant kind %q", v.kind)
}

// runPatroniVariant runs one variant through scenario s; the cluster is
// left healthy (every member streaming from a leader) for the next.
func runPatroniVariant(ctx context.Context, o benchOpts, pc *patroniCluster, s failoverScenario, v patroniVariant) (row failoverRow, err error) {
	row = failoverRow{driver: s.driver, label: "PostgreSQL under Patroni (lib/pq; pgx for pgx)", scenario: "patroni-" + s.name, variant: v.name(),
		faultLabel: "leader killed", moveLabel: "new leader writable", gapLabel: "no writable leader"}
	if s.name == "switchover" {
		row.faultLabel = "switchover requested"
	}
	if v.kind == "haproxy" && pc.haWrite == "" {
		row.skip = "n/a: haproxy is not installed"
		return row, nil
	}
	if _, err := pc.run(ctx, "wait-members"); err != nil {
		return row, err
	}
	port, err := pc.run(ctx, "leader")
	if err != nil {
		return row, err
	}
	old := "127.0.0.1:" + port
	b := pc.pg.Backend(old)
	setup, err := sql.Open(b.Driver, b.NodeDSN(old))
	if err != nil {
		return row, err
	}
	defer setup.Close()
	// No key: a write applied twice shows as two rows.
	for _, q := range []string{"DROP TABLE IF EXISTS " + failoverTable, "CREATE TABLE " + failoverTable + " (id BIGINT NOT NULL, w INT)"} {
		if _, err := setup.ExecContext(ctx, q); err != nil {
			return row, fmt.Errorf("leader: %s: %w", q, err)
		}
	}
	setup.Close()
	if _, err := pc.run(ctx, "wait-members"); err != nil {
		return row, err
	}
	c, err := openPatroniVariant(v, pc, b)
	if err != nil {
		return row, err
	}
	closeClient := closeOnce(c)
	defer closeClient()

	type ack struct {
		at   time.Duration
		port int64
	}
	type read struct {
		start time.Duration
		max   int64
		node  string // rwpool's variants: the node that served it
	}
	var (
		ids   atomic.Int64
		mu    sync.Mutex
		acked = map[int64]ack{}
		seen  []read
		load  = newMixedLoad(o.faultPace, patroniOpTimeout)
		begin = load.begin
	)
	for w := range failoverWriters {
		load.write(func(ctx context.Context) error {
			id := ids.Add(1)
			p, err := c.scanInt(ctx, fmt.Sprintf("INSERT INTO %s (id, w) VALUES (%d, %d) RETURNING inet_server_port()", failoverTable, id, w))
			if err != nil {
				return err
			}
			mu.Lock()
			acked[id] = ack{time.Since(begin), p}
			mu.Unlock()
			return nil
		})
	}
	for range failoverReaders {
		load.read(func(ctx context.Context) error {
			start := time.Since(begin)
			var route rwpool.Route
			if v.kind == "rwpool" {
				ctx = rwpool.WithRoute(ctx, &route)
			}
			m, err := c.scanInt(ctx, "SELECT COALESCE(MAX(id), 0) FROM "+failoverTable)
			if err != nil {
				return err
			}
			mu.Lock()
			seen = append(seen, read{start, m, route.Node})
			mu.Unlock()
			return nil
		})
	}
	stopLoad := load.stop
	defer func() {
		stopLoad()
		// Whatever happened: the crashed node started again, every member
		// streaming from the leader, for the next variant.
		_, serr := pc.run(context.Background(), "start-node", port)
		_, werr := pc.run(context.Background(), "wait-members")
		err = errors.Join(err, closeClient(), serr, werr)
	}()

	if !sleepCtx(ctx, o.faultSteady) {
		return row, ctx.Err()
	}
	// The new leader: the first other member seen writable, polled every
	// 20 ms through the bare driver (testcluster.LeaderWatch, as the
	// Patroni fault tests time it).
	watch, err := testcluster.WatchLeader(b, append([]string{old}, b.Replicas...), old)
	if err != nil {
		return row, err
	}
	defer watch.Stop()
	cmdAt := time.Since(begin)
	faultDone := make(chan error, 1)
	go func() {
		if s.name == "switchover" {
			_, err := pc.run(ctx, "switchover")
			faultDone <- err
			return
		}
		_, err := pc.run(ctx, "kill-node", port)
		faultDone <- err
	}()
	newLeader, writableAt, err := watch.NewLeader(ctx, 60*time.Second)
	if err != nil {
		return row, fmt.Errorf("members but %s: %w", old, err)
	}
	watch.Stop()
	if err := <-faultDone; err != nil {
		return row, err
	}
	faultAt := cmdAt
	row.faultCmd = 0
	row.moved = writableAt.Sub(begin) - faultAt
	// The crashed leader is started again 2 s after the new leader is
	// writable: Patroni rewinds it and it rejoins as a standby under load.
	if !sleepCtx(ctx, time.Until(writableAt.Add(2*time.Second))) {
		return row, ctx.Err()
	}
	if s.name == "crash" {
		if _, err := pc.run(ctx, "start-node", port); err != nil {
			return row, err
		}
	}
	if !sleepCtx(ctx, time.Until(writableAt.Add(o.failoverWindow))) {
		return row, ctx.Err()
	}
	stopAt := time.Since(begin)
	stopLoad()
	if err := closeClient(); err != nil {
		return row, err
	}

	row.tally(load, faultAt, stopAt, false)
	newAt := writableAt.Sub(begin)

	have, dup, err := patroniIDs(ctx, b, newLeader)
	if err != nil {
		return row, err
	}
	row.dup = dup
	mu.Lock()
	defer mu.Unlock()
	newPort, oldPort := int64(atoiPort(newLeader)), int64(atoiPort(old))
	var onLeader []testcluster.Ack
	for id, a := range acked {
		switch {
		case !have[id]:
			row.lost++
			if s.name == "crash" && a.at < newAt {
				row.lostBeforeFault++ // acknowledged by the old leader, never replicated
			}
		default:
			onLeader = append(onLeader, testcluster.Ack{ID: id, At: a.at})
		}
		switch {
		case a.port == newPort && a.at >= newAt:
			if back := a.at - newAt; !row.backOK || back < row.back {
				row.back, row.backOK = back, true
			}
		case a.port != newPort && a.port != oldPort:
			row.offLeader++
		}
	}
	// The stalest read after the new leader was writable: the age of the
	// oldest write on the leader acknowledged before the read began and
	// missing from what it saw (ids above its max).
	stale := testcluster.NewStaleness(onLeader)
	for _, r := range seen {
		if r.max > 0 && !have[r.max] && r.start >= faultAt {
			row.lostReads++
		}
		if d, ok := stale.Of(r.start, r.max); ok && r.start >= newAt && d > row.stalest {
			row.stalest = d
			row.stalestWhere = fmt.Sprintf("stalest read %s after the new leader was writable", fmtDur(r.start-newAt))
			if r.node != "" {
				row.stalestWhere += ", on " + r.node
			}
		}
	}
	return row, nil
}

func atoiPort(addr string) int {
	p, _ := strconv.Atoi(portOf(addr))
	return p
}

// patroniIDs reads the ids of the table on the leader, and how many are
// there twice.
func patroniIDs(ctx context.Context, b *testcluster.Backend, addr string) (map[int64]bool, int, error) {
	db, err := sql.Open(b.Driver, b.NodeDSN(addr))
	if err != nil {
		return nil, 0, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT id, count(*) FROM "+failoverTable+" GROUP BY id")
	if err != nil {
		return nil, 0, fmt.Errorf("leader %s: %w", addr, err)
	}
	defer rows.Close()
	have, dup := map[int64]bool{}, 0
	for rows.Next() {
		var id, n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, 0, err
		}
		have[id] = true
		if n > 1 {
			dup++
		}
	}
	return have, dup, rows.Err()
}

// patroniTables are the Patroni scenarios' outcomes, a table per scenario.
func (r *benchReport) patroniTables() []table {
	var out []table
	for _, s := range patroniScenarios {
		t := table{title: s.title,
			head: []string{"variant", "leader writable", "writes", "failed", "writes back", "longest", "lost", "at the crash",
				"twice", "off the leader", "reads", "failed reads", "stalest read", "lost rows read", "first error"},
			right: []bool{false, true, true, true, false, true, true, true, true, true, true, true, true, true, false},
			chart: r.chartFor(failoverChartName(failoverRow{scenario: "patroni-" + s.name, driver: s.driver}))}
		for _, f := range r.patroni {
			if f.scenario != "patroni-"+s.name {
				continue
			}
			if f.skip != "" {
				t.rows = append(t.rows, []string{f.variant, "—", "—", "—", "—", "—", "—", "—", "—", "—", "—", "—", "—", "—", f.skip})
				continue
			}
			var notes []string
			if f.stuck > 0 {
				notes = append(notes, fmt.Sprintf("%d operations still stuck when the bench gave up on them", f.stuck))
			}
			if f.stalest >= time.Second {
				notes = append(notes, f.stalestWhere)
			}
			if f.firstWriteErr != "" {
				notes = append(notes, "write: "+shorten(f.firstWriteErr, 80))
			}
			if f.firstReadErr != "" {
				notes = append(notes, "read: "+shorten(f.firstReadErr, 80))
			}
			back := "never"
			if f.backOK {
				back = fmtDur(f.back)
			}
			t.rows = append(t.rows, []string{f.variant, fmtDur(f.moved), fmt.Sprint(f.writes), fmt.Sprint(f.failedWrites),
				back, fmtDur(f.longest), fmt.Sprint(f.lost - f.lostBeforeFault), fmt.Sprint(f.lostBeforeFault), fmt.Sprint(f.dup),
				fmt.Sprint(f.offLeader), fmt.Sprint(f.reads), fmt.Sprint(f.failedReads), fmtDur(f.stalest), fmt.Sprint(f.lostReads),
				strings.Join(notes, "; ")})
		}
		if len(t.rows) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// patroniDefinitions explain the Patroni report.
func patroniDefinitions(o benchOpts) string {
	names := make([]string, len(patroniVariants))
	for i, v := range patroniVariants {
		names[i] = v.name()
	}
	return fmt.Sprintf(`A Patroni 3.0 cluster with etcd 3.4 (scripts/patroni.sh): three PostgreSQL
nodes, ttl 10 s, loop_wait 1 s, retry_timeout 3 s, use_pg_rewind. %d writers
INSERT a row with a fresh id (RETURNING the server's port), %d readers
SELECT COALESCE(MAX(id), 0), each worker one operation every %s, each with
its own %s context timeout. After %s of steady load:
  crash       the leader's Patroni agent and PostgreSQL are killed
              (SIGKILL); Patroni promotes a standby once the leader key
              expires; 2 s after the new leader is writable the crashed
              node is started again (Patroni rewinds it, it rejoins as a
              standby) while the load goes on.
  switchover  POST /switchover to the leader's REST API; the old leader
              rejoins as a standby by itself.
The load goes on until %s after the new leader was writable.
Variants: %s.
  bare lib/pq      the leader of the start, for reads and writes
  pgx multi-host   pgx's stdlib over the three hosts: writes with
                   target_session_attrs=read-write, reads with
                   prefer-standby (two pools)
  haproxy          HAProxy with Patroni's REST checks, as Patroni's docs set
                   it up (bench/proxies/haproxy-patroni.cfg): writes to the
                   server GET /primary answers 200 on, reads balanced over
                   those /replica does; checks every 1s, down after 2
  rwpool           the three nodes as a static list (the leader of the
                   start as primary), follow_promotion=on, check_interval=1s
  leader writable  from the fault to the first poll (every 20 ms) that saw
                   another member writable
  writes back      from then to the first write acknowledged by it
  lost             acknowledged writes missing on the new leader; "at the
                   crash": of them, those acknowledged before the new leader
                   was writable, which the crashed leader never sent to a
                   standby (asynchronous replication loses them by design)
  twice            ids on the new leader twice (the table has no key)
  off the leader   writes acknowledged by a node that never led
  stalest read     of the reads begun once the new leader was writable, the
                   largest age of an acknowledged write (on the new leader)
                   that the read did not see
  lost rows read   reads begun after the fault that saw a row the new
                   leader does not have
`, failoverWriters, failoverReaders, o.faultPace, patroniOpTimeout, o.faultSteady, o.failoverWindow, strings.Join(names, ", "))
}

// patroniChartRows groups the Patroni rows for their charts.
func (r *benchReport) patroniChartRows() map[string][]failoverRow {
	out := map[string][]failoverRow{}
	for _, f := range r.patroni {
		if f.skip == "" {
			out[failoverChartName(f)] = append(out[failoverChartName(f)], f)
		}
	}
	return out
}
