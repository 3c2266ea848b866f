DialectGeneric: the driver is unknown, so where PostgreSQL and MySQL read a
query differently the more conservative verdict wins (Primary over Replica,
Session if either says so). Most cases here are read by one dialect and
written, or broken, by the other.

-- expect: replica read
SELECT 1

-- expect: replica read
SELECT * FROM "users" WHERE "users"."id" = $1 AND "users"."deleted_at" IS NULL

-- expect: replica read
SELECT * FROM `users` WHERE `users`.`id` = ? AND `users`.`deleted_at` IS NULL

-- expect: primary write
INSERT INTO "users" ("name") VALUES ($1) RETURNING "id"

-- expect: primary write
INSERT INTO `users` (`name`) VALUES (?)

-- expect: replica read
-- Postgres: 1 XOR comment; MySQL: a comment. Both read.
SELECT 1 # comment

-- expect: primary multi
-- Postgres: # is an operator, so DELETE is a second statement.
SELECT 1 # ; DELETE FROM t

-- expect: primary multi
-- Postgres: the string ends at \', so DELETE is a second statement.
SELECT 'a\'; DELETE FROM t; --'

-- expect: primary unterminated
-- Postgres: 'it\' then an unterminated s'.
SELECT 'it\'s'

-- expect: primary multi
-- MySQL: $$ is an identifier, so ; splits.
SELECT $$;DELETE FROM t;$$

-- expect: primary user-var +session
SELECT @x

-- expect: replica read
SELECT @@version

-- expect: replica read
SELECT @ -5

-- expect: primary user-var +session
-- MySQL reads @'{1,2}' as a user variable: conservative.
SELECT '{1}'::int[] <@'{1,2}'

-- expect: replica read
SELECT 1 /* a /* b */ c */

-- expect: primary unterminated
-- Postgres: nested comment never closed; MySQL: a DELETE after the comment.
SELECT 1 /* a /* b */ ; DELETE FROM t; /* */

-- expect: primary locking
SELECT 1 /*!FOR UPDATE */

-- expect: primary session +session
/*!40101 SET NAMES utf8 */

-- expect: replica read
SELECT 5--1

-- expect: primary multi
-- Postgres: a comment; MySQL: 5 - -1, then DELETE.
SELECT 5--1; DELETE FROM t

-- expect: primary multi
-- Postgres: "a\" is an identifier, so DELETE is a second statement.
SELECT "a\"; DELETE FROM t; --"

-- expect: primary write
-- DESCRIBE is a MySQL read, an unknown statement for Postgres.
DESCRIBE users

-- expect: replica read
SELECT E'\''

-- expect: primary session +session
SET NAMES utf8

-- expect: primary session-func
SELECT nextval('s')

-- expect: primary session-func
SELECT `nextval`('s')

-- expect: replica hint-replica
/*rwpool:replica*/ SELECT 1 FOR UPDATE

-- expect: primary write
-- Postgres: # is the first token (an unknown statement), so the hint comes
-- too late.
# x
/*rwpool:replica*/ SELECT 1 FOR UPDATE

-- expect: replica read
SELECT 1;

-- expect: primary empty
;

-- expect: primary locking
SELECT * FROM t WHERE id = 1 FOR UPDATE

-- expect: replica explain
EXPLAIN SELECT * FROM t

-- expect: primary explain-analyze
EXPLAIN ANALYZE SELECT * FROM t

-- expect: primary writing-cte
WITH d AS (DELETE FROM t RETURNING id) SELECT count(*) FROM d

-- expect: primary select-into +session
SELECT id INTO @id FROM t LIMIT 1

-- expect: primary lock-func +session
SELECT GET_LOCK('job', 0)

-- expect: primary write-func
SELECT pg_notify('ch', 'x')

-- expect: primary session +session
BEGIN

-- expect: replica read
SELECT 'x' AS "y", `z` FROM t

-- expect: previous diagnostics
SHOW WARNINGS

-- expect: previous diagnostics
-- PostgreSQL reads the operator @, MySQL the diagnostics: they win.
SELECT @@warning_count

-- expect: primary session-func
SELECT @@identity

-- expect: primary user-var +session
-- PostgreSQL: diagnostics; MySQL: a user variable too, and Primary wins.
SELECT ROW_COUNT(), @x

-- expect: primary write-func
SELECT pg_switch_wal()

-- expect: primary exec-func +session
SELECT * FROM dblink('dbname=shop', 'DELETE FROM t RETURNING id') AS t(id int)
