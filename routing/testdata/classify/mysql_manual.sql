Statements in the style of the examples of the MySQL and MariaDB manual
pages SELECT, WITH, VALUES, TABLE, INSERT, REPLACE, UPDATE, DELETE, SHOW,
EXPLAIN/DESCRIBE, LOCK TABLES, SET, PREPARE, transactions, locking reads,
SELECT ... INTO, information and locking functions, sequences, and common
DDL/utility statements. Classified with DialectMySQL.

-- expect: replica read
SELECT 1 + 1;

-- expect: replica read
SELECT 1 + 1 FROM DUAL;

-- expect: replica read
SELECT CONCAT(last_name,', ',first_name) AS full_name
  FROM mytable ORDER BY full_name;

-- expect: replica read
SELECT t1.name, t2.salary FROM employee AS t1, info AS t2
  WHERE t1.name = t2.name;

-- expect: replica read
SELECT college, region, seed FROM tournament
  ORDER BY region, seed;

-- expect: replica read
SELECT a, COUNT(b) FROM test_table GROUP BY a ORDER BY NULL;

-- expect: replica read
SELECT * FROM tbl LIMIT 5,10;

-- expect: replica read
SELECT * FROM tbl LIMIT 95,18446744073709551615;

-- expect: replica read
SELECT id, FLOOR(value/100)
  FROM tbl_name
  GROUP BY id, FLOOR(value/100);

-- expect: replica read
SELECT * FROM t1 WHERE column1 = (SELECT column1 FROM t2);

-- expect: replica read
SELECT HIGH_PRIORITY SQL_NO_CACHE STRAIGHT_JOIN DISTINCT a FROM t1 JOIN t2 USING (id);

-- expect: replica read
SELECT /*+ MAX_EXECUTION_TIME(1000) */ * FROM t1 INNER JOIN t2 WHERE t1.a = t2.b;

-- expect: replica read
SELECT /*+ BKA(t1) NO_BKA(t2) */ * FROM t1 INNER JOIN t2 INNER JOIN t3;

-- expect: replica read
SELECT year, country, product, SUM(profit) AS profit
       FROM sales
       GROUP BY year, country, product WITH ROLLUP;

-- expect: primary locking
SELECT * FROM t1 FOR UPDATE;

-- expect: primary locking
SELECT * FROM parent WHERE NAME = 'Jones' FOR SHARE;

-- expect: primary locking
SELECT * FROM t1 WHERE c1 = (SELECT c1 FROM t2) FOR UPDATE;

-- expect: primary locking
SELECT * FROM t1 WHERE c1 = (SELECT c1 FROM t2 FOR UPDATE) FOR UPDATE;

-- expect: primary locking
SELECT * FROM t1 WHERE c1 = (SELECT c1 FROM t2 FOR SHARE);

-- expect: primary locking
SELECT * FROM t1 LOCK IN SHARE MODE;

-- expect: primary locking
SELECT * FROM t WHERE i = 2 FOR UPDATE NOWAIT;

-- expect: primary locking
SELECT id FROM seats WHERE seat_no BETWEEN 2 AND 3 AND booked = 'NO'
  FOR UPDATE SKIP LOCKED;

-- expect: primary locking
SELECT * FROM t1 JOIN t2 ON t1.id = t2.id FOR UPDATE OF t1 FOR SHARE OF t2;

-- expect: primary multi
SELECT counter_field FROM child_codes FOR UPDATE;
UPDATE child_codes SET counter_field = counter_field + 1;

-- expect: primary select-into
SELECT * FROM t1 INTO OUTFILE '/tmp/select-test.txt';

-- expect: primary select-into
SELECT a,b,a+b INTO OUTFILE '/tmp/result.txt'
  FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"'
  LINES TERMINATED BY '\n'
  FROM test_table;

-- expect: primary select-into
SELECT * FROM t1 INTO DUMPFILE '/tmp/dump.bin';

