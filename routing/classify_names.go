package routing

import (
	"strconv"

	"github.com/rwpool/rwpool/internal/driverinfo"
)

// DialectOf maps a database/sql driver name to a Dialect, ignoring case:
// names containing "postgres" or "pgx" ("postgres", "postgresql", "pgx",
// "pgx/v5", "cloudsqlpostgres", "nrpostgres", ...), "pq" and names
// containing "cockroach" are DialectPostgres; names containing "mysql" or
// "mariadb" are DialectMySQL; anything else is DialectGeneric.
func DialectOf(driverName string) Dialect {
	switch driverinfo.FamilyOf(driverName) {
	case driverinfo.FamilyPostgres:
		return DialectPostgres
	case driverinfo.FamilyMySQL:
		return DialectMySQL
	}
	return DialectGeneric
}

// String returns "generic", "postgres" or "mysql".
func (d Dialect) String() string {
	switch d {
	case DialectGeneric:
		return "generic"
	case DialectPostgres:
		return "postgres"
	case DialectMySQL:
		return "mysql"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// String returns "primary", "replica" or "previous".
func (t Target) String() string {
	switch t {
	case Primary:
		return "primary"
	case Replica:
		return "replica"
	case Previous:
		return "previous"
	}
	return "Target(" + strconv.Itoa(int(t)) + ")"
}

var ruleNames = [numRules]string{
	RuleWrite:          "write: not a read statement",
	RuleRead:           "read: SELECT/WITH/SHOW/VALUES/TABLE",
	RuleExplain:        "read: EXPLAIN/DESCRIBE without ANALYZE",
	RuleHintPrimary:    "hint: /*rwpool:primary*/",
	RuleHintReplica:    "hint: /*rwpool:replica*/",
	RuleEmpty:          "primary: empty query",
	RuleUnterminated:   "primary: unterminated quote or comment",
	RuleMultiStatement: "write: multi-statement with a non-read",
	RuleSession:        "session: session statement (SET, USE, PREPARE, BEGIN, temp table...)",
	RuleWritingCTE:     "write: data-modifying WITH",
	RuleExplainAnalyze: "write: EXPLAIN ANALYZE",
	RuleLockingRead:    "write: locking read (FOR UPDATE/SHARE)",
	RuleSelectInto:     "write: SELECT ... INTO",
	RuleSessionFunc:    "session: session function (nextval, currval, LAST_INSERT_ID...)",
	RuleLockFunc:       "session: lock function (GET_LOCK, pg_advisory_*...)",
	RuleWriteFunc:      "write: function a standby refuses (pg_notify, pg_switch_wal...)",
	RuleUserVar:        "session: user variable @x",
	RuleExecFunc:       "write: function that runs SQL text (dblink, query_to_xml...)",
	RuleDiagnostics:    "previous: diagnostics of the previous statement (SHOW WARNINGS, ROW_COUNT()...)",
}

// String names the rule in a few words, such as "read: SELECT/WITH/SHOW/VALUES/TABLE"
// or "write: locking read (FOR UPDATE/SHARE)".
func (r Rule) String() string {
	if r < numRules {
		return ruleNames[r]
	}
	return "Rule(" + strconv.Itoa(int(r)) + ")"
}

// String formats d as "primary (write: not a read statement)", with
// " +session" appended when Session is set.
func (d Decision) String() string {
	s := d.Target.String() + " (" + d.Rule.String() + ")"
	if d.Session {
		s += " +session"
	}
	return s
}

// Pins reports whether the statement pins its connection's lease to one
// primary connection: every statement that must run on the primary
// (writes, locking reads, session functions, and a /*rwpool:primary*/
// hint, which hides whether the statement under it writes) and anything
// that changes session state, even under a /*rwpool:replica*/ hint. Later
// statements of the lease then run on that connection, so the session
// behaves as on a single database. A diagnostics read (Target Previous)
// does not pin: it runs wherever the previous statement ran.
func (d Decision) Pins() bool {
	return d.Session || d.Target == Primary
}
