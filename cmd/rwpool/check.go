package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/routing"
)

const checkUsage = `Usage: rwpool check [flags] DSN

Connects to every node of the composite rwpool DSN, each directly with its
own driver (not through rwpool), and reports per node:

  reachable  whether it accepts a connection, and how long that took
  latency    the round trips of a short sample of pings (--pings): min,
             p50, p90, p99, max and average; a quantile of a sample of N
             is its ceil(q*N)-th smallest round trip
  version    SELECT version()
  role       the node's role as the server reports it (PostgreSQL:
             pg_is_in_recovery() and default_transaction_read_only;
             MySQL/MariaDB: @@global.read_only),
             shown next to its role in the DSN. A node listed as a replica
             that accepts writes, or a primary that is read-only or in
             recovery, is flagged loudly: rwpool would send writes to a
             server that refuses them, or reads to a server that is not
             replicating. With follow_promotion=on in the DSN, rwpool
             follows the roles the servers report: such a node is shown as
             "followed (promoted)" or "followed (demoted)" instead, and the
             problems are two nodes that accept writes (split brain: rwpool
             sends writes to neither) or none
  lag        replication lag where the server reports it: PostgreSQL
             standbys (now() - pg_last_xact_replay_timestamp(), or caught
             up when everything received was replayed); MySQL/MariaDB
             (Seconds_Behind_Master of SHOW REPLICA STATUS, which needs the
             REPLICATION CLIENT / SLAVE MONITOR privilege; without it,
             MariaDB's GTID position is compared with the primary's)
  pooler     what sits between the DSN and the server, if anything: a
             transaction pooler (PgBouncer pool_mode=transaction, ProxySQL
             multiplexing: one client connection's statements run in
             different server sessions), or a session pooler, proxy or
             port mapping (the server's own port is not the dialled one),
             with what that means for rwpool's routing (a note, not a
             problem: rwpool works through both)

The drivers postgres (lib/pq), pgx (pgx/v5) and mysql (go-sql-driver/mysql)
are built in. Passwords never appear in the output: nodes are shown by name
and redacted DSN.

Flags:
  --timeout D    time allowed for each node (default 10s)
  --pings N      pings for the latency figures (default 20)
  --max-lag D    a replica lagging more than this is a problem (default 30s)

Exit status: 0 every node is fine, 1 a problem was found (unreachable node,
wrong role, split brain, replication stopped or lagging), 2 bad flag or bad
DSN.

Examples:
  rwpool check "driver=postgres;primary='host=db1 user=app dbname=shop';replica='host=db2 user=app dbname=shop'"
  rwpool check --timeout 3s "driver=mysql;primary='app:pw@tcp(db1:3306)/shop';replica='app:pw@tcp(db2:3306)/shop'"
  rwpool check "$DATABASE_DSN" || echo "the DSN and the cluster disagree"
`

