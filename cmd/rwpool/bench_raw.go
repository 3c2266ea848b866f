package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/plugin/dbresolver"

	"github.com/rwpool/rwpool"
)

// The read-after-write scenario (--read-after-write): a write in one
// process, a read of it in another a few milliseconds later (the page a
// redirect leads to, a job the request queued). What each way of keeping
// that read consistent costs and buys: the share of such reads replicas
// serve, the reads that miss the write (stale), and the reader's latency.
//
// A "process" is a *sql.DB of its own: the writer's and the reader's
// share no pool, no Connector and no session, only what the writer hands
// over (a token, a time, a position), as two processes would. They run in
// one OS process so that the bench can compare the value read with the
// one written; nothing else passes between them.
//
// The peers' ways are implemented here, minimally, with the bare driver:
//
//   - the Rails way: ActiveRecord's automatic role switching
//     (ActiveRecord::Middleware::DatabaseSelector) keeps the time of a
//     session's last write in its cookie and sends its reads to the
//     primary for `delay` after it (2 s, the documented default), to the
//     reading role (one replica) afterwards;
//   - the GitLab way: GitLab's database load balancer keeps the primary's
//     write location (pg_current_wal_insert_lsn()) after a write (in the
//     session, or in a Sidekiq job's payload); a later request or job
//     reads from a replica only if one, tried in random order, has
//     replayed that location (pg_last_wal_replay_lsn()), else from the
//     primary. GitLab runs on PostgreSQL only; on MariaDB the same way is
//     @@gtid_binlog_pos after the write and MASTER_GTID_WAIT(pos, 0) on
//     the replica (0: it has it, -1: not yet, without waiting).
//
// bare and dbresolver hand nothing over: what an application without a
// consistency mechanism gets.

// rawTable holds one row per writer/reader pair.
const rawTable = "rwpool_bench_raw"

// rawRailsDelay is the Rails way's window: ActiveRecord's
// DatabaseSelector default (config.active_record.database_selector =
// { delay: 2.seconds }).
const rawRailsDelay = 2 * time.Second

// rawConditions are the replication conditions the scenario runs under,
// by name (--read-after-write).
var rawConditions = []string{"normal", "delayed"}

// rawVariants are the ways compared, in report order (--raw-variants).
var rawVariants = []string{"bare", "rwpool", "dbresolver", "rails", "gitlab", "bare-again"}

// rawVariantDescriptions explain each way: the writer's side, then the
// reader's.
var rawVariantDescriptions = map[string]string{
	"bare": "no consistency: the writer hands nothing over; the reader reads from replica1 (an application that " +
		"sends its reads to \"the replica\")",
	"rwpool": "rwpool with tokens: the writer writes in a WithSession context and hands over rwpool.SessionToken; " +
		"the reader resumes it with rwpool.WithSessionToken. Both are rwpool over the primary, replica1 and replica2 " +
		"with the defaults (causal_wait=50ms, causal_fallback=primary)",
	"dbresolver": "no consistency: gorm + dbresolver on both sides, Sources=primary, Replicas=replica1, replica2 " +
		"(random policy); nothing is handed over",
	"rails": "the Rails way (ActiveRecord's DatabaseSelector, delay 2s): the writer hands over the time of its " +
		"write; the reader reads from the primary within 2s of it, else from replica1",
	"gitlab": "the GitLab way (its load balancer's sticking): the writer hands over the primary's position after " +
		"the write (pg_current_wal_insert_lsn(); MariaDB @@gtid_binlog_pos); the reader asks replica1 and replica2, " +
		"in random order, whether they have replayed it (pg_last_wal_replay_lsn() >= it; MariaDB MASTER_GTID_WAIT(it, 0)) " +
		"and reads from the first that has, else from the primary",
}

// rawVariantDescription explains variant v of the scenario.
func rawVariantDescription(v string) string {
	if v == "bare-again" {
		return "bare once more in each round: its p99 minus bare's is the noise floor"
	}
	return rawVariantDescriptions[v]
}

