SQL as gorm, sqlx and go-sql-driver/mysql users send it to MySQL:
backticked identifiers, ? placeholders, interpolated parameters with
backslash escapes, soft deletes, clause.Locking, nested-transaction
savepoints, migrator introspection, driver connection setup.
DialectMySQL.

-- expect: replica read
SELECT * FROM `users` WHERE `users`.`deleted_at` IS NULL ORDER BY `users`.`id` LIMIT 1

-- expect: replica read
SELECT * FROM `users` WHERE name = ? AND `users`.`deleted_at` IS NULL ORDER BY `users`.`id` LIMIT ?

-- expect: replica read
SELECT count(*) FROM `users` WHERE `users`.`deleted_at` IS NULL

-- expect: replica read
SELECT `users`.`id`,`users`.`name`,`Company`.`id` AS `Company__id`,`Company`.`name` AS `Company__name` FROM `users` LEFT JOIN `companies` `Company` ON `users`.`company_id` = `Company`.`id` WHERE `users`.`deleted_at` IS NULL

-- expect: replica read
SELECT * FROM `orders` WHERE `orders`.`user_id` IN (?,?,?) AND `orders`.`deleted_at` IS NULL

-- expect: primary write
INSERT INTO `users` (`created_at`,`updated_at`,`deleted_at`,`name`,`age`) VALUES (?,?,?,?,?)

-- expect: primary write
INSERT INTO `users` (`created_at`,`updated_at`,`deleted_at`,`name`,`age`) VALUES (?,?,?,?,?),(?,?,?,?,?)

-- expect: primary write
INSERT INTO `users` (`name`,`age`) VALUES (?,?) ON DUPLICATE KEY UPDATE `name`=VALUES(`name`),`age`=VALUES(`age`)

-- expect: primary write
UPDATE `users` SET `name`=?,`updated_at`=? WHERE `users`.`deleted_at` IS NULL AND `id` = ?

-- expect: primary write
UPDATE `users` SET `deleted_at`=? WHERE `users`.`id` = ? AND `users`.`deleted_at` IS NULL

-- expect: primary write
DELETE FROM `users` WHERE `users`.`id` = ?

-- expect: primary locking
SELECT * FROM `users` WHERE `users`.`id` = ? AND `users`.`deleted_at` IS NULL ORDER BY `users`.`id` LIMIT ? FOR UPDATE

-- expect: primary locking
SELECT * FROM `users` WHERE `users`.`deleted_at` IS NULL FOR SHARE NOWAIT

-- expect: primary locking
SELECT * FROM `accounts` WHERE `id` = ? LOCK IN SHARE MODE

-- expect: primary session +session
SAVEPOINT sp0xc0001b6000

-- expect: primary session +session
ROLLBACK TO SAVEPOINT sp0xc0001b6000

-- expect: replica read
SELECT DATABASE()

-- expect: replica read
SELECT SCHEMA_NAME from Information_schema.SCHEMATA where SCHEMA_NAME LIKE ? ORDER BY SCHEMA_NAME=? DESC,SCHEMA_NAME limit 1

-- expect: replica read
SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ? AND table_type = ?

-- expect: replica read
SELECT column_name, column_default, is_nullable = 'YES', data_type, character_maximum_length, column_type, column_key, extra, column_comment, numeric_precision, numeric_scale , datetime_precision FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ORDINAL_POSITION

-- expect: primary write
CREATE TABLE `users` (`id` bigint unsigned AUTO_INCREMENT,`created_at` datetime(3) NULL,`updated_at` datetime(3) NULL,`deleted_at` datetime(3) NULL,`name` longtext,PRIMARY KEY (`id`),INDEX `idx_users_deleted_at` (`deleted_at`))

-- expect: primary write
ALTER TABLE `users` ADD `age` bigint unsigned

-- expect: replica read
SELECT * FROM users WHERE name = 'O\'Brien' AND note = '\\' AND id = 42

-- expect: replica read
SELECT * FROM users WHERE bio = 'line\nbreak; DELETE FROM users; \' --'

-- expect: primary write
INSERT INTO `notes` (`body`) VALUES ('it\'s \"quoted\"; DROP TABLE notes; --')

-- expect: primary session +session
SET NAMES utf8mb4

-- expect: primary session +session
SET NAMES utf8mb4 COLLATE utf8mb4_general_ci

-- expect: replica read
SELECT @@max_allowed_packet

-- expect: replica read
SELECT @@transaction_isolation

-- expect: primary session +session
SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED

-- expect: replica read
SELECT * FROM person WHERE first_name=?

-- expect: primary write
INSERT INTO person (first_name,last_name,email) VALUES (?, ?, ?)

-- expect: replica read
SELECT * FROM users WHERE id IN (?, ?, ?)

-- expect: replica read
/* request_id=8f14e45f */ SELECT `id` FROM `products` WHERE `sku` = ?

-- expect: primary write
UPDATE `products` SET `stock`=stock - ?,`updated_at`=? WHERE `id` = ? AND `stock` >= ?

-- expect: primary multi
INSERT INTO `audit` (`event`) VALUES (?); SELECT LAST_INSERT_ID()
