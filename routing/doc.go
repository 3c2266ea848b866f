// Package routing decides where each statement runs: Classify reads the SQL
// text and returns a Decision (Primary or Replica, the Rule that decided,
// and whether the statement touches per-connection session state).
//
// # Classification rules
//
// Classify looks at the first token of each statement after skipping
// whitespace, comments ("--", "/* */", nested in Postgres, "#" in MySQL)
// and opening parentheses, case-insensitively. Strings, quoted identifiers,
// dollar quotes and comments never count as keywords.
//
//	Statement                                       Target   Rule                Session
//	/*rwpool:primary*/ before the first token       primary  RuleHintPrimary     if any statement
//	unterminated quote, dollar quote or comment     primary  RuleUnterminated    if any statement
//	/*rwpool:replica*/ before the first token       replica  RuleHintReplica     if any statement
//	nothing but whitespace, comments and ;          primary  RuleEmpty           no
//	several statements, one not a read              primary  RuleMultiStatement  if any statement
//	SELECT, WITH, SHOW, VALUES, TABLE               replica  RuleRead            no
//	  with INSERT/UPDATE/DELETE/MERGE in WITH       primary  RuleWritingCTE      +
//	  with FOR [NO KEY] UPDATE, FOR [KEY] SHARE,    primary  RuleLockingRead     +
//	    LOCK IN SHARE MODE (any depth)
//	  with INTO at the top level                    primary  RuleSelectInto      + (INTO TEMP: yes)
//	  with GET_LOCK(, pg_advisory_lock(, ...        primary  RuleLockFunc        + (yes but _xact_, IS_*_LOCK)
//	  with pg_notify(, txid_current(, ...           primary  RuleWriteFunc       +
//	  with nextval(, LAST_INSERT_ID(, ...           primary  RuleSessionFunc     yes
//	  with @x (MySQL, not @@x)                      primary  RuleUserVar         yes
//	EXPLAIN, MySQL DESCRIBE/DESC without ANALYZE    replica  RuleExplain         no
//	EXPLAIN ANALYZE, EXPLAIN (ANALYZE [true])       primary  RuleExplainAnalyze  +
//	SET, RESET, USE, DISCARD, LOCK, UNLOCK,         primary  RuleSession         yes
//	  PREPARE, EXECUTE, DEALLOCATE, DECLARE, FETCH,
//	  MOVE, CLOSE, LISTEN, UNLISTEN, BEGIN, START,
//	  COMMIT, END, ROLLBACK, ABORT, SAVEPOINT,
//	  RELEASE, XA, HANDLER, GET (DIAGNOSTICS),
//	  CREATE [OR REPLACE] [GLOBAL|LOCAL] TEMP[ORARY],
//	  DROP TEMPORARY, DROP PREPARE,
//	  FLUSH ... WITH READ LOCK
//	anything else (DML, DDL, CALL, DO, COPY, ...)   primary  RuleWrite           +
//
// A "with" row applies when the feature appears anywhere in the statement;
// the first matching row, top to bottom, names the Rule. "+" means Session is
// set when the statement also contains a session function, session lock,
// user variable or INTO TEMP, as listed in the rows marked yes.
//
// A function counts when its name, quoted or not, schema-qualified or not,
// is followed by "(" (comments and whitespace allowed in between); a column
// named nextval_count or a string 'nextval(' does not count.
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
//   - SHOW always goes to a replica, including SHOW WARNINGS, SHOW ERRORS
//     and server-specific ones (SHOW MASTER STATUS, SHOW PROCESSLIST):
//     use a hint when the primary's answer is needed.
//   - Functions that write but are not built in (user functions, dblink)
//     can not be known: use /*rwpool:primary*/.
//   - Postgres strings follow standard_conforming_strings = on; MySQL strings
//     follow the default sql_mode (backslash escapes, "..." strings).
//     DialectGeneric covers both.
//   - MySQL /*! ... */ and /*M! ... */ bodies are classified as code, whatever
//     their version number.
//   - ";" splits statements at any parenthesis depth, so a function body with
//     BEGIN ATOMIC ... END (always a write anyway) may report Session when its
//     body contains SET.
package routing
