Cases meant to trip a naive classifier under DialectPostgres: keywords in
strings, quoted identifiers, dollar quotes and comments; placeholders; the @
and # operators; E'' strings; nested comments; hints; multi-statements;
parenthesised selects; function names in other positions; unterminated
input; empty input.

-- expect: replica read
SELECT 'FOR UPDATE' AS s

-- expect: replica read
SELECT 'DELETE FROM users; DROP TABLE users' AS s

-- expect: replica read
SELECT $$DELETE FROM users$$

-- expect: replica read
SELECT $body$ ; DELETE FROM t; $body$ AS src

-- expect: replica read
SELECT $a$ $b$ ; UPDATE t SET x = 1 $a$

-- expect: replica read
SELECT $1::text, $2, $10

-- expect: primary locking
SELECT $1 FOR UPDATE

-- expect: replica read
SELECT a$b$ FROM t

-- expect: primary unterminated
SELECT $tag$ body $TAG$

-- expect: primary unterminated
SELECT $$ never closed

-- expect: replica read
SELECT 1 /* outer /* nested; DELETE FROM t */ still a comment; DROP TABLE t */

-- expect: primary unterminated
SELECT 1 /* outer /* nested */ still open

-- expect: replica read
/* leading comment */ SELECT 1

-- expect: replica read
-- line comment
SELECT 1

-- expect: replica read
--
SELECT 1

-- expect: replica read
--no space needed in Postgres; DELETE FROM t
SELECT 5--1; DELETE FROM t

-- expect: replica read
((SELECT 1))

-- expect: replica read
(SELECT 1) UNION (SELECT 2)

-- expect: replica read
( /* c */ (SELECT a FROM t) EXCEPT (SELECT a FROM u) ) ORDER BY 1

-- expect: primary locking
(SELECT 1 FROM t) UNION ALL (SELECT 2 FROM u FOR UPDATE)

-- expect: primary locking
select * from only t for share

-- expect: replica read
SELECT for_update, share, "update" FROM t

-- expect: replica read
SELECT nextval_count, lastval FROM stats

-- expect: replica read
SELECT 'nextval(' || 'x' || ')'

-- expect: replica read
SELECT nextval_count(1)

-- expect: primary session-func
SELECT "nextval"('s')

-- expect: primary session-func
SELECT nextval ('s')

-- expect: primary session-func
SELECT nextval/* comment */('s')

-- expect: primary session-func
SELECT pg_catalog.nextval('public.orders_id_seq'::regclass)

-- expect: primary session-func
SELECT "pg_catalog"."nextval"('s')

-- expect: primary session-func
SELECT NEXTVAL('s')

-- expect: primary session-func
VALUES (nextval('s'))

-- expect: primary session-func
WITH ids AS (SELECT nextval('s') AS id FROM generate_series(1, 10)) SELECT * FROM ids

-- expect: primary lock-func +session
SELECT 1 WHERE pg_try_advisory_lock(1)

-- expect: replica read
SELECT @ -5

-- expect: replica read
SELECT @x FROM t

-- expect: replica read
SELECT '{1,2}'::int[] @> '{1}'

-- expect: replica read
SELECT '{1}'::int[] <@'{1,2}'

-- expect: replica read
SELECT 1 # 2

-- expect: replica read
SELECT E'\'; DELETE FROM t; --'

-- expect: replica read
SELECT e'\\', 'x'

-- expect: primary multi
-- With standard_conforming_strings the backslash does not escape the quote.
SELECT 'a\'; DELETE FROM t; --'

-- expect: replica read
SELECT U&'d\0061t\+000061'

-- expect: replica read
SELECT "a""b" FROM t

-- expect: replica read
SELECT 1 AS "; DELETE FROM t"

-- expect: replica read
SELECT 1;

-- expect: replica read
SELECT 1; -- trailing comment

-- expect: replica read
SELECT 1; /* c */ ; ;

-- expect: replica read
SELECT 1; SELECT 2

-- expect: replica explain
EXPLAIN SELECT 1; SELECT 2; SHOW ALL

-- expect: primary multi
SELECT 1; DELETE FROM t

-- expect: primary multi +session
SELECT 1; SET search_path = x

-- expect: primary multi
SELECT 1 --; DELETE FROM t
; DELETE FROM t

-- expect: replica read
SELECT 1 --; DELETE FROM t

-- expect: replica read
SELECT 1 FROM t -- FOR UPDATE

-- expect: replica read
SELECT 1 FROM t /* FOR UPDATE */

-- expect: primary locking
SELECT 1 FROM t -- comment
FOR UPDATE

-- expect: replica read
SELECT COUNT(*) FROM t WHERE s = 'it''s; DELETE'

-- expect: replica read
SELECT substring('abcdef' FROM 2 FOR 3)

-- expect: replica read
SELECT overlay('Txxxxas' placing 'hom' from 2 for 4)