-- expect: primary select-into +session
SELECT id, data INTO @x, @y FROM test.t1 LIMIT 1;

-- expect: primary locking +session
SELECT * FROM t1 FOR UPDATE INTO @myvar;

-- expect: primary session-func
SELECT SQL_CALC_FOUND_ROWS * FROM tbl_name
  WHERE id > 100 LIMIT 10;

-- expect: previous diagnostics
SELECT FOUND_ROWS();

-- expect: primary session-func
SELECT LAST_INSERT_ID();

-- expect: primary session-func
SELECT LAST_INSERT_ID(42);

-- expect: primary write
UPDATE sequence SET id=LAST_INSERT_ID(id+1);

-- expect: previous diagnostics
SELECT ROW_COUNT();

-- expect: primary lock-func +session
SELECT GET_LOCK('lock1',10);

-- expect: primary lock-func +session
SELECT RELEASE_LOCK('lock1');

-- expect: primary lock-func +session
SELECT RELEASE_ALL_LOCKS();

-- expect: primary lock-func
SELECT IS_FREE_LOCK('lock1');

-- expect: primary lock-func
SELECT IS_USED_LOCK('lock1');

-- expect: primary write +session
DO RELEASE_LOCK('lock1');

-- expect: replica read
SELECT SLEEP(1);

-- expect: replica read
SELECT CONNECTION_ID();

-- expect: replica read
SELECT UUID(), NOW(), DATABASE(), USER(), VERSION();

-- expect: replica read
SELECT @@version;

-- expect: replica read
SELECT @@SESSION.sql_mode;

-- expect: replica read
SELECT @@GLOBAL.max_connections, @@session.autocommit, @@transaction_isolation;

-- expect: primary user-var +session
SELECT @t1, @t2, @t3, @t4 := @t1+@t2+@t3;

-- expect: primary session +session
SET @t1=1, @t2=2, @t3:=4;

-- expect: replica read
WITH cte1 AS (SELECT a, b FROM table1),
     cte2 AS (SELECT c, d FROM table2)
SELECT b, d FROM cte1 JOIN cte2
WHERE cte1.a = cte2.c;

-- expect: replica read
WITH RECURSIVE cte (n) AS
(
  SELECT 1
  UNION ALL
  SELECT n + 1 FROM cte WHERE n < 5
)
SELECT * FROM cte;

-- expect: replica read
WITH RECURSIVE fibonacci (n, fib_n, next_fib_n) AS
(
  SELECT 1, 0, 1
  UNION ALL
  SELECT n + 1, next_fib_n, fib_n + next_fib_n
    FROM fibonacci WHERE n < 10
)
SELECT * FROM fibonacci;

-- expect: primary writing-cte
WITH cte AS (SELECT id, 2 * price AS p FROM products)
UPDATE products, cte SET products.price = cte.p WHERE products.id = cte.id;

-- expect: primary writing-cte
WITH old AS (SELECT id FROM logs WHERE created < NOW() - INTERVAL 30 DAY)
DELETE FROM logs WHERE id IN (SELECT id FROM old);

-- expect: replica read
VALUES ROW(1,-2,3), ROW(5,7,9), ROW(4,6,8);

-- expect: replica read
VALUES ROW(1,2), ROW(3,4) ORDER BY column_0 DESC LIMIT 1;

-- expect: replica read
TABLE t ORDER BY c LIMIT 10 OFFSET 3;

-- expect: primary write
INSERT INTO tbl_name (a,b,c) VALUES(1,2,3),(4,5,6),(7,8,9);

-- expect: primary write
INSERT INTO t1 (a,b,c) VALUES (1,2,3)
  ON DUPLICATE KEY UPDATE c=c+1;

-- expect: primary write
INSERT INTO t1 (a,b,c) VALUES (1,2,3),(4,5,6) AS new
  ON DUPLICATE KEY UPDATE c = new.a+new.b;

