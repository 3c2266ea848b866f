Functions that run SQL text they are given, which may write: dblink's
executing functions (contrib dblink), the XML mapping functions
query_to_xml*, the text search functions ts_stat and ts_rewrite, crosstab
(contrib tablefunc). dblink's connection functions and cursor_to_xml use
session state. Classified with DialectPostgres.

-- expect: primary exec-func +session
SELECT * FROM dblink('dbname=shop', 'SELECT id, name FROM users') AS t(id int, name text)

-- expect: primary exec-func +session
SELECT dblink_exec('dbname=shop', 'INSERT INTO audit VALUES (1)')

-- expect: primary exec-func +session
SELECT dblink_exec('myconn', 'UPDATE t SET x = 1', false)

-- expect: primary exec-func +session
SELECT dblink_open('myconn', 'foo', 'SELECT proname FROM pg_proc')

-- expect: primary exec-func +session
SELECT * FROM dblink_fetch('foo', 5) AS (funcname name)

-- expect: primary exec-func +session
SELECT dblink_close('myconn', 'foo')

-- expect: primary exec-func +session
SELECT dblink_send_query('dtest1', 'SELECT * FROM foo WHERE f1 < 3')

-- expect: primary exec-func +session
SELECT * FROM dblink_get_result('dtest1') AS t1(f1 int, f2 text, f3 text[])

-- expect: primary exec-func +session
SELECT * FROM public.dblink('host=db2 dbname=shop', 'DELETE FROM carts RETURNING id') AS d(id int)

-- expect: primary exec-func +session
SELECT * FROM "dblink"('dbname=shop', 'SELECT 1') AS t(x int)

-- expect: primary session-func +session
SELECT dblink_connect('myconn', 'dbname=postgres options=-csearch_path=')

-- expect: primary session-func +session
SELECT dblink_connect_u('myconn', 'dbname=postgres')

-- expect: primary session-func +session
SELECT dblink_disconnect('myconn')

-- expect: primary session-func +session
SELECT dblink_get_connections()

-- expect: primary session-func +session
SELECT dblink_is_busy('dtest1')

-- expect: primary session-func +session
SELECT * FROM dblink_get_notify('myconn')

-- expect: primary session-func +session
SELECT dblink_cancel_query('dtest1')

-- expect: primary session-func +session
SELECT dblink_error_message('dtest1')

-- expect: replica read
SELECT dblink_build_sql_insert('foo', '1 2', 2, '{"0", "a"}', '{"99", "xyz"}')

-- expect: replica read
SELECT * FROM dblink_get_pkey('foo')

-- expect: primary exec-func
SELECT query_to_xml('SELECT * FROM orders WHERE id < 10', true, false, '')

-- expect: primary exec-func
SELECT query_to_xmlschema('SELECT nextval(''s'')', true, false, '')

-- expect: primary exec-func
SELECT query_to_xml_and_xmlschema('SELECT 1', false, true, '')

-- expect: replica read
SELECT table_to_xml('orders', true, false, ''), schema_to_xml('public', true, false, '')

-- expect: primary session-func +session
SELECT cursor_to_xml('c1'::refcursor, 10, true, false, '')

-- expect: primary session-func +session
SELECT cursor_to_xmlschema('c1'::refcursor, true, false, '')

-- expect: primary exec-func
SELECT * FROM ts_stat('SELECT vector FROM apod') ORDER BY nentry DESC, ndoc DESC, word LIMIT 10

-- expect: primary exec-func
SELECT ts_rewrite('a & b'::tsquery, 'SELECT t, s FROM aliases')

-- expect: primary exec-func
SELECT ts_rewrite('a & b'::tsquery, 'a'::tsquery, 'c'::tsquery)

-- expect: primary exec-func
SELECT * FROM crosstab('SELECT rowid, attribute, value FROM ct ORDER BY 1, 2') AS ct(row_name text, a1 text, a2 text)

-- expect: primary exec-func
SELECT * FROM crosstab3('SELECT rowid, rowdt, attribute, val FROM ct ORDER BY 1')

-- expect: primary exec-func
SELECT * FROM crosstab_float8_5_cols('SELECT 1')

-- expect: replica read
SELECT 'dblink(' AS doc, dblink_count, query_to_xml_note FROM docs

-- expect: primary write +session
INSERT INTO mirror SELECT * FROM dblink('dbname=shop', 'SELECT id FROM t') AS t(id int)

-- expect: replica explain
EXPLAIN SELECT * FROM dblink('dbname=shop', 'DELETE FROM t') AS t(id int)

-- expect: primary locking +session
SELECT * FROM dblink('dbname=shop', 'SELECT 1') AS t(x int) FOR UPDATE
