Statements in the style of the examples of the PostgreSQL manual pages
SELECT, WITH, VALUES, TABLE, INSERT, UPDATE, DELETE, MERGE, SHOW, EXPLAIN,
LOCK, SET, RESET, PREPARE, EXECUTE, DEALLOCATE, DECLARE, FETCH, transaction
control, sequence and advisory lock functions, and common DDL/utility
commands. Classified with DialectPostgres.

-- expect: replica read
SELECT f.title, f.did, d.name, f.date_prod, f.kind
    FROM distributors d JOIN films f USING (did);

-- expect: replica read
SELECT kind, sum(len) AS total FROM films GROUP BY kind;

-- expect: replica read
SELECT kind, sum(len) AS total
    FROM films
    GROUP BY kind
    HAVING sum(len) < interval '5 hours';

-- expect: replica read
SELECT * FROM distributors ORDER BY name;

-- expect: replica read
SELECT * FROM distributors ORDER BY 2;

-- expect: replica read
SELECT distributors.name
    FROM distributors
    WHERE distributors.name LIKE 'W%'
UNION
SELECT actors.name
    FROM actors
    WHERE actors.name LIKE 'W%';

-- expect: replica read
SELECT * FROM distributors(111);

-- expect: replica read
SELECT * FROM distributors_2(111) AS (f1 int, f2 text);

-- expect: replica read
SELECT * FROM unnest(ARRAY['a','b','c','d','e','f']) WITH ORDINALITY;

-- expect: replica read
SELECT m.name AS mname, pname
FROM manufacturers m, LATERAL get_product_names(m.id) pname;

-- expect: replica read
SELECT m.name AS mname, pname
FROM manufacturers m LEFT JOIN LATERAL get_product_names(m.id) pname ON true;

-- expect: replica read
SELECT 2+2;

-- expect: replica read
SELECT DISTINCT ON (location) location, time, report
    FROM weather_reports
    ORDER BY location, time DESC;

-- expect: replica read
SELECT * FROM films WHERE kind = 'Drama' FETCH FIRST 10 ROWS WITH TIES;

-- expect: replica read
SELECT * FROM films TABLESAMPLE SYSTEM (10) REPEATABLE (42);

-- expect: replica read
SELECT * FROM films OFFSET 5 ROWS FETCH NEXT 3 ROWS ONLY;

-- expect: primary locking
SELECT * FROM mytable WHERE key = 1 FOR NO KEY UPDATE;

-- expect: primary locking
SELECT * FROM (SELECT * FROM mytable FOR UPDATE) ss WHERE col1 = 5;

-- expect: primary locking
SELECT * FROM (SELECT * FROM mytable FOR UPDATE) ss ORDER BY column1;

-- expect: primary locking
SELECT * FROM mytable WHERE key = 1 FOR KEY SHARE;

-- expect: primary locking
SELECT * FROM mytable WHERE key = 1 FOR SHARE OF mytable NOWAIT;

-- expect: primary multi +session
SELECT * FROM mytable WHERE key = 1 FOR NO KEY UPDATE;
SAVEPOINT s;
UPDATE mytable SET key = 2 WHERE key = 1;
ROLLBACK TO s;

-- expect: primary select-into
SELECT * INTO films_recent FROM films WHERE date_prod >= '2002-01-01';

-- expect: primary select-into +session
SELECT * INTO TEMP films_recent FROM films WHERE date_prod >= '2002-01-01';

-- expect: primary select-into +session
SELECT * INTO TEMPORARY TABLE films_recent FROM films;

-- expect: primary select-into
SELECT * INTO UNLOGGED TABLE films_recent FROM films;

-- expect: replica read
VALUES (1, 'one'), (2, 'two'), (3, 'three');

-- expect: replica read
SELECT * FROM (VALUES (1, 'one'), (2, 'two'), (3, 'three')) AS t (num,letter);

-- expect: replica read
VALUES (1, 'one'), (2, 'two') ORDER BY 1 DESC LIMIT 1;

-- expect: replica read
TABLE films;

-- expect: replica read
TABLE ONLY films ORDER BY title LIMIT 10;

-- expect: replica read
WITH regional_sales AS (
    SELECT region, SUM(amount) AS total_sales
    FROM orders
    GROUP BY region
), top_regions AS (
    SELECT region
    FROM regional_sales
    WHERE total_sales > (SELECT SUM(total_sales)/10 FROM regional_sales)
)
SELECT region,
       product,
       SUM(quantity) AS product_units,
       SUM(amount) AS product_sales