// checkOpts are check's flags.
type checkOpts struct {
	timeout time.Duration
	pings   int
	maxLag  time.Duration
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("check")
	var o checkOpts
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "")
	fs.IntVar(&o.pings, "pings", 20, "")
	fs.DurationVar(&o.maxLag, "max-lag", 30*time.Second, "")
	pos, status, done := parseFlags(fs, checkUsage, args, stdout, stderr)
	if done {
		return status
	}
	switch {
	case len(pos) == 0:
		return usageErr(stderr, "rwpool check", "no DSN given")
	case len(pos) > 1:
		return usageErr(stderr, "rwpool check", "one DSN expected, got %d arguments (quote the DSN)", len(pos))
	case o.timeout <= 0:
		return usageErr(stderr, "rwpool check", "--timeout must be positive")
	case o.pings < 1:
		return usageErr(stderr, "rwpool check", "--pings must be at least 1")
	case o.maxLag <= 0:
		return usageErr(stderr, "rwpool check", "--max-lag must be positive")
	}
	cfg, err := dsn.Parse(pos[0])
	if err != nil {
		return usageErr(stderr, "rwpool check", "%v", err) // dsn errors never hold a node DSN
	}
	if !slices.Contains(sql.Drivers(), cfg.Driver) {
		return usageErr(stderr, "rwpool check", "driver %q is not built into this command (have %s)",
			cfg.Driver, strings.Join(sql.Drivers(), ", "))
	}
	nodes := append([]dsn.Node{cfg.Primary}, cfg.Replicas...)
	found, discoverProblems := discoverNodes(cfg, o.timeout, stdout)
	nodes = append(nodes, found...)
	reports := make([]*nodeReport, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
			defer cancel()
			reports[i] = checkNode(ctx, cfg.Driver, n, o, cfg.FollowPromotion)
		}()
	}
	wg.Wait()
	followed := 0
	if cfg.FollowPromotion {
		followed = judgeFollowed(reports)
	}
	// MariaDB without the privilege for SHOW REPLICA STATUS: compare GTID
	// positions with the primary's (with follow_promotion=on, the one node
	// that reports itself primary, if there is one).
	primary := reports[0]
	if cfg.FollowPromotion {
		primary = nil
		for _, r := range reports {
			if r.known && r.reported == dsn.RolePrimary {
				if primary != nil {
					primary = nil // split brain: no reference
					break
				}
				primary = r
			}
		}
	}
	for _, r := range reports {
		replica := r.node.Role == dsn.RoleReplica
		if cfg.FollowPromotion {
			replica = r.known && r.reported == dsn.RoleReplica
		}
		if replica && primary != nil && r.gtidSlavePos != "" && primary.gtidBinlogPos != "" && r.lag == "" {
			r.lag = compareGTID(r.gtidSlavePos, primary.gtidBinlogPos)
		}
	}

	fmt.Fprintf(stdout, "rwpool check: driver %s, %d node(s)", cfg.Driver, len(nodes))
	if cfg.FollowPromotion {
		fmt.Fprint(stdout, ", follow_promotion=on")
	}
	fmt.Fprintln(stdout)
	problems := discoverProblems
	for _, r := range reports {
		fmt.Fprintln(stdout)
		r.print(stdout)
		problems = append(problems, r.problems...)
	}
	fmt.Fprintln(stdout)
	if len(problems) == 0 {
		if followed > 0 {
			fmt.Fprintf(stdout, "OK: all %d node(s) reachable, %d role change(s) followed (follow_promotion=on)\n", len(nodes), followed)
		} else {
			fmt.Fprintf(stdout, "OK: all %d node(s) reachable, roles match the DSN\n", len(nodes))
		}
		return exitOK
	}
	for _, p := range problems {
		fmt.Fprintf(stdout, "!!! PROBLEM: %s\n", p)
	}
	fmt.Fprintf(stdout, "%d problem(s) found\n", len(problems))
	fmt.Fprintf(stderr, "rwpool check: %d problem(s) found: %s\n", len(problems), oneLine(problems[0]))
	return exitProblem
}

// nodeReport is what check learned about one node.
type nodeReport struct {
	node dsn.Node

	reachable bool
	connect   time.Duration
	rtts      []time.Duration // the pings' round trips, in order
	avgRTT    time.Duration
	pings     int
	version   string
	reported  dsn.Role // the role the server reports, when known
	known     bool     // the server told its role
	role      string   // what the server says it is, in words
	lag       string   // replication lag, in words; "" when unknown
	pooler    string   // what sits between the DSN and the server (checkPooler); "" for nothing seen
	between   string   // the ports that differ, when they do
	info      []string
	problems  []string
	follow    bool // follow_promotion=on: judgeFollowed judges a role that differs from the DSN's

	// MariaDB GTID positions, for the lag without privileges.
	gtidSlavePos, gtidBinlogPos string
}