// rawConditionTitle is condition c under o, in the report.
func rawConditionTitle(o benchOpts, c string) string {
	if c == "delayed" {
		return fmt.Sprintf("replica1 applies %s late", o.rawDelay)
	}
	return "replication at its normal pace"
}

// rawHandoff is what a writer hands its reader: each way uses its own
// field.
type rawHandoff struct {
	token   string    // rwpool: the writer session's token
	wroteAt time.Time // the Rails way: when the write returned
	pos     string    // the GitLab way: the primary's position after the write
}

// rawWriter is the writer process of a way: it sets row id to v on the
// primary and returns what it hands over.
type rawWriter interface {
	write(ctx context.Context, id, v int64) (rawHandoff, error)
	Close() error
}

// rawReader is the reader process of a way: it reads row id as its way
// decides from what was handed over, and returns the value and the port
// of the server that answered.
type rawReader interface {
	read(ctx context.Context, h rawHandoff, id int64) (v, port int64, err error)
	Close() error
}

// rawSQL are the scenario's statements on one engine. Those for gorm use
// ? placeholders on both engines (gorm rewrites them for PostgreSQL).
type rawSQL struct {
	update, read         string // database/sql, the driver's placeholders
	gormUpdate, gormRead string
	position             string // the primary's position after the write (GitLab)
	// caughtUp asks a replica whether it has replayed a position (GitLab),
	// with the position in the statement's text: one round trip, as
	// rwpool's own check, where a statement with arguments costs two on
	// lib/pq (parse, then bind) and three on go-sql-driver/mysql without
	// interpolateParams (prepare, execute, close). The application's own
	// statements (the UPDATE, the read) keep their arguments: every
	// variant pays for those alike.
	caughtUp func(pos string) (string, error)
}

// Positions as the primary gives them, checked before they go into a
// statement's text: a PostgreSQL LSN, a MariaDB GTID list.
var (
	lsnRE  = regexp.MustCompile(`^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$`)
	gtidRE = regexp.MustCompile(`^[0-9]+-[0-9]+-[0-9]+(,[0-9]+-[0-9]+-[0-9]+)*$`)
)

func rawQueries(d benchDriver) rawSQL {
	if d.IsPostgres() {
		return rawSQL{
			update:     "UPDATE " + rawTable + " SET v = $1 WHERE id = $2",
			read:       "SELECT v, inet_server_port() FROM " + rawTable + " WHERE id = $1",
			gormUpdate: "UPDATE " + rawTable + " SET v = ? WHERE id = ?",
			gormRead:   "SELECT v, inet_server_port() FROM " + rawTable + " WHERE id = ?",
			position:   "SELECT pg_current_wal_insert_lsn()::text",
			caughtUp: func(pos string) (string, error) {
				if !lsnRE.MatchString(pos) {
					return "", fmt.Errorf("not an LSN: %q", pos)
				}
				return "SELECT COALESCE(pg_last_wal_replay_lsn() >= '" + pos + "'::pg_lsn, false)", nil
			},
		}
	}
	return rawSQL{
		update:     "UPDATE " + rawTable + " SET v = ? WHERE id = ?",
		read:       "SELECT v, @@port FROM " + rawTable + " WHERE id = ?",
		gormUpdate: "UPDATE " + rawTable + " SET v = ? WHERE id = ?",
		gormRead:   "SELECT v, @@port FROM " + rawTable + " WHERE id = ?",
		position:   "SELECT @@gtid_binlog_pos",
		caughtUp: func(pos string) (string, error) {
			if !gtidRE.MatchString(pos) {
				return "", fmt.Errorf("not a GTID position: %q", pos)
			}
			return "SELECT MASTER_GTID_WAIT('" + pos + "', 0) = 0", nil
		},
	}
}

// handOver says what a bare writer hands over.
type handOver int

const (
	handNothing  handOver = iota
	handTime              // the Rails way
	handPosition          // the GitLab way
)

// bareRawWriter writes through the bare driver on the primary.
type bareRawWriter struct {
	db   *sql.DB
	q    rawSQL
	hand handOver
}