-- expect: primary empty
;

-- expect: primary empty
/* nothing but a comment */

-- expect: primary empty

-- expect: primary empty
 ; -- ;
 ;

-- expect: primary unterminated
SELECT 'unterminated

-- expect: primary unterminated
SELECT "unterminated

-- expect: primary unterminated
SELECT 1 /* unterminated

-- expect: primary unterminated
SELECT E'ends with an escaped quote\'

-- expect: primary hint-primary
/*rwpool:primary*/ SELECT 1

-- expect: primary hint-primary
/* RWPOOL : PRIMARY */ select 1

-- expect: replica hint-replica
/* rwpool:replica */ SELECT * FROM t FOR UPDATE

-- expect: replica hint-replica
/*rwpool:replica*/ SELECT currval('s')

-- expect: primary hint-primary
/*rwpool:replica*/ /*rwpool:primary*/ SELECT 1

-- expect: replica hint-replica
( /*rwpool:replica*/ SELECT 1 FOR UPDATE)

-- expect: replica read
SELECT /*rwpool:primary*/ 1

-- expect: primary session-func
/*rwpool:replica please*/ SELECT nextval('s')

-- expect: primary locking
-- rwpool:replica
SELECT 1 FOR UPDATE

-- expect: primary hint-primary
/*rwpool:primary*/ SELECT 'never closed

-- expect: primary unterminated
/*rwpool:replica*/ SELECT 'never closed

-- expect: replica read
SELECT 1; /*rwpool:primary*/ SELECT 2

-- expect: replica hint-replica
/*rwpool:replica*/ SELECT 1; DELETE FROM t

-- expect: primary locking
WITH x AS (SELECT 1) SELECT * FROM x FOR UPDATE

-- expect: primary writing-cte
WITH x AS (INSERT INTO t VALUES (1) RETURNING *) SELECT * FROM x

-- expect: primary writing-cte
WITH x AS (SELECT 1), y AS (DELETE FROM t RETURNING id) SELECT * FROM y

-- expect: primary writing-cte
WITH src AS (SELECT * FROM staging) MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN DELETE

-- expect: primary writing-cte
WITH m AS MATERIALIZED (MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE RETURNING t.*) SELECT * FROM m

-- expect: replica read
WITH q AS (SELECT 'INSERT' AS op, "delete" FROM t) SELECT * FROM q

-- expect: replica read
WITH q AS (SELECT update, insert FROM t) SELECT * FROM q

-- expect: replica read
SELECT * FROM (WITH a AS (SELECT 1 AS x) SELECT x FROM a) s

-- expect: primary select-into
SELECT * INTO new_t FROM t

-- expect: replica read
SELECT into_count, "into" FROM t

-- expect: primary select-into
(SELECT 1 AS x INTO t2)

-- expect: primary select-into
WITH a AS (SELECT 1 AS x) SELECT x INTO t3 FROM a

-- expect: replica read
SELECT x FROM t WHERE y IN (SELECT z FROM u)

-- expect: replica read
SELECT * FROM generate_series(1, 10) AS g(i)

-- expect: primary write
INSERT INTO t SELECT * FROM u FOR UPDATE

-- expect: primary write
UPDATE t SET a = 1 WHERE id IN (SELECT id FROM t FOR UPDATE)

-- expect: primary write
DESCRIBE users

-- expect: replica explain
EXPLAIN SELECT nextval('s') FOR UPDATE

-- expect: primary explain-analyze
EXPLAIN ANALYZE SELECT nextval('s')

-- expect: primary explain-analyze
EXPLAIN ANALYZE

-- expect: primary explain-analyze
explain (analyze) select 1

-- expect: replica read
SeLeCt 1

-- expect: replica read escaped
\tSELECT\t1\r\nFROM t\r\n

-- expect: primary write escaped
\xef\xbb\xbfSELECT 1

-- expect: primary write escaped
\x00SELECT 1

-- expect: replica read
SELECT * FROM t WHERE x = $1 -- $2

-- expect: replica read
SELECT 'a' || $$b$$ || $q$c$q$ || E'd' || B'1' || X'1F' || N'e'

-- expect: primary write
"select" 1

-- expect: primary write
42

-- expect: primary write
(

-- expect: primary write
)

-- expect: primary write
UPSERT INTO t VALUES (1)

-- expect: replica read
SHOW search_path

-- expect: primary select-into +session
SELECT 'x' INTO TEMPORARY t

-- expect: primary session-func
SELECT myschema.nextval('x')

-- expect: primary write
INSERT INTO t VALUES (currval('s'))

-- expect: primary write
INSERT INTO temp VALUES (1)

-- expect: primary write
CREATE TABLE t AS SELECT 1

-- expect: primary write
DROP TABLE temporary_things

-- expect: replica read
SELECT * FROM "FOR" WHERE "UPDATE" = 1