func (r *nodeReport) problem(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

func (r *nodeReport) print(w io.Writer) {
	n := r.node
	reported := "unknown"
	if r.known {
		reported = r.reported.String()
	}
	fmt.Fprintf(w, "%s (%s in the DSN, %s as the server reports): %s\n", n.Name, n.Role, reported, n.Redacted())
	line := func(k, v string) { fmt.Fprintf(w, "  %-10s %s\n", k, v) }
	if !r.reachable {
		line("reachable", "NO")
	} else {
		line("reachable", "yes (connected in "+fmtDur(r.connect)+")")
		if r.pings > 0 {
			line("latency", r.latency())
		}
		if r.version != "" {
			line("version", r.version)
		}
		if r.role != "" {
			line("role", r.role)
		}
		if r.lag != "" {
			line("lag", r.lag)
		}
		if r.pooler != "" {
			line("pooler", r.pooler)
		}
	}
	for _, s := range r.info {
		line("note", s)
	}
	for _, p := range r.problems {
		fmt.Fprintf(w, "  !!! %s\n", p)
	}
}

// latency describes the distribution of the pings' round trips: a short
// sample's quantiles (the ceil(q*N)-th smallest), so p99 of 20 pings is
// the slowest.
func (r *nodeReport) latency() string {
	sorted := slices.Clone(r.rtts)
	slices.Sort(sorted)
	q := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(sorted)))) - 1
		return sorted[max(i, 0)]
	}
	return fmt.Sprintf("min %s, p50 %s, p90 %s, p99 %s, max %s, avg %s (%d pings)",
		fmtDur(sorted[0]), fmtDur(q(0.5)), fmtDur(q(0.9)), fmtDur(q(0.99)), fmtDur(sorted[len(sorted)-1]), fmtDur(r.avgRTT), r.pings)
}

// scrub removes the node DSN from driver errors, in case a driver quotes
// it, and folds the message onto one line.
func scrub(n dsn.Node, err error) string {
	s := err.Error()
	if n.DSN != "" {
		s = strings.ReplaceAll(s, n.DSN, n.Redacted())
	}
	return oneLine(s)
}

// checkNode connects to one node with its own driver and examines it.
func checkNode(ctx context.Context, driver string, n dsn.Node, o checkOpts, follow bool) *nodeReport {
	r := &nodeReport{node: n, follow: follow}
	db, err := sql.Open(driver, n.DSN)
	if err != nil {
		r.problem("%s: %s", n.Name, scrub(n, err))
		return r
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // every query on the one connection pinged

	start := time.Now()
	if err := db.PingContext(ctx); err != nil {
		r.problem("%s (%s) is UNREACHABLE: %s", n.Name, n.Role, scrub(n, err))
		return r
	}
	r.reachable, r.connect = true, time.Since(start)
	var sum time.Duration
	for range o.pings {
		t := time.Now()
		if err := db.PingContext(ctx); err != nil {
			r.problem("%s: ping: %s", n.Name, scrub(n, err))
			return r
		}
		d := time.Since(t)
		r.rtts = append(r.rtts, d)
		sum += d
		r.pings++
	}
	r.avgRTT = sum / time.Duration(r.pings)

	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&r.version); err != nil {
		r.info = append(r.info, "version unknown: "+scrub(n, err))
	}
	switch routing.DialectOf(driver) {
	case routing.DialectPostgres:
		checkPostgres(ctx, db, r, o)
		checkPooler(ctx, driver, db, r)
	case routing.DialectMySQL:
		checkMySQL(ctx, db, r, o)
		checkPooler(ctx, driver, db, r)
	default:
		r.info = append(r.info, "role and lag are checked for PostgreSQL and MySQL/MariaDB drivers only")
	}
	return r
}

