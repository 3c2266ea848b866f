Statements that read the diagnostics of the connection's previous
statement, from the MySQL and MariaDB manuals (SHOW WARNINGS, SHOW ERRORS,
GET DIAGNOSTICS, the warning_count and error_count system variables,
ROW_COUNT(), FOUND_ROWS(), SHOW PROFILE(S)): they must run on the real
connection that ran that statement (Target Previous). Also the
LAST_INSERT_ID() system variables, and look-alikes that stay plain reads.
Classified with DialectMySQL.

-- expect: previous diagnostics
SHOW WARNINGS

-- expect: previous diagnostics
SHOW WARNINGS LIMIT 10

-- expect: previous diagnostics
SHOW WARNINGS LIMIT 5, 10

-- expect: previous diagnostics
show warnings

-- expect: previous diagnostics
SHOW ERRORS

-- expect: previous diagnostics
SHOW ERRORS LIMIT 1

-- expect: previous diagnostics
SHOW COUNT(*) WARNINGS

-- expect: previous diagnostics
SHOW COUNT(*) ERRORS

-- expect: previous diagnostics
show count(*) warnings;

-- expect: previous diagnostics
/* app */ SHOW WARNINGS

-- expect: previous diagnostics
-- after the insert
SHOW WARNINGS

-- expect: previous diagnostics
# hash comment
SHOW ERRORS

-- expect: previous diagnostics
SHOW PROFILES

-- expect: previous diagnostics
SHOW PROFILE

-- expect: previous diagnostics
SHOW PROFILE FOR QUERY 2

-- expect: previous diagnostics
SHOW PROFILE CPU, BLOCK IO FOR QUERY 1 LIMIT 3

-- expect: previous diagnostics
GET DIAGNOSTICS @n = NUMBER, @r = ROW_COUNT

-- expect: previous diagnostics
GET DIAGNOSTICS CONDITION 1 @sqlstate = RETURNED_SQLSTATE, @msg = MESSAGE_TEXT

-- expect: previous diagnostics
GET CURRENT DIAGNOSTICS @n = NUMBER

-- expect: previous diagnostics
GET STACKED DIAGNOSTICS CONDITION 1 @errno = MYSQL_ERRNO

-- expect: previous diagnostics
SELECT @@warning_count

-- expect: previous diagnostics
SELECT @@error_count

-- expect: previous diagnostics
SELECT @@session.warning_count, @@SESSION.error_count

-- expect: previous diagnostics
SELECT @@local.warning_count

-- expect: previous diagnostics
SELECT @@WARNING_COUNT AS w

-- expect: previous diagnostics
SELECT ROW_COUNT()

-- expect: previous diagnostics
SELECT FOUND_ROWS()

-- expect: previous diagnostics
SELECT ROW_COUNT() AS affected, FOUND_ROWS() AS found

-- expect: previous diagnostics
SELECT row_count ( )

-- expect: previous diagnostics
(SELECT @@warning_count)

-- expect: previous diagnostics
/*!40100 SHOW WARNINGS */

-- expect: primary session-func
SELECT @@identity

-- expect: primary session-func
SELECT @@last_insert_id, @@session.identity

-- expect: primary session-func
SELECT LAST_INSERT_ID()

-- expect: replica read
SHOW VARIABLES LIKE 'warning_count'

-- expect: replica read
SHOW STATUS LIKE 'Last_query_cost'

-- expect: replica read
SHOW GLOBAL STATUS

-- expect: replica read
SHOW ENGINE INNODB STATUS

-- expect: replica read
SHOW TABLES LIKE 'warnings'

-- expect: replica read
SELECT warnings, errors, row_count FROM import_runs

-- expect: replica read
SELECT 'SHOW WARNINGS', '@@warning_count', "ROW_COUNT()"

-- expect: replica read
SELECT @@version, @@session.sql_mode, @@global.read_only

-- expect: replica read
SELECT @@warning_counts, @@identity_insert

-- expect: replica read
SELECT `row_count` FROM t

-- expect: replica explain
EXPLAIN SELECT FOUND_ROWS()

-- expect: primary user-var +session
SELECT @@warning_count, @w

-- expect: primary locking
SELECT ROW_COUNT() FROM t FOR UPDATE

-- expect: primary write
UPDATE counters SET n = ROW_COUNT() WHERE id = 1

-- expect: primary write
INSERT INTO log (w) SELECT @@warning_count

-- expect: primary multi
INSERT INTO t VALUES (1); SHOW WARNINGS

-- expect: primary multi
SELECT 1; SHOW WARNINGS

-- expect: primary hint-primary
/*rwpool:primary*/ SHOW WARNINGS

-- expect: replica hint-replica
/*rwpool:replica*/ SHOW WARNINGS

-- expect: primary session +session
GET foo