FROM orders
WHERE region IN (SELECT region FROM top_regions)
GROUP BY region, product;

-- expect: replica read
WITH RECURSIVE t(n) AS (
    VALUES (1)
  UNION ALL
    SELECT n+1 FROM t WHERE n < 100
)
SELECT sum(n) FROM t;

-- expect: replica read
WITH RECURSIVE included_parts(sub_part, part, quantity) AS (
    SELECT sub_part, part, quantity FROM parts WHERE part = 'our_product'
  UNION ALL
    SELECT p.sub_part, p.part, p.quantity * pr.quantity
    FROM included_parts pr, parts p
    WHERE p.part = pr.sub_part
)
SELECT sub_part, SUM(quantity) as total_quantity
FROM included_parts
GROUP BY sub_part;

-- expect: replica read
-- SEARCH and CYCLE clauses contain SET, which is not a SET statement here.
WITH RECURSIVE search_tree(id, link, data) AS (
    SELECT t.id, t.link, t.data
    FROM tree t
  UNION ALL
    SELECT t.id, t.link, t.data
    FROM tree t, search_tree st
    WHERE t.id = st.link
) SEARCH DEPTH FIRST BY id SET ordercol
CYCLE id SET is_cycle USING path
SELECT * FROM search_tree ORDER BY ordercol;

-- expect: replica read
WITH w AS MATERIALIZED (
    SELECT * FROM big_table
)
SELECT * FROM w AS w1 JOIN w AS w2 ON w1.key = w2.ref
WHERE w2.key = 123;

-- expect: replica read
WITH w AS NOT MATERIALIZED (
    SELECT * FROM big_table
)
SELECT * FROM w WHERE key = 123;

-- expect: replica read
WITH t AS (
    SELECT random() as x FROM generate_series(1, 3)
  )
SELECT * FROM t
UNION ALL
SELECT * FROM t;

-- expect: primary writing-cte
WITH moved_rows AS (
    DELETE FROM products
    WHERE
        "date" >= '2010-10-01' AND
        "date" < '2010-11-01'
    RETURNING *
)
INSERT INTO products_log
SELECT * FROM moved_rows;

-- expect: primary writing-cte
WITH t AS (
    UPDATE products SET price = price * 1.05
    RETURNING *
)
SELECT * FROM products;

-- expect: primary writing-cte
WITH t AS (
    UPDATE products SET price = price * 1.05
    RETURNING *
)
SELECT * FROM t;

-- expect: primary writing-cte
WITH RECURSIVE included_parts(sub_part, part) AS (
    SELECT sub_part, part FROM parts WHERE part = 'our_product'
  UNION ALL
    SELECT p.sub_part, p.part
    FROM included_parts pr, parts p
    WHERE p.part = pr.sub_part
)
DELETE FROM parts
  WHERE part IN (SELECT part FROM included_parts);

-- expect: primary writing-cte
WITH t AS (
    DELETE FROM foo
)
DELETE FROM bar;

-- expect: primary writing-cte
WITH upd AS (
  UPDATE employees SET sales_count = sales_count + 1 WHERE id =
    (SELECT sales_person FROM accounts WHERE name = 'Acme Corporation')
    RETURNING *
)
INSERT INTO employees_log SELECT *, current_timestamp FROM upd;

-- expect: primary writing-cte
WITH exceeded_max_retries AS (
  SELECT w.ctid FROM work_item AS w
    WHERE w.status = 'active' AND w.num_retries > 10
    ORDER BY w.retry_timestamp
    FOR UPDATE
    LIMIT 5000
)
UPDATE work_item SET status = 'failed'
  FROM exceeded_max_retries AS emr
  WHERE work_item.ctid = emr.ctid;

-- expect: primary write
INSERT INTO films VALUES
    ('UA502', 'Bananas', 105, '1971-07-13', 'Comedy', '82 minutes');

-- expect: primary write
INSERT INTO films (code, title, did, date_prod, kind)
    VALUES ('T_601', 'Yojimbo', 106, '1961-06-16', 'Drama');

-- expect: primary write
INSERT INTO films DEFAULT VALUES;

-- expect: primary write
INSERT INTO films SELECT * FROM tmp_films WHERE date_prod < '2004-05-07';

-- expect: primary write
INSERT INTO distributors (did, dname) VALUES (DEFAULT, 'XYZ Widgets')
   RETURNING did;