// checkPostgres checks the role with pg_is_in_recovery() and a standby's
// replay lag.
func checkPostgres(ctx context.Context, db *sql.DB, r *nodeReport, o checkOpts) {
	n := r.node
	var inRecovery, readOnly bool
	// transaction_read_only follows default_transaction_read_only: a
	// primary set read-only that way refuses writes, and rwpool's status
	// query counts it as read-only too.
	if err := db.QueryRowContext(ctx, "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'").Scan(&inRecovery, &readOnly); err != nil {
		r.problem("%s: cannot tell its role: pg_is_in_recovery(): %s", n.Name, scrub(n, err))
		return
	}
	if !inRecovery && readOnly {
		r.reported, r.known = dsn.RoleReplica, true
		r.role = "read-only primary (pg_is_in_recovery() = false, default_transaction_read_only = on)"
		if n.Role == dsn.RolePrimary && !r.follow {
			r.role += ": DOES NOT MATCH the DSN"
			r.problem("%s is listed as the PRIMARY but is READ-ONLY (default_transaction_read_only = on): "+
				"every write through rwpool would fail", n.Name)
		}
		return
	}
	if !inRecovery {
		r.reported, r.known = dsn.RolePrimary, true
		r.role = "read-write primary (pg_is_in_recovery() = false)"
		if n.Role == dsn.RoleReplica && !r.follow {
			r.role += ": DOES NOT MATCH the DSN"
			r.problem("%s is listed as a REPLICA but ACCEPTS WRITES (pg_is_in_recovery() = false): "+
				"it is a primary, not a standby; are the DSN's primary and replica swapped?", n.Name)
		}
		return
	}
	r.reported, r.known = dsn.RoleReplica, true
	r.role = "standby in recovery (pg_is_in_recovery() = true)"
	if n.Role == dsn.RolePrimary && !r.follow {
		r.role += ": DOES NOT MATCH the DSN"
		r.problem("%s is listed as the PRIMARY but is a READ-ONLY STANDBY in recovery (pg_is_in_recovery() = true): "+
			"every write through rwpool would fail; are the DSN's primary and replica swapped?", n.Name)
	}
	var receivers int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_wal_receiver").Scan(&receivers); err == nil && receivers == 0 {
		switch {
		case n.Role == dsn.RoleReplica:
			r.problem("%s is a standby but NOT STREAMING from a primary (no WAL receiver running): its data grows stale", n.Name)
		case r.follow:
			r.info = append(r.info, "not streaming from a primary (no WAL receiver running): rwpool serves it no reads until it follows the new primary")
		}
	}
	r.lag = pgLag(ctx, db, r, o)
}

// pgLag measures a standby's replay lag. now() - pg_last_xact_replay_timestamp()
// alone overstates it on a quiet primary (it grows while nothing is
// written), so a standby that replayed all the WAL it received is "caught
// up"; one that has not is measured again a few times before its lag counts.
func pgLag(ctx context.Context, db *sql.DB, r *nodeReport, o checkOpts) string {
	n := r.node
	for try := 0; ; try++ {
		var caughtUp sql.NullBool
		var lagSec sql.NullFloat64
		err := db.QueryRowContext(ctx, "SELECT pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn(), "+
			"EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::float8").Scan(&caughtUp, &lagSec)
		switch {
		case err != nil:
			return "unknown: " + scrub(n, err)
		case !lagSec.Valid:
			return "unknown: no transaction replayed yet"
		case caughtUp.Valid && caughtUp.Bool:
			return fmt.Sprintf("0 (caught up: all WAL received is replayed; last replayed transaction %s ago)",
				fmtDur(secDur(lagSec.Float64)))
		}
		if try < 3 {
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
				continue
			}
		}
		lag := secDur(lagSec.Float64)
		s := fmtDur(lag) + " (now() - pg_last_xact_replay_timestamp())"
		if !caughtUp.Valid {
			s += "; no WAL received by streaming"
		}
		if lag > o.maxLag {
			r.problem("%s lags %s behind its primary (more than --max-lag %s)", n.Name, fmtDur(lag), o.maxLag)
		}
		return s
	}
}