func (w bareRawWriter) write(ctx context.Context, id, v int64) (rawHandoff, error) {
	var h rawHandoff
	if _, err := w.db.ExecContext(ctx, w.q.update, v, id); err != nil {
		return h, err
	}
	switch w.hand {
	case handTime:
		h.wroteAt = time.Now()
	case handPosition:
		// After the commit, on any connection: the primary's position
		// then covers the write.
		if err := w.db.QueryRowContext(ctx, w.q.position).Scan(&h.pos); err != nil {
			return h, fmt.Errorf("the primary's position: %w", err)
		}
	}
	return h, nil
}

func (w bareRawWriter) Close() error { return w.db.Close() }

// sqlRawReader reads from one database: the bare driver on replica1.
type sqlRawReader struct {
	db *sql.DB
	q  rawSQL
}

func (r sqlRawReader) read(ctx context.Context, _ rawHandoff, id int64) (v, port int64, err error) {
	err = r.db.QueryRowContext(ctx, r.q.read, id).Scan(&v, &port)
	return v, port, err
}

func (r sqlRawReader) Close() error { return r.db.Close() }

// rwpoolRawWriter writes through rwpool in a session of its own and hands
// over the session's token.
type rwpoolRawWriter struct {
	db *sql.DB
	q  rawSQL
}

func (w rwpoolRawWriter) write(ctx context.Context, id, v int64) (rawHandoff, error) {
	ctx = rwpool.WithSession(ctx)
	if _, err := w.db.ExecContext(ctx, w.q.update, v, id); err != nil {
		return rawHandoff{}, err
	}
	tok := rwpool.SessionToken(ctx)
	if tok == "" {
		// The write's position could not be read: the reader would read
		// with no consistency at all. Counted as a failed write.
		return rawHandoff{}, errors.New("rwpool.SessionToken returned no token after a write")
	}
	return rawHandoff{token: tok}, nil
}

func (w rwpoolRawWriter) Close() error { return w.db.Close() }

// rwpoolRawReader resumes the writer's token and reads through rwpool.
type rwpoolRawReader struct {
	db *sql.DB
	q  rawSQL
}

func (r rwpoolRawReader) read(ctx context.Context, h rawHandoff, id int64) (v, port int64, err error) {
	ctx, err = rwpool.WithSessionToken(ctx, h.token)
	if err != nil {
		return 0, 0, err
	}
	err = r.db.QueryRowContext(ctx, r.q.read, id).Scan(&v, &port)
	return v, port, err
}

func (r rwpoolRawReader) Close() error { return r.db.Close() }

// gormRawSide is gorm + dbresolver, as the writer (its writes go to the
// Sources) or as the reader (Clauses(dbresolver.Read): a replica).
type gormRawSide struct {
	g *gormReader
	q rawSQL
}

func (s gormRawSide) write(ctx context.Context, id, v int64) (rawHandoff, error) {
	return rawHandoff{}, s.g.db.WithContext(ctx).Exec(s.q.gormUpdate, v, id).Error
}

func (s gormRawSide) read(ctx context.Context, _ rawHandoff, id int64) (v, port int64, err error) {
	err = s.g.db.WithContext(ctx).Clauses(dbresolver.Read).Raw(s.q.gormRead, id).Row().Scan(&v, &port)
	return v, port, err
}

func (s gormRawSide) Close() error { return s.g.Close() }

// railsRawReader reads from the primary within rawRailsDelay of the
// write it was handed, else from its one replica.
type railsRawReader struct {
	primary, replica *sql.DB
	q                rawSQL
}

func (r railsRawReader) read(ctx context.Context, h rawHandoff, id int64) (v, port int64, err error) {
	db := r.replica
	if time.Since(h.wroteAt) < rawRailsDelay {
		db = r.primary
	}
	err = db.QueryRowContext(ctx, r.q.read, id).Scan(&v, &port)
	return v, port, err
}

