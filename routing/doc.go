// Package routing answers where rwpool sends a statement, and why.
// Classify reads the SQL text alone and returns a Decision: the Target
// (the primary, a replica, or the connection that ran the previous
// statement), the Rule that decided it, and whether the statement touches
// per-connection session state. It connects to nothing, so it also serves
// tests and tools: a test can assert that a query of the application goes
// to a replica,
//
//	d := routing.Classify(query, routing.DialectPostgres)
//	if d.Target != routing.Replica || d.Pins() {
//		t.Errorf("%s: %v", query, d)
//	}
//
// and `rwpool route` prints the same Decision for a statement.
//
// What Classify cannot see decides too: a transaction, rwpool.WithPrimary,
// a session's writes, a lease already pinned by an earlier statement, and
// the availability of the replicas. A Decision says where the statement
// must run given its text; a replica receives it only when Target is
// Replica, Pins is false and none of those says otherwise.
//
// # Classification rules
//
// Classify looks at the first token of each statement after skipping
// whitespace, comments ("--", "/* */", nested in Postgres, "#" in MySQL)
// and opening parentheses, case-insensitively. Strings, quoted identifiers,
// dollar quotes and comments never count as keywords.
//
//	Statement                                       Target    Rule                Session
//	/*rwpool:primary*/ before the first token       primary   RuleHintPrimary     if any statement
//	unterminated quote, dollar quote or comment     primary   RuleUnterminated    if any statement
//	/*rwpool:replica*/ before the first token       replica   RuleHintReplica     if any statement
//	nothing but whitespace, comments and ;          primary   RuleEmpty           no
//	several statements, one not a read              primary   RuleMultiStatement  if any statement
//	SELECT, WITH, SHOW, VALUES, TABLE               replica   RuleRead            no
//	  with INSERT/UPDATE/DELETE/MERGE in WITH       primary   RuleWritingCTE      +
//	  with FOR [NO KEY] UPDATE, FOR [KEY] SHARE,    primary   RuleLockingRead     +
//	    LOCK IN SHARE MODE (any depth)
//	  with INTO at the top level                    primary   RuleSelectInto      + (INTO TEMP: yes)
//	  with GET_LOCK(, pg_advisory_lock(, ...        primary   RuleLockFunc        + (yes but _xact_, IS_*_LOCK)
//	  with a function a standby refuses (below)     primary   RuleWriteFunc       + (yes: slots, origins)
//	  with a function that runs SQL text (below)    primary   RuleExecFunc        + (yes: dblink)
//	  with set_config(, pg_backup_start(, ...       primary   RuleSessionFunc     yes
//	  with nextval(, LAST_INSERT_ID(, @@identity    primary   RuleSessionFunc     + (residue: see Decision.Session)
//	  with @x (MySQL, not @@x)                      primary   RuleUserVar         yes
//	  with ROW_COUNT(, FOUND_ROWS(,                 previous  RuleDiagnostics     no
//	    @@warning_count, @@error_count
//	SHOW WARNINGS, SHOW ERRORS, SHOW COUNT(*)       previous  RuleDiagnostics     no
//	  WARNINGS/ERRORS, SHOW PROFILE(S)
//	EXPLAIN, MySQL DESCRIBE/DESC without ANALYZE    replica   RuleExplain         no
//	EXPLAIN ANALYZE, EXPLAIN (ANALYZE [true])       primary   RuleExplainAnalyze  +
//	GET [CURRENT|STACKED] DIAGNOSTICS               previous  RuleDiagnostics     no
//	SET, RESET, USE, DISCARD, LOCK, UNLOCK,         primary   RuleSession         yes
//	  PREPARE, EXECUTE, DEALLOCATE, DECLARE, FETCH,
//	  MOVE, CLOSE, LISTEN, UNLISTEN, BEGIN, START,
//	  COMMIT, END, ROLLBACK, ABORT, SAVEPOINT,
//	  RELEASE, XA, HANDLER, other GET,
//	  CREATE [OR REPLACE] [GLOBAL|LOCAL] TEMP[ORARY],
//	  DROP TEMPORARY, DROP PREPARE,
//	  FLUSH ... WITH READ LOCK
//	anything else (DML, DDL, CALL, DO, COPY, ...)   primary   RuleWrite           +
//
// A "with" row applies when the feature appears anywhere in the statement;
// the first matching row, top to bottom, names the Rule. "+" means Session is
// set when the statement also contains a session function, session lock,
// user variable, diagnostics read or INTO TEMP, as listed in the rows marked
// yes.
//
// A function counts when its name, quoted or not, schema-qualified or not,
// is followed by "(" (comments and whitespace allowed in between); a column
// named nextval_count or a string 'nextval(' does not count.
//
// # What a replica refuses
//
// Functions a PostgreSQL standby refuses (RuleWriteFunc), from the
// PostgreSQL documentation: "Hot Standby" (User's Overview: NOTIFY,
// sequence updates, anything that needs a transaction ID; Administrator's
// Overview: WAL control, new OIDs) and "System Administration Functions",
// whose tables say which functions "cannot be executed during recovery":
//
//   - NOTIFY and transaction IDs: pg_notify, txid_current,
//     pg_current_xact_id;
//   - large objects: lo_creat, lo_create, lo_import, lo_unlink, lo_put,
//     lo_from_bytea, lowrite, lo_truncate, lo_truncate64, and lo_open (its
//     mode may ask to write);
//   - Backup Control Functions: pg_create_restore_point, pg_switch_wal,
//     pg_current_wal_lsn, pg_current_wal_insert_lsn,
//     pg_current_wal_flush_lsn, pg_walfile_name, pg_walfile_name_offset,
//     pg_split_walfile_name, and their names before PostgreSQL 10
//     (pg_switch_xlog, pg_current_xlog_location,
//     pg_current_xlog_insert_location, pg_current_xlog_flush_location,
//     pg_xlogfile_name, pg_xlogfile_name_offset);
//   - Snapshot Synchronization Functions: pg_log_standby_snapshot;
//   - Replication Management Functions: pg_logical_emit_message, the
//     replication origin functions that change something
//     (pg_replication_origin_create, _drop, _advance, _session_setup,
//     _session_reset, _xact_setup, _xact_reset), and the replication slot
//     functions (pg_create_physical_replication_slot,
//     pg_create_logical_replication_slot, pg_copy_physical_replication_slot,
//     pg_copy_logical_replication_slot, pg_drop_replication_slot,
//     pg_replication_slot_advance, pg_logical_slot_get_changes,
//     pg_logical_slot_get_binary_changes, pg_logical_slot_peek_changes,
//     pg_logical_slot_peek_binary_changes): a slot belongs to one server,
//     one made or moved on a standby is not the primary's, and before
//     PostgreSQL 16 logical decoding fails there;
//   - Database Object Management Functions: pg_restore_relation_stats,
//     pg_clear_relation_stats, pg_restore_attribute_stats,
//     pg_clear_attribute_stats, pg_restore_extended_stats,
//     pg_clear_extended_stats, pg_import_system_collations;
//   - Index Maintenance Functions: brin_summarize_new_values,
//     brin_summarize_range, brin_desummarize_range, gin_clean_pending_list.
//
// pg_backup_start and pg_backup_stop (pg_start_backup and pg_stop_backup
// before PostgreSQL 15) may run on a standby, but on one connection that
// stays open between them: RuleSessionFunc. nextval and setval, which the
// same documentation lists, are session functions too.
//
// Functions that run SQL text they are given (RuleExecFunc), since the
// text may write or call a function that does: query_to_xml,
// query_to_xmlschema, query_to_xml_and_xmlschema, ts_stat, ts_rewrite
// (whose two-argument form runs a query), crosstab and crosstabN (contrib
// tablefunc), and contrib dblink's dblink, dblink_exec, dblink_open,
// dblink_fetch, dblink_close, dblink_send_query and dblink_get_result,
// which run it on the server their connection string names, often the
// same one, on connections that belong to the session. dblink's other
// connection functions and cursor_to_xml read session state:
// RuleSessionFunc. MySQL and MariaDB have no such function: their
// EXECUTE IMMEDIATE and PREPARE are session statements.
//
// Statements that read the diagnostics of the connection's previous
// statement (RuleDiagnostics, Target Previous) must run on the real
// connection that ran it; any other connection answers about itself.
//
// # Choices
//
//   - EXPLAIN without ANALYZE goes to a replica even when it explains a write
//     or a locking read: the explained statement does not run.
//   - A /*rwpool:replica*/ hint is honoured even for locking reads, writes
//     and multi-statements: the user asked. A replica refuses writes and
//     locks taken there do not protect rows on the primary. Session is still
//     reported, so a connection that pins on Session ignores such a hint.
//   - A hint must be a /* */ comment whose text is exactly rwpool:primary or
//     rwpool:replica, with optional whitespace around the words and colon.
//   - Other SHOW statements go to a replica, including server-specific ones
//     (SHOW STATUS, SHOW MASTER STATUS, SHOW PROCESSLIST): use a hint when
//     the primary's answer is needed.
//   - Functions a server does not ship (user functions, most extensions)
//     can not be known: use /*rwpool:primary*/ for one that writes.
//     Functions only a standby runs (pg_promote, pg_wal_replay_pause,
//     pg_wal_replay_resume, pg_sync_replication_slots) are reads, so they
//     go to a replica, one chosen by weight: run them on a direct
//     connection to the standby meant.
//   - Postgres strings follow standard_conforming_strings = on; MySQL strings
//     follow the default sql_mode (backslash escapes, "..." strings).
//     DialectGeneric covers both.
//   - MySQL /*! ... */ and /*M! ... */ bodies are classified as code, whatever
//     their version number.
//   - ";" splits statements at any parenthesis depth, so a function body with
//     BEGIN ATOMIC ... END (always a write anyway) may report Session when its
//     body contains SET.
package routing
