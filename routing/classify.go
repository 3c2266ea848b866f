package routing

// Dialect selects the lexical rules Classify applies: which characters start
// comments, strings and quoted identifiers, and how those end.
type Dialect uint8

const (
	// DialectGeneric is for an unknown driver. Where the dialects disagree
	// (# comments, backslash escapes, "...", `...`, $$ quotes, @x, nested
	// comments, /*! */ comments) the statement is classified under both the
	// Postgres and the MySQL rules and the more conservative verdict wins:
	// Primary if either says Primary, else Previous if either says
	// Previous; Session if either says Session.
	DialectGeneric Dialect = iota
	// DialectPostgres is for lib/pq, pgx and other PostgreSQL drivers:
	// nested /* */ comments, '...' without backslash escapes
	// (standard_conforming_strings on), E'...' with them, "..." quoted
	// identifiers, $$...$$ and $tag$...$tag$ quotes, $1 placeholders; # and
	// @ are operators.
	DialectPostgres
	// DialectMySQL is for MySQL and MariaDB with the default sql_mode:
	// # and "-- " comments, /*! ... */ and /*M! ... */ comments whose body is
	// executed, backslash escapes in '...' and "...", "..." strings,
	// `...` quoted identifiers, @x user variables and @@x system variables.
	DialectMySQL
)

// Target is where a statement must run.
type Target uint8

const (
	// Primary is the read-write node. It is the zero value: when in doubt,
	// a statement goes to the primary.
	Primary Target = iota
	// Replica is any read-only node.
	Replica
	// Previous is the real connection that ran the connection's previous
	// statement: the statement reads that statement's diagnostics
	// (warnings, errors, row counts), which no other connection has.
	Previous
)

// Rule names the rule that decided a Decision: the "why" of its Target.
// Its String is a few words, as shown by `rwpool route` and in
// rwpool.Route.Reason.
//
// The zero Rule is RuleWrite, so the zero Decision is {Primary, RuleWrite,
// false}, the conservative default.
type Rule uint8

const (
	// RuleWrite: the statement does not start with a read keyword (INSERT,
	// UPDATE, DELETE, MERGE, DDL, CALL, DO, COPY, unknown words, ...).
	RuleWrite Rule = iota
	// RuleRead: SELECT, WITH, SHOW, VALUES or TABLE with nothing that makes
	// it write or touch session state.
	RuleRead
	// RuleExplain: EXPLAIN (or MySQL DESCRIBE/DESC) without ANALYZE. It does
	// not run the explained statement, which may be a write.
	RuleExplain
	// RuleHintPrimary: a /*rwpool:primary*/ comment before the first token.
	RuleHintPrimary
	// RuleHintReplica: a /*rwpool:replica*/ comment before the first token.
	RuleHintReplica
	// RuleEmpty: nothing but whitespace, comments and semicolons.
	RuleEmpty
	// RuleUnterminated: a string, quoted identifier, dollar quote or comment
	// runs to the end of the query.
	RuleUnterminated
	// RuleMultiStatement: several statements, not all of them reads.
	RuleMultiStatement
	// RuleSession: a statement that changes connection state: SET, RESET,
	// USE, DISCARD, LOCK/UNLOCK, PREPARE/EXECUTE/DEALLOCATE, DECLARE, FETCH,
	// MOVE, CLOSE, LISTEN/UNLISTEN, BEGIN, START, COMMIT, END, ROLLBACK,
	// ABORT, SAVEPOINT, RELEASE, XA, HANDLER, CREATE TEMP(ORARY), DROP
	// TEMPORARY, DROP PREPARE, FLUSH ... WITH READ LOCK.
	RuleSession
	// RuleWritingCTE: a WITH whose CTE or main statement is INSERT, UPDATE,
	// DELETE or MERGE.
	RuleWritingCTE
	// RuleExplainAnalyze: EXPLAIN ANALYZE runs the explained statement.
	RuleExplainAnalyze
	// RuleLockingRead: FOR UPDATE, FOR NO KEY UPDATE, FOR SHARE, FOR KEY
	// SHARE or LOCK IN SHARE MODE, at any depth.
	RuleLockingRead
	// RuleSelectInto: SELECT ... INTO at the statement's top level (a table in
	// Postgres, OUTFILE, DUMPFILE or variables in MySQL).
	RuleSelectInto
	// RuleSessionFunc: a call of a function that reads or sets
	// per-connection state: nextval, setval, currval, lastval, set_config,
	// LAST_INSERT_ID (and @@identity, @@last_insert_id), MariaDB NEXT/PREVIOUS
	// VALUE FOR, the MySQL SQL_CALC_FOUND_ROWS modifier, pg_backup_start and
	// pg_backup_stop, dblink's connection functions, cursor_to_xml.
	RuleSessionFunc
	// RuleLockFunc: a named or advisory lock function: GET_LOCK,
	// RELEASE_LOCK, RELEASE_ALL_LOCKS, IS_FREE_LOCK, IS_USED_LOCK,
	// pg_advisory_* and pg_try_advisory_*.
	RuleLockFunc
	// RuleWriteFunc: a built-in function a PostgreSQL standby refuses:
	// NOTIFY, transaction IDs, large-object writers, WAL control
	// (pg_switch_wal, pg_current_wal_lsn, ...), replication slots and
	// origins, statistics and index maintenance. The package documentation
	// lists them all.
	RuleWriteFunc
	// RuleUserVar: a MySQL user variable @x (not @@x), whose value lives in
	// the connection that set it.
	RuleUserVar
	// RuleExecFunc: a function that runs SQL text it is given (dblink,
	// dblink_exec, query_to_xml, ts_stat, crosstab, ...): the text may write.
	RuleExecFunc
	// RuleDiagnostics: a statement that reads the diagnostics of the
	// connection's previous statement: SHOW WARNINGS, SHOW ERRORS, SHOW
	// COUNT(*) WARNINGS/ERRORS, SHOW PROFILE(S), GET DIAGNOSTICS,
	// @@warning_count, @@error_count, ROW_COUNT(), FOUND_ROWS(). Its Target
	// is Previous.
	RuleDiagnostics

	numRules // number of rules, for tests
)