func (r railsRawReader) Close() error { return errors.Join(r.primary.Close(), r.replica.Close()) }

// gitlabRawReader asks the replicas, in random order, whether they have
// replayed the position it was handed, and reads from the first that
// has; from the primary if none has. A replica that cannot be asked
// fails the read: the bench wants to see it, not hide it.
type gitlabRawReader struct {
	primary  *sql.DB
	replicas []*sql.DB
	q        rawSQL
}

func (r gitlabRawReader) read(ctx context.Context, h rawHandoff, id int64) (v, port int64, err error) {
	check, err := r.q.caughtUp(h.pos)
	if err != nil {
		return 0, 0, err
	}
	db := r.primary
	for _, i := range rand.Perm(len(r.replicas)) {
		var ok bool
		if err := r.replicas[i].QueryRowContext(ctx, check).Scan(&ok); err != nil {
			return 0, 0, fmt.Errorf("replica%d caught up?: %w", i+1, err)
		}
		if ok {
			db = r.replicas[i]
			break
		}
	}
	err = db.QueryRowContext(ctx, r.q.read, id).Scan(&v, &port)
	return v, port, err
}

func (r gitlabRawReader) Close() error {
	errs := []error{r.primary.Close()}
	for _, db := range r.replicas {
		errs = append(errs, db.Close())
	}
	return errors.Join(errs...)
}

// openRaw opens variant v's writer and reader against d: two processes'
// worth of pools, nothing shared.
func openRaw(v string, d benchDriver) (w rawWriter, r rawReader, err error) {
	if len(d.Replicas) < 2 {
		return nil, nil, fmt.Errorf("%s: the cluster has %d replicas, bench needs 2", d.Driver, len(d.Replicas))
	}
	q := rawQueries(d)
	primary, r1, r2 := d.NodeDSN(d.Primary), d.NodeDSN(d.Replicas[0]), d.NodeDSN(d.Replicas[1])
	var opened []interface{ Close() error }
	defer func() {
		if err != nil {
			for _, c := range opened {
				c.Close()
			}
		}
	}()
	db := func(driver, dsn string) *sql.DB {
		if err != nil {
			return nil
		}
		var s sqlReader
		if s, err = openSQL(driver, dsn); err != nil {
			return nil
		}
		opened = append(opened, s.db)
		return s.db
	}
	switch baseVariant(v) {
	case "bare":
		w, r = bareRawWriter{db: db(d.Driver, primary), q: q}, sqlRawReader{db: db(d.Driver, r1), q: q}
	case "rwpool":
		dsn := rwpoolDSN(d, 2)
		w, r = rwpoolRawWriter{db: db("rwpool", dsn), q: q}, rwpoolRawReader{db: db("rwpool", dsn), q: q}
	case "dbresolver":
		var gw, gr *gormReader
		if gw, err = openGorm(d.Driver, primary, r1, r2); err != nil {
			return nil, nil, err
		}
		opened = append(opened, gw)
		if gr, err = openGorm(d.Driver, primary, r1, r2); err != nil {
			return nil, nil, err
		}
		w, r = gormRawSide{gw, q}, gormRawSide{gr, q}
	case "rails":
		w = bareRawWriter{db: db(d.Driver, primary), q: q, hand: handTime}
		r = railsRawReader{primary: db(d.Driver, primary), replica: db(d.Driver, r1), q: q}
	case "gitlab":
		w = bareRawWriter{db: db(d.Driver, primary), q: q, hand: handPosition}
		r = gitlabRawReader{primary: db(d.Driver, primary), replicas: []*sql.DB{db(d.Driver, r1), db(d.Driver, r2)}, q: q}
	default:
		return nil, nil, fmt.Errorf("unknown read-after-write variant %q", v)
	}
	if err != nil {
		return nil, nil, err
	}
	return w, r, nil
}

// rawResult is one measured run of the scenario's pairs.
type rawResult struct {
	writes, writeErrs int
	reads, readErrs   int // reads: those that succeeded
	onReplica, stale  int // of the reads
	firstErr          error
	readLat, writeLat []time.Duration // sorted; successful operations only
}

