package routing

// The built-in functions a call of which changes where a statement may
// run. Names are matched without their schema and ignoring ASCII case, so
// pg_catalog.nextval( and myschema.nextval( both count: conservative.
// Functions a server does not ship (user functions, most extensions) can
// not be known: use /*rwpool:primary*/.

const (
	fnSession = fSessionFunc | fSession // changes, or uses, state the connection keeps for later
	fnResidue = fSessionFunc            // reads or moves what every statement leaves behind (see residue)
	fnWrite   = fWriteFunc              // a standby refuses it
	fnExec    = fExecFunc               // runs SQL text it is given
	fnDiag    = fDiag                   // reads the previous statement's diagnostics
	fnLock    = fLockFunc | fSession    // a session-scoped named or advisory lock
)

// funcs maps lower-case function names to the flags a call sets.
var funcs = map[string]uint32{
	// Sequences and other per-connection state, PostgreSQL and MariaDB
	// (NEXTVAL, LASTVAL, SETVAL) and MySQL.
	//
	// Residue: the last id a sequence or an insert gave out (which any
	// INSERT also moves, without a sequence function in sight) is what one
	// statement leaves for the next on the same connection, not state a
	// session set up: these pin the lease to the primary but do not make
	// its connection unfit for another lease.
	"nextval": fnResidue, "setval": fnResidue, "currval": fnResidue, "lastval": fnResidue,
	"last_insert_id": fnResidue,
	"set_config":     fnSession,

	// Named and advisory locks; pg_advisory_* is in funcFlags. IS_FREE_LOCK
	// and IS_USED_LOCK take no lock but ask about locks, which live on one
	// server: the primary's are the ones that count.
	"get_lock": fnLock, "release_lock": fnLock, "release_all_locks": fnLock,
	"is_free_lock": fLockFunc, "is_used_lock": fLockFunc,

	// What a PostgreSQL standby refuses. The PostgreSQL documentation,
	// "Hot Standby" (high-availability.sgml, sections "User's Overview" and
	// "Administrator's Overview"), lists what fails during recovery:
	// sequence updates (nextval, setval, above), NOTIFY, anything that
	// needs a transaction ID or a new OID, and "WAL file control commands
	// ... e.g. pg_backup_start, pg_switch_wal etc."; "System Administration
	// Functions" (func-admin.sgml) marks the functions that "cannot be
	// executed during recovery", table by table.
	//
	// NOTIFY, and transaction IDs ("Transaction ID and Snapshot Information
	// Functions": assigning one fails on a standby).
	"pg_notify": fnWrite, "txid_current": fnWrite, "pg_current_xact_id": fnWrite,
	// Large objects ("Server-Side Functions" of the large-object chapter):
	// every function that creates, writes, truncates or removes one, and
	// lo_open, whose mode may ask to write.
	"lo_creat": fnWrite, "lo_create": fnWrite, "lo_import": fnWrite, "lo_unlink": fnWrite,
	"lo_put": fnWrite, "lo_from_bytea": fnWrite, "lowrite": fnWrite,
	"lo_truncate": fnWrite, "lo_truncate64": fnWrite, "lo_open": fnWrite,
	// "Backup Control Functions": "These functions cannot be executed during
	// recovery (except pg_backup_start, pg_backup_stop, and
	// pg_wal_lsn_diff)", with the names before PostgreSQL 10 (xlog) and 15.
	"pg_create_restore_point": fnWrite, "pg_switch_wal": fnWrite,
	"pg_current_wal_lsn": fnWrite, "pg_current_wal_insert_lsn": fnWrite, "pg_current_wal_flush_lsn": fnWrite,
	"pg_walfile_name": fnWrite, "pg_walfile_name_offset": fnWrite, "pg_split_walfile_name": fnWrite,
	"pg_switch_xlog": fnWrite, "pg_current_xlog_location": fnWrite,
	"pg_current_xlog_insert_location": fnWrite, "pg_current_xlog_flush_location": fnWrite,
	"pg_xlogfile_name": fnWrite, "pg_xlogfile_name_offset": fnWrite,
	// A standby may run pg_backup_start and pg_backup_stop, but both must
	// run on one connection, which must stay open in between; before 15, the
	// exclusive pg_start_backup also failed on a standby.
	"pg_backup_start": fnSession, "pg_backup_stop": fnSession,
	"pg_start_backup": fnSession, "pg_stop_backup": fnSession,
	// "Snapshot Synchronization Functions": pg_log_standby_snapshot writes
	// WAL.
	"pg_log_standby_snapshot": fnWrite,
	// "Replication Management Functions": emitting a message writes WAL;
	// replication origins live in the catalog and their manipulation fails
	// during recovery. A replication slot belongs to one server: one
	// created, advanced or consumed on a standby is not the primary's, and
	// before PostgreSQL 16 logical decoding fails there. A temporary slot
	// lasts as long as the session that created it.
	"pg_logical_emit_message":             fnWrite,
	"pg_replication_origin_create":        fnWrite,
	"pg_replication_origin_drop":          fnWrite,
	"pg_replication_origin_advance":       fnWrite,
	"pg_replication_origin_xact_setup":    fnWrite,
	"pg_replication_origin_xact_reset":    fnWrite,
	"pg_replication_origin_session_setup": fnWrite | fSession,
	"pg_replication_origin_session_reset": fnWrite | fSession,
	// The session's origin, set up by the two above.
	"pg_replication_origin_session_is_setup": fnSession,
	"pg_replication_origin_session_progress": fnSession,
	"pg_create_physical_replication_slot":    fnWrite | fSession,
	"pg_create_logical_replication_slot":     fnWrite | fSession,
	"pg_copy_physical_replication_slot":      fnWrite | fSession,
	"pg_copy_logical_replication_slot":       fnWrite | fSession,
	"pg_drop_replication_slot":               fnWrite,
	"pg_replication_slot_advance":            fnWrite,
	"pg_logical_slot_get_changes":            fnWrite,
	"pg_logical_slot_get_binary_changes":     fnWrite,
	"pg_logical_slot_peek_changes":           fnWrite,
	"pg_logical_slot_peek_binary_changes":    fnWrite,
	// "Database Object Management Functions": the statistics manipulation
	// functions "cannot be executed during recovery"; importing collations
	// writes the catalog.
	"pg_restore_relation_stats": fnWrite, "pg_clear_relation_stats": fnWrite,
	"pg_restore_attribute_stats": fnWrite, "pg_clear_attribute_stats": fnWrite,
	"pg_restore_extended_stats": fnWrite, "pg_clear_extended_stats": fnWrite,
	"pg_import_system_collations": fnWrite,
	// "Index Maintenance Functions": "These functions cannot be executed
	// during recovery."
	"brin_summarize_new_values": fnWrite, "brin_summarize_range": fnWrite,
	"brin_desummarize_range": fnWrite, "gin_clean_pending_list": fnWrite,

	// Functions that run SQL text they are given: the text may write, or
	// call a function that does. The XML mapping functions query_to_xml*
	// and the text search functions ts_stat and ts_rewrite (its two-argument
	// form) run it on the same server; crosstab (contrib tablefunc, in
	// funcFlags) too. dblink runs it on the server its connection string
	// names, often the same one; its connections, cursors and pending
	// queries belong to the session.
	"query_to_xml": fnExec, "query_to_xmlschema": fnExec, "query_to_xml_and_xmlschema": fnExec,
	"ts_stat": fnExec, "ts_rewrite": fnExec,
	"dblink": fnExec | fSession, "dblink_exec": fnExec | fSession,
	"dblink_open": fnExec | fSession, "dblink_fetch": fnExec | fSession, "dblink_close": fnExec | fSession,
	"dblink_send_query": fnExec | fSession, "dblink_get_result": fnExec | fSession,
	// dblink's connections, and the cursors cursor_to_xml reads (declared
	// by the session).
	"dblink_connect": fnSession, "dblink_connect_u": fnSession, "dblink_disconnect": fnSession,
	"dblink_get_connections": fnSession, "dblink_is_busy": fnSession, "dblink_get_notify": fnSession,
	"dblink_cancel_query": fnSession, "dblink_error_message": fnSession,
	"cursor_to_xml": fnSession, "cursor_to_xmlschema": fnSession,

	// MySQL and MariaDB: the row count and the rows found by the previous
	// statement on the connection.
	"row_count": fnDiag, "found_rows": fnDiag,
}

// Lengths of the shortest and the longest name funcFlags knows.
const (
	minFuncLen = len("lo_put")
	maxFuncLen = len("pg_replication_origin_session_progress")
)

// funcFlags returns the statement flags a call of the function named name
// sets, 0 for a function the rules do not know.
func funcFlags(name string) uint32 {
	if len(name) < minFuncLen || len(name) > maxFuncLen {
		return 0
	}
	var b [maxFuncLen]byte
	for i := 0; i < len(name); i++ {
		b[i] = lower[name[i]]
	}
	if f, ok := funcs[string(b[:len(name)])]; ok { // no allocation: see TestClassifyDoesNotAllocate
		return f
	}
	var rest string
	switch {
	case eqLower(name, "pg_advisory_"):
		rest = name[len("pg_advisory_"):]
	case eqLower(name, "pg_try_advisory_"):
		rest = name[len("pg_try_advisory_"):]
	case eqLower(name, "crosstab"):
		// crosstab, crosstab2, crosstab3, crosstab4 and the crosstab_*
		// functions its documentation shows how to make.
		return fnExec
	default:
		return 0
	}
	if eqLower(rest, "xact_") {
		// Transaction-scoped: released at commit, no session state.
		return fLockFunc
	}
	return fnLock
}
