SQL as gorm, sqlx, sqlc, pgx and lib/pq users send it to PostgreSQL:
quoted identifiers, $n placeholders, RETURNING, soft deletes, clause.Locking,
savepoints of nested transactions, migrator introspection. DialectPostgres.

-- expect: replica read
SELECT * FROM "users" WHERE "users"."deleted_at" IS NULL ORDER BY "users"."id" LIMIT 1

-- expect: replica read
SELECT * FROM "users" WHERE id = $1 AND "users"."deleted_at" IS NULL ORDER BY "users"."id" LIMIT $2

-- expect: replica read
SELECT * FROM "users" WHERE name = $1 AND "users"."deleted_at" IS NULL

-- expect: replica read
SELECT count(*) FROM "users" WHERE name = $1 AND "users"."deleted_at" IS NULL

-- expect: replica read
SELECT "users"."id","users"."name","users"."company_id","Company"."id" AS "Company__id","Company"."name" AS "Company__name" FROM "users" LEFT JOIN "companies" "Company" ON "users"."company_id" = "Company"."id" WHERE "users"."deleted_at" IS NULL

-- expect: replica read
SELECT * FROM "orders" WHERE "orders"."user_id" IN ($1,$2,$3) AND "orders"."deleted_at" IS NULL

-- expect: replica read
SELECT * FROM "users" WHERE "users"."deleted_at" IS NULL AND (("name" = $1 AND "age" >= $2) OR "email" LIKE $3) ORDER BY "created_at" desc LIMIT 10 OFFSET 20

-- expect: primary write
INSERT INTO "users" ("name","created_at") VALUES ($1,$2) RETURNING "id"

-- expect: primary write
INSERT INTO "users" ("created_at","updated_at","deleted_at","name","email","age") VALUES ($1,$2,$3,$4,$5,$6),($7,$8,$9,$10,$11,$12) RETURNING "id"

-- expect: primary write
INSERT INTO "users" ("created_at","updated_at","deleted_at","name") VALUES ($1,$2,$3,$4) ON CONFLICT ("id") DO UPDATE SET "name"="excluded"."name" RETURNING "id"

-- expect: primary write
INSERT INTO "languages" ("code","name") VALUES ($1,$2) ON CONFLICT DO NOTHING RETURNING "code"

-- expect: primary write
UPDATE "users" SET "name"=$1,"updated_at"=$2 WHERE "users"."deleted_at" IS NULL AND "id" = $3

-- expect: primary write
UPDATE "users" SET "deleted_at"=$1 WHERE "users"."id" = $2 AND "users"."deleted_at" IS NULL

-- expect: primary write
UPDATE "products" SET "price"=price * $1 + $2,"updated_at"=$3 WHERE "products"."deleted_at" IS NULL AND "id" = $4

-- expect: primary write
DELETE FROM "users" WHERE "users"."id" = $1

-- expect: primary locking
SELECT * FROM "users" WHERE "users"."id" = $1 AND "users"."deleted_at" IS NULL ORDER BY "users"."id" LIMIT $2 FOR UPDATE

-- expect: primary locking
SELECT * FROM "users" WHERE "users"."deleted_at" IS NULL FOR SHARE OF "users"

-- expect: primary locking
SELECT * FROM "jobs" WHERE "state" = $1 ORDER BY "id" LIMIT 1 FOR UPDATE SKIP LOCKED

-- expect: primary locking
SELECT * FROM "users" FOR UPDATE NOWAIT

-- expect: primary session +session
SAVEPOINT sp0xc0001a2b40

-- expect: primary session +session
ROLLBACK TO SAVEPOINT sp0xc0001a2b40

-- expect: primary session +session
SAVEPOINT sp1

-- expect: primary session +session
RELEASE SAVEPOINT sp1

-- expect: replica read
SELECT CURRENT_DATABASE()

-- expect: replica read
SELECT count(*) FROM information_schema.tables WHERE table_schema = CURRENT_SCHEMA() AND table_name = $1 AND table_type = $2

-- expect: replica read
SELECT description FROM pg_catalog.pg_description WHERE objsubid = (SELECT ordinal_position FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = $3) AND objoid = (SELECT oid FROM pg_catalog.pg_class WHERE relname = $4 AND relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $5))

-- expect: replica read
SELECT c.column_name, c.is_nullable = 'YES', c.udt_name, c.character_maximum_length, c.numeric_precision, c.numeric_precision_radix, c.numeric_scale, c.datetime_precision, 8 * typlen, c.column_default, pd.description, c.identity_increment FROM information_schema.columns AS c JOIN pg_type AS pgt ON c.udt_name = pgt.typname LEFT JOIN pg_catalog.pg_description as pd ON pd.objsubid = c.ordinal_position AND pd.objoid = (SELECT oid FROM pg_catalog.pg_class WHERE relname = c.table_name AND relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = c.table_schema)) where table_catalog = $1 AND table_schema = $2 AND table_name = $3

-- expect: primary write
CREATE TABLE "users" ("id" bigserial,"created_at" timestamptz,"updated_at" timestamptz,"deleted_at" timestamptz,"name" text,PRIMARY KEY ("id"))

-- expect: primary write
CREATE INDEX IF NOT EXISTS "idx_users_deleted_at" ON "users" ("deleted_at")

-- expect: primary write
ALTER TABLE "users" ADD "age" bigint

-- expect: replica read
SELECT * FROM person WHERE first_name=$1

-- expect: replica read
SELECT * FROM place ORDER BY telcode ASC

-- expect: replica read
SELECT COUNT(*) FROM place

-- expect: primary write
INSERT INTO person (first_name, last_name, email) VALUES (:first_name, :last_name, :email)

-- expect: primary write
INSERT INTO person (first_name, last_name, email) VALUES ($1, $2, $3)

-- expect: replica read
select id, name, weight from widgets where id=$1

-- expect: replica read
-- name: GetAuthor :one
SELECT id, name, bio FROM authors
WHERE id = $1 LIMIT 1

-- expect: replica read
-- name: ListAuthors :many
SELECT id, name, bio FROM authors
ORDER BY name

-- expect: primary write
-- name: CreateAuthor :one
INSERT INTO authors (
  name, bio
) VALUES (
  $1, $2
)
RETURNING id, name, bio

-- expect: primary write
-- name: DeleteAuthor :exec
DELETE FROM authors
WHERE id = $1

-- expect: primary locking
-- name: LockAccount :one
SELECT * FROM accounts WHERE id = $1 LIMIT 1 FOR NO KEY UPDATE

-- expect: replica read
/* controller='users',action='index',framework='gorm' */ SELECT * FROM "users" LIMIT 20

-- expect: replica read
SELECT * FROM "users" LIMIT 20 /*traceparent='00-5bd66ef5095369c7b0d1f8f4bd33716a-c532cb4098ac3dd2-01'*/

-- expect: replica read
SELECT EXISTS(SELECT 1 FROM "users" WHERE "email" = $1)

-- expect: primary write
INSERT INTO "sessions" ("token","user_id","expires_at") VALUES ($1,$2,$3)

-- expect: primary write
INSERT INTO "schema_migrations" (version, dirty) VALUES ($1, $2)

-- expect: primary session +session
SET TIME ZONE 'UTC'

-- expect: primary session +session
SET application_name = 'api-server'