// rawGap is the wait between a write's return and its read: uniformly
// random in [lo, hi].
func rawGap(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + rand.N(hi-lo+1)
}

// rawInstance is one variant opened: its writer and reader, and the rows
// its pairs write (firstID, firstID+1, ...): its own, so that variants
// warming up together do not write each other's rows.
type rawInstance struct {
	variant string
	w       rawWriter
	r       rawReader
	firstID int64
}

func (in rawInstance) Close() error { return errors.Join(in.w.Close(), in.r.Close()) }

// runRawPairs runs o.rawGoroutines writer/reader pairs of in for d, pair k
// on row in.firstID+k: write the next value of seq (values only grow, so a
// read that returns another value than the one just written is stale),
// wait a gap, read. The statements run with context.Background(), as the
// throughput part's. ready, if not nil, is asked every 100ms once d is
// over; the pairs go on until it says true, or until maxWait.
func runRawPairs(ctx context.Context, in rawInstance, o benchOpts, primaryPort int64, seq *atomic.Int64, d time.Duration,
	ready func() bool, maxWait time.Duration) rawResult {
	var stop atomic.Bool
	g, w, r := o.rawGoroutines, in.w, in.r
	res := make([]rawResult, g)
	var wg sync.WaitGroup
	for k := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bg, id, my := context.Background(), in.firstID+int64(k), &res[k]
			fail := func(err error) {
				if my.firstErr == nil {
					my.firstErr = err
				}
				time.Sleep(rawGap(o.rawGapMin, o.rawGapMax)) // no busy loop on a persistent error
			}
			for !stop.Load() {
				v := seq.Add(1)
				t := time.Now()
				h, err := w.write(bg, id, v)
				lat := time.Since(t)
				my.writes++
				if err != nil {
					my.writeErrs++
					fail(fmt.Errorf("write: %w", err))
					continue
				}
				my.writeLat = append(my.writeLat, lat)
				time.Sleep(rawGap(o.rawGapMin, o.rawGapMax))
				t = time.Now()
				got, port, err := r.read(bg, h, id)
				lat = time.Since(t)
				if err != nil {
					my.readErrs++
					fail(fmt.Errorf("read: %w", err))
					continue
				}
				my.reads++
				my.readLat = append(my.readLat, lat)
				if port != primaryPort {
					my.onReplica++
				}
				if got != v {
					my.stale++
				}
			}
		}()
	}
	if sleepCtx(ctx, d) && ready != nil {
		for deadline := time.Now().Add(maxWait); !ready() && time.Now().Before(deadline); {
			if !sleepCtx(ctx, 100*time.Millisecond) {
				break
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	var out rawResult
	for _, p := range res {
		out.writes, out.writeErrs = out.writes+p.writes, out.writeErrs+p.writeErrs
		out.reads, out.readErrs = out.reads+p.reads, out.readErrs+p.readErrs
		out.onReplica, out.stale = out.onReplica+p.onReplica, out.stale+p.stale
		out.readLat, out.writeLat = append(out.readLat, p.readLat...), append(out.writeLat, p.writeLat...)
		if out.firstErr == nil {
			out.firstErr = p.firstErr
		}
	}
	slices.Sort(out.readLat)
	slices.Sort(out.writeLat)
	return out
}

// rawRound is one variant's figures in one round.
type rawRound struct {
	reads, errs, onReplica, stale int
	p50, p99, writeP50            time.Duration
}

func (f rawRound) replicaShare() float64 { return pctOf(f.onReplica, f.reads) }
func (f rawRound) staleShare() float64   { return pctOf(f.stale, f.reads) }

// pctOf is n in percent of of; NaN for none.
func pctOf(n, of int) float64 {
	if of == 0 {
		return math.NaN()
	}
	return 100 * float64(n) / float64(of)
}

// rawRow is one variant under one condition over the rounds.
type rawRow struct {
	driver, label, condition, variant string
	rounds                            []rawRound
	firstErr                          string
}

// total sums a count over the rounds.
func (t rawRow) total(f func(rawRound) int) int {
	n := 0
	for _, r := range t.rounds {
		n += f(r)
	}
	return n
}

// field picks one figure of every round.
func (t rawRow) field(f func(rawRound) float64) []float64 {
	out := make([]float64, 0, len(t.rounds))
	for _, r := range t.rounds {
		if x := f(r); !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}

// runReadAfterWrite runs the scenario on driver d under each condition of
// o: the variants interleaved in rounds, as the throughput part does.
func runReadAfterWrite(ctx context.Context, o benchOpts, cl *cluster, d benchDriver, logf func(string, ...any)) ([]rawRow, error) {
	var rows []rawRow
	seq := &atomic.Int64{}
	for _, c := range o.raw {
		res, err := runRawCondition(ctx, o, cl, d, c, seq, logf)
		rows = append(rows, res...)
		if err != nil {
			return rows, fmt.Errorf("read after write, %s, %s: %w", d.Driver, c, err)
		}
	}
	return rows, nil
}

// rawIDs is how far apart the rows of two variants are.
const rawIDs = 1000

// rawLagWait bounds how long the warm-up waits for rwpool's health
// checkers to measure every replica's lag.
const rawLagWait = 15 * time.Second

// runRawCondition sets up the table and condition c, opens every variant,
// warms them up together, measures them in rounds and undoes the
// condition (whatever happens).
//
// Unlike the throughput part, each variant is opened once for all the
// rounds: its pools hold a few connections (--raw-goroutines pairs), and
// what is measured is the steady state of long-running processes. rwpool's
// health checker learns a replica's lag from the primary's positions over
// a few check_intervals (2s): a Connector younger than that does not know
// that a delayed replica is far behind and asks it, waiting causal_wait
// for a write it cannot have. The warm-up therefore goes on until every
// rwpool Connector has measured every replica's lag.
func runRawCondition(ctx context.Context, o benchOpts, cl *cluster, d benchDriver, c string, seq *atomic.Int64, logf func(string, ...any)) (rows []rawRow, err error) {
	primaryPort, err := strconv.ParseInt(portOf(d.Primary), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("primary %q: %w", d.Primary, err)
	}
	setup, err := sql.Open(d.Driver, d.NodeDSN(d.Primary))
	if err != nil {
		return nil, err
	}
	defer setup.Close()
	stmts := []string{"DROP TABLE IF EXISTS " + rawTable, "CREATE TABLE " + rawTable + " (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)"}
	for i := range o.rawVariants {
		var vals []string
		for k := range o.rawGoroutines {
			vals = append(vals, fmt.Sprintf("(%d, 0)", int64(i+1)*rawIDs+int64(k)))
		}
		stmts = append(stmts, "INSERT INTO "+rawTable+" (id, v) VALUES "+strings.Join(vals, ", "))
	}
	for _, s := range stmts {
		if _, err := setup.ExecContext(ctx, s); err != nil {
			return nil, fmt.Errorf("primary: %s: %w", s, err)
		}
	}
	defer func() {
		if _, derr := setup.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+rawTable); derr != nil {
			err = errors.Join(err, fmt.Errorf("primary: drop %s: %w", rawTable, derr))
		}
	}()
	// The replicas have the table before replica1 is delayed.
	if err := cl.waitHealthy(ctx); err != nil {
		return nil, err
	}
	if c == "delayed" {
		secs := strconv.Itoa(int(o.rawDelay / time.Second))
		logf("read after write (%s): replica1 applies %s late (cluster.sh delay-node %s %s)", d.Driver, o.rawDelay, portOf(d.Replicas[0]), secs)
		if _, err := cl.run(ctx, "delay-node", portOf(d.Replicas[0]), secs); err != nil {
			return nil, err
		}
		defer func() {
			bg := context.Background()
			_, derr := cl.run(bg, "delay-node", portOf(d.Replicas[0]), "0")
			err = errors.Join(err, derr, cl.waitHealthy(bg))
		}()
	}

	var ins []rawInstance
	defer func() {
		for _, in := range ins {
			err = errors.Join(err, in.Close())
		}
	}()
	for i, v := range o.rawVariants {
		w, r, err := openRaw(v, d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v, err)
		}
		ins = append(ins, rawInstance{variant: v, w: w, r: r, firstID: int64(i+1) * rawIDs})
	}
	logf("read after write %s %s: warming up %d variants together for %s (rwpool: until its health checkers know every replica's lag)",
		d.Driver, c, len(ins), o.rawWarmup)
	var wg sync.WaitGroup
	warm := make([]rawResult, len(ins))
	for i, in := range ins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			warm[i] = runRawPairs(ctx, in, o, primaryPort, seq, o.rawWarmup, lagKnown(in), rawLagWait)
		}()
	}
	wg.Wait()
	for i, in := range ins {
		if warm[i].reads == 0 {
			return nil, fmt.Errorf("%s: no read succeeded in the warm-up (%d writes, %d failed): %v",
				in.variant, warm[i].writes, warm[i].writeErrs, warm[i].firstErr)
		}
		if ready := lagKnown(in); ready != nil && !ready() {
			logf("  %s: a replica's lag is still unknown after the warm-up and %s more", in.variant, rawLagWait)
		}
	}

	results := map[string][]rawResult{}
	for round := range o.rawRounds {
		for _, in := range roundOrderOf(ins, round) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			res := runRawPairs(ctx, in, o, primaryPort, seq, o.rawDuration, nil, 0)
			results[in.variant] = append(results[in.variant], res)
			logf("read after write %s %s round %d/%d %-10s %6d reads, %5.1f%% on a replica, %d stale, p50 %-8s p99 %-8s write p50 %s%s",
				d.Driver, c, round+1, o.rawRounds, in.variant, res.reads, pctOf(res.onReplica, res.reads), res.stale,
				fmtDur(percentile(res.readLat, 50)), fmtDur(percentile(res.readLat, 99)), fmtDur(percentile(res.writeLat, 50)), rawErrNote(res))
		}
	}
	for _, v := range o.rawVariants {
		row := rawRow{driver: d.Driver, label: d.label, condition: c, variant: v}
		for _, res := range results[v] {
			row.rounds = append(row.rounds, rawRound{reads: res.reads, errs: res.readErrs + res.writeErrs,
				onReplica: res.onReplica, stale: res.stale, p50: percentile(res.readLat, 50),
				p99: percentile(res.readLat, 99), writeP50: percentile(res.writeLat, 50)})
			if res.firstErr != nil && row.firstErr == "" {
				row.firstErr = oneLine(res.firstErr.Error())
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// roundOrderOf is roundOrder for instances.
func roundOrderOf(ins []rawInstance, round int) []rawInstance {
	if len(ins) == 0 {
		return nil
	}
	k := round % len(ins)
	return append(slices.Clone(ins[k:]), ins[:k]...)
}

// lagKnown returns, for an rwpool variant, whether both its Connectors
// (the writer's and the reader's) have measured every replica's lag; nil
// for the others.
func lagKnown(in rawInstance) func() bool {
	var dbs []*sql.DB
	if w, ok := in.w.(rwpoolRawWriter); ok {
		dbs = append(dbs, w.db)
	}
	if r, ok := in.r.(rwpoolRawReader); ok {
		dbs = append(dbs, r.db)
	}
	if len(dbs) == 0 {
		return nil
	}
	return func() bool {
		for _, db := range dbs {
			snap, err := rwpool.Stats(db)
			if err != nil {
				return false
			}
			for _, n := range snap.Nodes {
				if n.Role == "replica" && !n.LagKnown {
					return false
				}
			}
		}
		return true
	}
}

func rawErrNote(r rawResult) string {
	if r.writeErrs+r.readErrs == 0 {
		return ""
	}
	return fmt.Sprintf("  %d write and %d read ERRORS, first: %v", r.writeErrs, r.readErrs, r.firstErr)
}