// checkMySQL checks the role with @@global.read_only and the replication
// state with SHOW REPLICA STATUS (or SHOW SLAVE STATUS).
func checkMySQL(ctx context.Context, db *sql.DB, r *nodeReport, o checkOpts) {
	n := r.node
	var readOnly int
	if err := db.QueryRowContext(ctx, "SELECT @@global.read_only").Scan(&readOnly); err != nil {
		r.problem("%s: cannot tell its role: @@global.read_only: %s", n.Name, scrub(n, err))
		return
	}
	if readOnly == 0 {
		r.reported, r.known = dsn.RolePrimary, true
		r.role = "read-write (@@global.read_only = 0)"
		if n.Role == dsn.RoleReplica && !r.follow {
			r.role += ": DOES NOT MATCH the DSN"
			r.problem("%s is listed as a REPLICA but ACCEPTS WRITES (@@global.read_only = 0): "+
				"it looks like a primary; are the DSN's primary and replica swapped? (a replica should run with read_only = ON)", n.Name)
		}
	} else {
		r.reported, r.known = dsn.RoleReplica, true
		r.role = "read-only (@@global.read_only = 1)"
		if n.Role == dsn.RolePrimary && !r.follow {
			r.role += ": DOES NOT MATCH the DSN"
			r.problem("%s is listed as the PRIMARY but is READ-ONLY (@@global.read_only = 1): "+
				"every write through rwpool would fail; are the DSN's primary and replica swapped?", n.Name)
		}
	}
	if isMariaDB(r.version) {
		var slave, binlog sql.NullString
		if err := db.QueryRowContext(ctx, "SELECT @@global.gtid_slave_pos, @@global.gtid_binlog_pos").Scan(&slave, &binlog); err == nil {
			r.gtidSlavePos, r.gtidBinlogPos = slave.String, binlog.String
		}
	}
	// With follow_promotion=on, what the node does now counts, not what
	// the DSN said: a promoted replica stopped replicating on purpose.
	role := n.Role
	if r.follow {
		role = r.reported
	}
	st, err := replicaStatus(ctx, db)
	if err != nil {
		if role == dsn.RoleReplica {
			r.info = append(r.info, "SHOW REPLICA STATUS not allowed ("+scrub(n, err)+"): grant REPLICATION CLIENT (MySQL) or SLAVE MONITOR (MariaDB) for the lag")
		}
		return
	}
	if st == nil {
		switch {
		case role == dsn.RoleReplica && n.Role == dsn.RoleReplica:
			r.problem("%s is listed as a REPLICA but does not replicate from anything (SHOW REPLICA STATUS is empty)", n.Name)
		case role == dsn.RoleReplica:
			r.info = append(r.info, "does not replicate from anything (SHOW REPLICA STATUS is empty): rwpool serves it no reads until it follows the new primary")
		}
		return
	}
	ioT, sqlT := st.get("Slave_IO_Running", "Replica_IO_Running"), st.get("Slave_SQL_Running", "Replica_SQL_Running")
	from := st.get("Master_Host", "Source_Host") + ":" + st.get("Master_Port", "Source_Port")
	if role == dsn.RolePrimary && (n.Role == dsn.RolePrimary || ioT == "Yes" || sqlT == "Yes") {
		r.info = append(r.info, "the primary itself replicates from "+from)
	}
	behind := st.get("Seconds_Behind_Master", "Seconds_Behind_Source")
	if ioT != "Yes" || sqlT != "Yes" {
		if role == dsn.RolePrimary && n.Role == dsn.RoleReplica {
			r.info = append(r.info, fmt.Sprintf("replication from %s stopped: promoted", from))
			return
		}
		r.lag = fmt.Sprintf("unknown: replication from %s is NOT RUNNING (IO thread %s, SQL thread %s)", from, ioT, sqlT)
		if e := st.get("Last_IO_Error", "Last_SQL_Error", "Last_Error"); e != "" {
			r.lag += ": " + oneLine(e)
		}
		switch {
		case role == dsn.RoleReplica && n.Role == dsn.RoleReplica:
			r.problem("%s: replication from %s is NOT RUNNING (IO thread %s, SQL thread %s)", n.Name, from, ioT, sqlT)
		case role == dsn.RoleReplica:
			r.info = append(r.info, "replication is not running: rwpool serves it no reads until it follows the new primary")
		}
		return
	}
	secs, err := strconv.Atoi(behind)
	if err != nil {
		r.lag = "unknown (Seconds_Behind_Master is " + strconv.Quote(behind) + "), replicating from " + from
		return
	}
	lag := time.Duration(secs) * time.Second
	r.lag = fmt.Sprintf("%ds (Seconds_Behind_Master), replicating from %s", secs, from)
	if lag > o.maxLag {
		r.problem("%s lags %ds behind its primary (more than --max-lag %s)", n.Name, secs, o.maxLag)
	}
}

