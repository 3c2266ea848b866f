package routing

import (
	"strings"
	"testing"
)

// benchSelect is a typical ORM read of about 200 bytes with a leading
// comment.
const benchSelect = `/* app:api,route:/users */ SELECT "users"."id", "users"."name", "users"."email" ` +
	`FROM "users" WHERE "users"."org_id" = $1 AND "users"."deleted_at" IS NULL ` +
	`ORDER BY "users"."id" LIMIT 50`

const benchInsert = `INSERT INTO "users" ("name","email") VALUES ($1,$2) RETURNING "id"`

// benchLong is a SELECT of about 10 KB, to check the cost is linear.
var benchLong = func() string {
	var b strings.Builder
	b.WriteString(`SELECT "t"."id"`)
	for i := 0; b.Len() < 10_000; i++ {
		b.WriteString(`, "t"."column_with_a_long_name" + 'string literal' /* comment */`)
	}
	b.WriteString(` FROM "t" WHERE "t"."id" = $1`)
	return b.String()
}()

// ormSelect builds an ORM-style read of about size bytes: a leading
// comment, a column list grown to fit, WHERE, ORDER BY and LIMIT. Only the
// column list grows, so ns/B across sizes shows whether the cost is linear.
func ormSelect(size int) string {
	cols := []string{"id", "org_id", "name", "email", "created_at", "updated_at", "last_login_at", "status"}
	tail := ` FROM "users" WHERE "users"."org_id" = $1 AND "users"."deleted_at" IS NULL ORDER BY "users"."id" LIMIT 50`
	var b strings.Builder
	b.WriteString(`/* app:api,route:/users */ SELECT "users"."id"`)
	for i := 1; b.Len()+len(tail) < size; i++ {
		b.WriteString(`, "users"."` + cols[i%len(cols)] + `"`)
	}
	b.WriteString(tail)
	return b.String()
}

// mysqlQuoting turns an ormSelect statement into its MySQL form.
func mysqlQuoting(q string) string {
	return strings.ReplaceAll(strings.ReplaceAll(q, `"`, "`"), "$1", "?")
}

func BenchmarkClassify(b *testing.B) {
	for _, bc := range []struct {
		name string
		q    string
		d    Dialect
	}{
		{"select200/postgres", benchSelect, DialectPostgres},
		{"select200/mysql", mysqlQuoting(benchSelect), DialectMySQL},
		{"select200/generic", benchSelect, DialectGeneric},
		{"insert/postgres", benchInsert, DialectPostgres},
		{"select10k/postgres", benchLong, DialectPostgres},
		{"select10k/generic", benchLong, DialectGeneric},
		{"select200_comment/postgres", ormSelect(200), DialectPostgres},
		{"select200_comment/mysql", mysqlQuoting(ormSelect(200)), DialectMySQL},
		{"select200_comment/generic", ormSelect(200), DialectGeneric},
		{"select2k_comment/postgres", ormSelect(2_000), DialectPostgres},
		{"select20k_comment/postgres", ormSelect(20_000), DialectPostgres},
		{"select20k_comment/mysql", mysqlQuoting(ormSelect(20_000)), DialectMySQL},
		{"select20k_comment/generic", ormSelect(20_000), DialectGeneric},
	} {
		want := Classify(bc.q, bc.d)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.q)))
			for i := 0; i < b.N; i++ {
				if Classify(bc.q, bc.d) != want {
					b.Fatal("verdict changed")
				}
			}
		})
	}
}