-- expect: primary write
INSERT INTO distributors (did, dname)
    VALUES (5, 'Gizmo Transglobal'), (6, 'Associated Computing, Inc')
    ON CONFLICT (did) DO UPDATE SET dname = EXCLUDED.dname;

-- expect: primary write
INSERT INTO distributors (did, dname) VALUES (7, 'Redline GmbH')
    ON CONFLICT (did) DO NOTHING;

-- expect: primary write
INSERT INTO tictactoe (game, board[1:3][1:3])
    VALUES (1, '{{" "," "," "},{" "," "," "},{" "," "," "}}');

-- expect: primary write
UPDATE films SET kind = 'Dramatic' WHERE kind = 'Drama';

-- expect: primary write
UPDATE weather SET temp_lo = temp_lo+1, temp_hi = temp_lo+15, prcp = DEFAULT
  WHERE city = 'San Francisco' AND date = '2003-07-03'
  RETURNING temp_lo, temp_hi, prcp;

-- expect: primary write
UPDATE employees SET sales_count = sales_count + 1 FROM accounts
  WHERE accounts.name = 'Acme Corporation'
  AND employees.id = accounts.sales_person;

-- expect: primary write
UPDATE accounts SET (contact_first_name, contact_last_name) =
    (SELECT first_name, last_name FROM employees
     WHERE employees.id = accounts.sales_person);

-- expect: primary write
UPDATE films SET kind = 'Dramatic' WHERE CURRENT OF c_films;

-- expect: primary write
DELETE FROM films USING producers
  WHERE producer_id = producers.id AND producers.name = 'foo';

-- expect: primary write
DELETE FROM films
  WHERE producer_id IN (SELECT id FROM producers WHERE name = 'foo');

-- expect: primary write
DELETE FROM tasks WHERE status = 'DONE' RETURNING *;

-- expect: primary write
DELETE FROM films;

-- expect: primary write
MERGE INTO customer_account ca
USING recent_transactions t
ON t.customer_id = ca.customer_id
WHEN MATCHED THEN
  UPDATE SET balance = balance + transaction_value
WHEN NOT MATCHED THEN
  INSERT (customer_id, balance)
  VALUES (t.customer_id, t.transaction_value);

-- expect: primary write
MERGE INTO wines w
USING wine_stock_changes s
ON s.winename = w.winename
WHEN NOT MATCHED AND s.stock_delta > 0 THEN
  INSERT VALUES(s.winename, s.stock_delta)
WHEN MATCHED AND w.stock + s.stock_delta > 0 THEN
  UPDATE SET stock = w.stock + s.stock_delta
WHEN MATCHED THEN
  DELETE
RETURNING merge_action(), w.*;

-- expect: replica read
SHOW DateStyle;

-- expect: replica read
SHOW geqo;

-- expect: replica read
SHOW ALL;

-- expect: replica read
SHOW TRANSACTION ISOLATION LEVEL;

-- expect: replica explain
EXPLAIN SELECT * FROM foo;

-- expect: replica explain
EXPLAIN (FORMAT JSON) SELECT * FROM foo;

-- expect: replica explain
EXPLAIN (FORMAT YAML) SELECT * FROM foo WHERE i='4';

-- expect: replica explain
EXPLAIN (COSTS FALSE) SELECT * FROM foo WHERE i = 4;

-- expect: replica explain
EXPLAIN SELECT sum(i) FROM foo WHERE i < 10;

-- expect: replica explain
EXPLAIN (GENERIC_PLAN)
  SELECT unique1 FROM tenk1 WHERE thousand = $1 AND tenthous = $2;

-- expect: primary explain-analyze
EXPLAIN ANALYZE EXECUTE query(100, 200);

-- expect: primary explain-analyze
EXPLAIN ANALYZE SELECT * FROM tenk1 t1, tenk2 t2
WHERE t1.unique1 < 100 AND t1.unique2 = t2.unique2 ORDER BY t1.fivethous;

-- expect: primary explain-analyze
EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) SELECT * FROM foo;

-- expect: primary explain-analyze
EXPLAIN (ANALYZE TRUE, TIMING FALSE) SELECT * FROM foo;

-- expect: replica explain
EXPLAIN (ANALYZE FALSE, VERBOSE) UPDATE foo SET bar = 1;

-- expect: replica explain
EXPLAIN (ANALYZE off) DELETE FROM foo;

-- expect: replica explain
EXPLAIN (ANALYZE 0) SELECT 1;