-- expect: primary write
INSERT IGNORE INTO t1 SET a=1, b=2, c=3;

-- expect: primary write
INSERT INTO ta TABLE tb;

-- expect: primary write
INSERT INTO tbl_temp2 (fld_id)
  SELECT tbl_temp1.fld_order_id
  FROM tbl_temp1 WHERE tbl_temp1.fld_order_id > 100;

-- expect: primary write
REPLACE INTO test VALUES (1, 'Old', '2014-08-20 18:47:00');

-- expect: primary write
UPDATE t1 SET col1 = col1 + 1, col2 = col1;

-- expect: primary write
UPDATE items,month SET items.price=month.price
WHERE items.id=month.id;

-- expect: primary write
UPDATE t SET id = id + 1 ORDER BY id DESC;

-- expect: primary write
DELETE FROM somelog WHERE user = 'jcole'
ORDER BY timestamp_column LIMIT 1;

-- expect: primary write
DELETE t1, t2 FROM t1 INNER JOIN t2 INNER JOIN t3
WHERE t1.id=t2.id AND t2.id=t3.id;

-- expect: primary write
DELETE FROM t1, t2 USING t1 INNER JOIN t2 INNER JOIN t3
WHERE t1.id=t2.id AND t2.id=t3.id;

-- expect: replica read
SHOW TABLES;

-- expect: replica read
SHOW DATABASES LIKE 'shop%';

-- expect: replica read
SHOW CREATE TABLE t\G

-- expect: replica read
SHOW COLUMNS FROM City;

-- expect: replica read
SHOW FULL PROCESSLIST;

-- expect: replica read
SHOW VARIABLES LIKE 'max_join_size';

-- expect: replica read
SHOW SESSION STATUS LIKE 'Ssl_cipher';

-- expect: previous diagnostics
SHOW WARNINGS;

-- expect: previous diagnostics
SHOW COUNT(*) ERRORS;

-- expect: replica read
SHOW INDEX FROM City FROM world;

-- expect: replica read
SHOW GRANTS FOR 'jeffrey'@'localhost';

-- expect: replica read
SHOW ENGINE INNODB STATUS;

-- expect: replica read
SHOW REPLICA STATUS;

-- expect: replica read
SHOW BINARY LOG STATUS;

-- expect: replica explain
DESCRIBE City;

-- expect: replica explain
DESC City;

-- expect: replica explain
DESCRIBE City Name;

-- expect: replica explain
EXPLAIN City;

-- expect: replica explain
EXPLAIN SELECT * FROM t1 JOIN t2 ON t1.a = t2.a;

-- expect: replica explain
EXPLAIN FORMAT=JSON SELECT * FROM t1;

-- expect: replica explain
EXPLAIN FORMAT=TREE SELECT * FROM t1 WHERE a > 1;

-- expect: replica explain
DESCRIBE SELECT * FROM t1;

-- expect: replica explain
EXPLAIN FOR CONNECTION 4;

-- expect: replica explain
EXPLAIN UPDATE t1 SET a = 1 WHERE b = 2;

-- expect: primary explain-analyze
EXPLAIN ANALYZE SELECT * FROM t1 JOIN t2 ON (t1.c1 = t2.c2);

-- expect: primary explain-analyze
EXPLAIN ANALYZE FORMAT=TREE SELECT * FROM t3 WHERE pk > 17;

-- expect: primary explain-analyze
DESCRIBE ANALYZE SELECT * FROM t1;

-- expect: primary session +session
LOCK TABLES t1 READ;

-- expect: primary session +session
LOCK TABLES t WRITE, t AS t1 READ;

-- expect: primary session +session
UNLOCK TABLES;

-- expect: primary session +session
LOCK INSTANCE FOR BACKUP;

-- expect: primary session +session
UNLOCK INSTANCE;

-- expect: primary session +session
FLUSH TABLES WITH READ LOCK;

-- expect: primary session +session
FLUSH TABLES t1, t2 WITH READ LOCK;