// Decision is the classifier's verdict on one query string.
type Decision struct {
	// Target is where the query must run. A statement goes to a replica
	// only when Target is Replica and Pins is false.
	Target Target
	// Rule is the rule that decided Target. For a write it is RuleWrite even
	// when Session is set by something inside it (INSERT ... nextval(...)).
	Rule Rule
	// Session reports that the query changes per-connection session state,
	// or uses state that a session set up and that exists only on the
	// connection that holds it, so that later statements must run on the
	// same connection, and the connection must not serve another session
	// afterwards as if nothing happened:
	//
	//   - session statements (RuleSession);
	//   - SELECT ... INTO TEMP table;
	//   - set_config, pg_backup_start/stop, the functions that create or
	//     use a session's replication slot or origin, dblink's connection
	//     and query functions, cursor_to_xml;
	//   - session-scoped locks (GET_LOCK, RELEASE_LOCK, RELEASE_ALL_LOCKS,
	//     pg_advisory_* other than the _xact_ variants);
	//   - MySQL user variables @x.
	//
	// What every statement leaves behind for the next on its connection is
	// not session state: the last id a sequence or an insert gave out
	// (nextval, setval, currval, lastval, LAST_INSERT_ID, @@identity, NEXT
	// VALUE FOR, SQL_CALC_FOUND_ROWS) and the previous statement's
	// diagnostics (Target Previous). A call of those still goes to the
	// primary and pins (RuleSessionFunc), so that a currval reads the
	// nextval of the same lease, but Session stays false.
	//
	// Session is set wherever these occur, also inside writes, and it is
	// kept under a hint: /*rwpool:replica*/ SET x = 1 is {Replica,
	// RuleHintReplica, true}. A plain write has Session false; its Target,
	// Primary, already says it must stay on the primary.
	Session bool
}

// Classify decides where query runs. It is a pure function of its
// arguments: no allocation, no locks, no global mutable state; it is safe
// for concurrent use. Its cost is linear in len(query): one pass of the
// scanner, two for DialectGeneric when the query contains characters the
// dialects read differently.
//
// The order of precedence is: a /*rwpool:primary*/ hint, an unterminated
// quote or comment, a /*rwpool:replica*/ hint, the empty query, then the
// statements. A single statement decides by itself; several statements go
// to the replica only when every one is a read (the Decision then carries
// the first statement's rule), else to the primary with RuleMultiStatement.
// A ";" followed only by whitespace and comments ends a statement without
// starting another.
func Classify(query string, d Dialect) Decision {
	switch d {
	case DialectPostgres:
		r, _ := scan(query, lexPostgres)
		return r
	case DialectMySQL:
		r, _ := scan(query, lexMySQL)
		return r
	}
	pg, divergent := scan(query, lexPostgres)
	if !divergent {
		// Nothing the MySQL rules would read differently: the MySQL pass
		// could not be more conservative than this one.
		return pg
	}
	my, _ := scan(query, lexMySQL)
	return mergeGeneric(pg, my)
}

// mergeGeneric combines the Postgres and the MySQL verdicts of one query:
// unterminated in either, else Primary in either (a non-empty one first),
// else Previous in either, else the Postgres verdict; Session if either.
func mergeGeneric(pg, my Decision) Decision {
	d := pg
	switch {
	case pg.Rule == RuleUnterminated:
	case my.Rule == RuleUnterminated:
		d = my
	case pg.Target == Primary && pg.Rule != RuleEmpty:
	case my.Target == Primary:
		d = my
	case pg.Target == Previous:
	case my.Target == Previous:
		d = my
	}
	d.Session = pg.Session || my.Session
	return d
}