-- expect: primary explain-analyze
EXPLAIN ANALYSE UPDATE foo SET bar = 1;

-- expect: replica explain
-- EXPLAIN without ANALYZE does not run the UPDATE: harmless on a replica.
EXPLAIN UPDATE foo SET bar = 1 WHERE id = 2;

-- expect: replica explain
EXPLAIN VERBOSE SELECT * FROM foo;

-- expect: primary session +session
LOCK TABLE films IN SHARE MODE;

-- expect: primary session +session
LOCK TABLE cross_country IN SHARE ROW EXCLUSIVE MODE;

-- expect: primary session +session
LOCK films;

-- expect: primary multi +session
BEGIN WORK;
LOCK TABLE films IN SHARE MODE;
SELECT id FROM films
    WHERE name = 'Star Wars: Episode I - The Phantom Menace';
INSERT INTO films_user_comments VALUES
    (42, 'GREAT! I was waiting for it for so long!');
COMMIT WORK;

-- expect: primary session +session
SET search_path TO my_schema, public;

-- expect: primary session +session
SET datestyle TO postgres, dmy;

-- expect: primary session +session
SET TIME ZONE 'PST8PDT';

-- expect: primary session +session
SET TIME ZONE 'Europe/Rome';

-- expect: primary session +session
SET LOCAL statement_timeout = '5s';

-- expect: primary session +session
SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE;

-- expect: primary session +session
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;

-- expect: primary session +session
SET CONSTRAINTS ALL DEFERRED;

-- expect: primary session +session
SET ROLE admin;

-- expect: primary session +session
RESET timezone;

-- expect: primary session +session
RESET ALL;

-- expect: primary session +session
DISCARD ALL;

-- expect: primary session +session
DISCARD TEMP;

-- expect: primary session +session
PREPARE fooplan (int, text, bool, numeric) AS
    INSERT INTO foo VALUES($1, $2, $3, $4);

-- expect: primary session +session
EXECUTE fooplan(1, 'Hunter Valley', 't', 200.00);

-- expect: primary session +session
PREPARE usrrptplan (int) AS
    SELECT * FROM users u, logs l WHERE u.usrid=$1 AND u.usrid=l.usrid
    AND l.date = $2;

-- expect: primary session +session
DEALLOCATE usrrptplan;

-- expect: primary session +session
DEALLOCATE ALL;

-- expect: primary session +session
DECLARE liahona CURSOR WITH HOLD FOR SELECT * FROM films;

-- expect: primary session +session
FETCH FORWARD 5 FROM liahona;

-- expect: primary session +session
FETCH PRIOR FROM liahona;

-- expect: primary session +session
MOVE FORWARD 5 IN liahona;

-- expect: primary session +session
CLOSE liahona;

-- expect: primary session +session
BEGIN;

-- expect: primary session +session
BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE;

-- expect: primary session +session
START TRANSACTION READ ONLY;

-- expect: primary session +session
COMMIT;

-- expect: primary session +session
END;

-- expect: primary session +session
ROLLBACK;

-- expect: primary session +session
ABORT;

-- expect: primary session +session
SAVEPOINT my_savepoint;

-- expect: primary session +session
RELEASE SAVEPOINT my_savepoint;

-- expect: primary session +session
ROLLBACK TO SAVEPOINT my_savepoint;

-- expect: primary session +session
PREPARE TRANSACTION 'foobar';

-- expect: primary session +session
COMMIT PREPARED 'foobar';

-- expect: primary session +session
LISTEN virtual;

-- expect: primary session +session
UNLISTEN *;

-- expect: primary write
NOTIFY virtual, 'This is the payload';

-- expect: primary write-func
SELECT pg_notify('virtual', 'This is the payload');

-- expect: primary session-func
SELECT nextval('foo');

-- expect: primary session-func
SELECT nextval('foo'::regclass);

-- expect: primary session-func
SELECT setval('myseq', 42);

-- expect: primary session-func
SELECT setval('myseq', 42, false);

-- expect: primary session-func
SELECT currval('serial');

-- expect: primary session-func
SELECT lastval();

-- expect: primary session-func
SELECT setval(pg_get_serial_sequence('users', 'id'), coalesce(max(id), 1)) FROM users;

-- expect: primary session-func +session
SELECT set_config('search_path', 'app', false);

-- expect: primary write
INSERT INTO distributors VALUES (nextval('serial'), 'nothing');

-- expect: primary lock-func +session
SELECT pg_advisory_lock(42);