// judgeFollowed judges, with follow_promotion=on, the nodes whose reported
// role differs from the DSN's: followed, unless two or more nodes report
// themselves primary (split brain: rwpool writes to none of them) or none
// does. It returns the number of role changes followed.
func judgeFollowed(reports []*nodeReport) int {
	var claim []string
	for _, r := range reports {
		if r.known && r.reported == dsn.RolePrimary {
			claim = append(claim, r.node.Name)
		}
	}
	followed := 0
	for _, r := range reports {
		if !r.known || r.reported == r.node.Role {
			continue
		}
		switch {
		case r.reported == dsn.RolePrimary && len(claim) > 1:
			r.role += ": DOES NOT MATCH the DSN (split brain)"
		case r.reported == dsn.RolePrimary:
			r.role += ": followed (promoted)"
			followed++
		default:
			r.role += ": followed (demoted)"
			followed++
		}
	}
	anyKnown := slices.ContainsFunc(reports, func(r *nodeReport) bool { return r.known })
	switch {
	case len(claim) > 1:
		reports[0].problem("SPLIT BRAIN: %d nodes report themselves writable (%s): with follow_promotion=on rwpool sends writes "+
			"to none of them (they fail with ErrSplitBrain) until only one does", len(claim), strings.Join(claim, ", "))
	case len(claim) == 0 && anyKnown:
		reports[0].problem("NO NODE ACCEPTS WRITES: none reports itself writable; writes through rwpool fail (or wait, with failover_wait) until one does")
	}
	return followed
}

func isMariaDB(version string) bool { return strings.Contains(strings.ToLower(version), "mariadb") }

// rowMap is one row of SHOW REPLICA STATUS by column name.
type rowMap map[string]string

// get returns the first non-empty column among names.
func (m rowMap) get(names ...string) string {
	for _, k := range names {
		if v := m[k]; v != "" {
			return v
		}
	}
	return ""
}

// replicaStatus returns the first row of SHOW REPLICA STATUS (MySQL
// 8.0.22+, MariaDB 10.5.1+) or SHOW SLAVE STATUS (older servers), nil when
// the server is not a replica.
func replicaStatus(ctx context.Context, db *sql.DB) (rowMap, error) {
	var firstErr error
	for _, q := range []string{"SHOW REPLICA STATUS", "SHOW SLAVE STATUS"} {
		m, err := firstRow(ctx, db, q)
		if err == nil {
			return m, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if isAccessDenied(err) {
			return nil, err
		}
	}
	return nil, firstErr
}

func isAccessDenied(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Error 1227") || strings.Contains(s, "Access denied")
}

// firstRow runs q and returns its first row by column name, nil if empty.
func firstRow(ctx context.Context, db *sql.DB, q string) (rowMap, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	m := rowMap{}
	for i, c := range cols {
		m[c] = vals[i].String
	}
	return m, nil
}

// compareGTID compares a MariaDB replica's gtid_slave_pos with its
// primary's gtid_binlog_pos, domain by domain.
func compareGTID(replica, primary string) string {
	rp, pp := parseGTIDs(replica), parseGTIDs(primary)
	var behind uint64
	for dom, seq := range pp {
		if rs := rp[dom]; rs < seq {
			behind += seq - rs
		}
	}
	if behind == 0 {
		return fmt.Sprintf("0 transactions behind (GTID %s, primary at %s)", replica, primary)
	}
	return fmt.Sprintf("%d transaction(s) behind (GTID %s, primary at %s)", behind, replica, primary)
}

// parseGTIDs parses "domain-server-seq,..." into the highest seq per domain.
func parseGTIDs(s string) map[string]uint64 {
	m := map[string]uint64{}
	for _, g := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(g), "-")
		if len(parts) != 3 {
			continue
		}
		if seq, err := strconv.ParseUint(parts[2], 10, 64); err == nil && seq > m[parts[0]] {
			m[parts[0]] = seq
		}
	}
	return m
}

func secDur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// fmtDur formats a duration for people: 850µs, 12.3ms, 1.25s, 3m20s.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