-- expect: primary write
FLUSH PRIVILEGES;

-- expect: primary session +session
SET NAMES utf8mb4;

-- expect: primary session +session
SET NAMES 'utf8mb4' COLLATE 'utf8mb4_unicode_ci';

-- expect: primary session +session
SET CHARACTER SET utf8mb4;

-- expect: primary session +session
SET autocommit = 0;

-- expect: primary session +session
SET SESSION sql_mode = 'TRADITIONAL';

-- expect: primary session +session
SET GLOBAL max_connections = 1000;

-- expect: primary session +session
SET @@SESSION.max_join_size = DEFAULT;

-- expect: primary session +session
SET PERSIST max_connections = 1000;

-- expect: primary session +session
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;

-- expect: primary session +session
SET time_zone = '+00:00';

-- expect: primary session +session
USE db1;

-- expect: primary session +session
PREPARE stmt1 FROM 'SELECT SQRT(POW(?,2) + POW(?,2)) AS hypotenuse';

-- expect: primary session +session
EXECUTE stmt1 USING @a, @b;

-- expect: primary session +session
DEALLOCATE PREPARE stmt1;

-- expect: primary session +session
DROP PREPARE stmt1;

-- expect: primary session +session
START TRANSACTION;

-- expect: primary session +session
START TRANSACTION READ ONLY;

-- expect: primary session +session
START TRANSACTION WITH CONSISTENT SNAPSHOT;

-- expect: primary session +session
BEGIN WORK;

-- expect: primary session +session
COMMIT AND NO CHAIN;

-- expect: primary session +session
ROLLBACK;

-- expect: primary session +session
SAVEPOINT a;

-- expect: primary session +session
ROLLBACK TO SAVEPOINT a;

-- expect: primary session +session
RELEASE SAVEPOINT a;

-- expect: primary session +session
XA START 'xatest';

-- expect: primary session +session
HANDLER t1 OPEN;

-- expect: previous diagnostics
GET DIAGNOSTICS @cno = NUMBER;

-- expect: primary session +session
CREATE TEMPORARY TABLE new_tbl SELECT * FROM orig_tbl LIMIT 0;

-- expect: primary session +session
CREATE TEMPORARY TABLE IF NOT EXISTS t_tmp (id INT);

-- expect: primary session +session
DROP TEMPORARY TABLE IF EXISTS new_tbl;

-- expect: primary write
CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(255)) ENGINE=InnoDB;

-- expect: primary write
ALTER TABLE t2 DROP COLUMN c, DROP COLUMN d;

-- expect: primary write
TRUNCATE TABLE t;

-- expect: primary write
RENAME TABLE old_table TO new_table;

-- expect: primary write +session
CALL p(@x);

-- expect: primary write
CALL simpleproc();

-- expect: primary write
LOAD DATA INFILE 'data.txt' INTO TABLE db2.my_table;

-- expect: primary write
KILL QUERY 12;

-- expect: primary write
ANALYZE TABLE t;

-- expect: primary write
OPTIMIZE TABLE t;

-- expect: primary write
CHECK TABLE t;

-- expect: primary write
GRANT SELECT ON db.* TO 'jeffrey'@'localhost';

-- expect: primary write
CREATE USER 'jeffrey'@'localhost' IDENTIFIED BY 'password';

-- expect: primary write
CREATE SEQUENCE s START WITH 100 INCREMENT BY 10;

-- expect: primary session-func
SELECT NEXTVAL(s);

-- expect: primary session-func
SELECT NEXT VALUE FOR s;

-- expect: primary session-func
SELECT PREVIOUS VALUE FOR s;

-- expect: primary session-func
SELECT LASTVAL(s);

-- expect: primary session-func
SELECT SETVAL(s, 100);

-- expect: primary write
INSERT INTO t1 VALUES (NEXT VALUE FOR s, 'x');

-- expect: replica read
SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2016-10-09 08:07:06';
