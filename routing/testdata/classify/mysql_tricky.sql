Cases meant to trip a naive classifier under DialectMySQL: # and "-- "
comments, "--" that is not a comment, backslash escapes, "..." strings,
backticks, /*! */ executable comments, user variables against @@system
variables and 'user'@'host', hints, unterminated input.

-- expect: replica read
SELECT 1 # comment

-- expect: replica read
SELECT 1 # comment ; DELETE FROM t

-- expect: replica read
# leading comment
SELECT 1

-- expect: primary locking
SELECT 1 FROM t # comment
FOR UPDATE

-- expect: replica read
SELECT 1 -- comment; DELETE FROM t

-- expect: replica read
SELECT 1--1

-- expect: primary multi
-- "--" without a following space is two minus signs in MySQL
SELECT 5--1; DELETE FROM t

-- expect: replica read escaped
SELECT 1 --\tcomment; DELETE FROM t

-- expect: replica read
SELECT 1 --

-- expect: replica read
SELECT 'it\'s; DELETE FROM t'

-- expect: replica read
SELECT "double; DELETE FROM t"

-- expect: replica read
SELECT "a\"b; DELETE FROM t"

-- expect: replica read
SELECT 'a''b', "c""d"

-- expect: primary multi
SELECT * FROM t WHERE c = '\\'; DELETE FROM t

-- expect: replica read
SELECT 'a\\'; SELECT "b\\"

-- expect: replica read
SELECT `select` FROM `update` WHERE `for` = 1

-- expect: replica read
SELECT `weird``name; DELETE` FROM t

-- expect: replica read
SELECT * FROM `into`

-- expect: replica read
SELECT 'a' 'b', _utf8mb4'abc' COLLATE utf8mb4_bin, X'4D7953514C', b'1010', N'nat'

-- expect: replica read
SELECT $1, $$ FROM t

-- expect: replica read
SELECT /*! SQL_NO_CACHE */ * FROM t

-- expect: primary locking
SELECT * FROM t /*!50000 FOR UPDATE */

-- expect: primary locking
SELECT 1 /*M!100100 FOR UPDATE */

-- expect: primary locking
SELECT 1 /*!FOR UPDATE*/

-- expect: primary multi
SELECT 1 /*!50000 ; DELETE FROM t */

-- expect: primary session +session
/*!40101 SET NAMES utf8mb4 */

-- expect: primary session +session
/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;

-- expect: primary session +session
/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;

-- expect: replica read
/*!SELECT*/ 1

-- expect: replica read
SELECT 1 /*! */

-- expect: primary unterminated
SELECT 1 /*! never closed

-- expect: replica read
SELECT 1 /* comment /* not nested */

-- expect: primary multi
SELECT 1 /* a /* b */ ; DELETE FROM t; /* */

-- expect: primary user-var +session
SELECT @x

-- expect: primary user-var +session
SELECT @`my-var`, @'other var', @"third"

-- expect: primary user-var +session
SELECT 1 FROM dual WHERE @x IS NULL

-- expect: primary user-var +session
SELECT * FROM t WHERE id = @last_id

-- expect: primary user-var +session
SELECT @@version, @x

-- expect: replica read
SELECT '@x', "@y", `@z`

-- expect: replica read
SELECT * FROM t WHERE email = 'a@b.com'

-- expect: replica read
SELECT @@global.read_only, @@session.sql_mode

-- expect: replica read
SELECT @ -5

-- expect: primary select-into +session
SELECT COUNT(*) INTO @cnt FROM t

-- expect: primary select-into +session
SELECT c1 INTO @v FROM t1 WHERE id = 1

-- expect: primary multi +session
SET PASSWORD = 'x'; DROP USER 'u'@'h'

-- expect: primary multi
SELECT 1; DELETE FROM t

-- expect: primary multi
SELECT 1; SELECT LAST_INSERT_ID()

-- expect: replica read
SELECT 1; SELECT 2;

-- expect: replica read
select * from t where a = 1 order by b desc limit 1

-- expect: primary locking
select * from t for update

-- expect: primary locking
SELECT * FROM t1 WHERE t1.a IN (SELECT b FROM t2 LOCK IN SHARE MODE)

-- expect: replica read
SELECT IFNULL(found_rows, 0), t.last_insert_id, row_count FROM stats t

-- expect: primary session-func
SELECT `LAST_INSERT_ID`()

-- expect: replica read
SELECT * FROM t WHERE x = 'INTO OUTFILE'

-- expect: replica read
SELECT * FROM t ORDER BY id DESC

-- expect: primary hint-primary
/*rwpool:primary*/ SELECT 1

-- expect: replica hint-replica
/*rwpool:replica*/ SELECT * FROM t FOR UPDATE

-- expect: primary locking
# rwpool:replica
SELECT 1 FOR UPDATE

-- expect: primary write
/*!rwpool:replica*/ SELECT 1 FOR UPDATE

-- expect: primary unterminated
SELECT 'abc\'

-- expect: primary unterminated
SELECT "abc

-- expect: primary unterminated
SELECT `abc

-- expect: primary unterminated
SELECT 1 /* x

-- expect: primary unterminated +session
SELECT @'unterminated

-- expect: primary empty
# just a comment

-- expect: primary empty
-- just a comment

-- expect: primary empty
/* */ ; /*! */ ;