-- expect: primary lock-func +session
SELECT pg_advisory_lock_shared(1, 2);

-- expect: primary lock-func +session
SELECT pg_try_advisory_lock(hashtext('nightly-job'));

-- expect: primary lock-func +session
SELECT pg_advisory_unlock(42);

-- expect: primary lock-func +session
SELECT pg_advisory_unlock_all();

-- expect: primary lock-func
SELECT pg_advisory_xact_lock(42);

-- expect: primary lock-func
SELECT pg_try_advisory_xact_lock_shared(1, 2);

-- expect: primary write-func
SELECT txid_current();

-- expect: primary write-func
SELECT pg_current_xact_id();

-- expect: primary write-func
SELECT lo_import('/etc/motd');

-- expect: primary write-func
SELECT lo_unlink(173454);

-- expect: replica read
SELECT pg_is_in_recovery();

-- expect: replica read
SELECT pg_sleep(1.5);

-- expect: replica read
SELECT current_setting('search_path');

-- expect: replica read
SELECT pg_backend_pid();

-- expect: replica read
SELECT txid_current_snapshot();

-- expect: replica read
SELECT * FROM pg_stat_activity WHERE state = 'active';

-- expect: replica read
SELECT count(*) FROM pg_locks WHERE locktype = 'advisory';

-- expect: primary write
CREATE TABLE films (
    code        char(5) CONSTRAINT firstkey PRIMARY KEY,
    title       varchar(40) NOT NULL,
    did         integer NOT NULL,
    date_prod   date,
    kind        varchar(10),
    len         interval hour to minute
);

-- expect: primary session +session
CREATE TEMP TABLE films_recent (LIKE films) ON COMMIT DROP;

-- expect: primary session +session
CREATE TEMPORARY TABLE films_recent AS
  SELECT * FROM films WHERE date_prod >= '2002-01-01';

-- expect: primary session +session
CREATE GLOBAL TEMPORARY TABLE gt (id int);

-- expect: primary session +session
CREATE LOCAL TEMP TABLE lt (id int);

-- expect: primary session +session
CREATE OR REPLACE TEMP VIEW recent AS SELECT * FROM films;

-- expect: primary session +session
CREATE TEMP SEQUENCE serial START 101;

-- expect: primary write
CREATE TABLE temp (id int);

-- expect: primary write
CREATE UNLOGGED TABLE staging (id int);

-- expect: primary write
CREATE TABLE films2 AS TABLE films;

-- expect: primary write
CREATE INDEX CONCURRENTLY sales_quantity_index ON sales_table (quantity);

-- expect: primary write
ALTER TABLE distributors ADD COLUMN address varchar(30);

-- expect: primary write
DROP TABLE films, distributors;

-- expect: primary write
TRUNCATE bigtable, fattable RESTART IDENTITY;

-- expect: primary write
VACUUM (VERBOSE, ANALYZE) onek;

-- expect: primary write
ANALYZE users (name, email);

-- expect: primary write
REFRESH MATERIALIZED VIEW CONCURRENTLY order_summary;

-- expect: primary write
CLUSTER employees USING employees_ind;

-- expect: primary write
REINDEX INDEX my_index;

-- expect: primary write
COPY films TO STDOUT WITH (FORMAT csv);

-- expect: primary write
COPY country FROM '/usr1/proj/bray/sql/country_data';

-- expect: primary write
CALL do_db_maintenance();

-- expect: primary write
GRANT SELECT ON films TO PUBLIC;

-- expect: primary write
COMMENT ON TABLE mytable IS 'This is my table.';

-- expect: primary write
CHECKPOINT;

-- expect: primary write
DO $$DECLARE r record;
BEGIN
    FOR r IN SELECT table_schema, table_name FROM information_schema.tables
             WHERE table_type = 'VIEW' AND table_schema = 'public'
    LOOP
        EXECUTE 'GRANT ALL ON ' || quote_ident(r.table_schema) || '.' || quote_ident(r.table_name) || ' TO webuser';
    END LOOP;
END$$;

-- expect: primary write
CREATE FUNCTION dup(int) RETURNS TABLE(f1 int, f2 text)
    AS $$ SELECT $1, CAST($1 AS text) || ' is text' $$
    LANGUAGE SQL;

-- expect: primary write
CREATE OR REPLACE FUNCTION increment(i integer) RETURNS integer AS $body$
        BEGIN
                RETURN i + 1;
        END;
$body$ LANGUAGE plpgsql;
