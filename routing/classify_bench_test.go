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

func BenchmarkClassify(b *testing.B) {
	for _, bc := range []struct {
		name string
		q    string
		d    Dialect
	}{
		{"select200/postgres", benchSelect, DialectPostgres},
		{"select200/mysql", strings.ReplaceAll(strings.ReplaceAll(benchSelect, `"`, "`"), "$1", "?"), DialectMySQL},
		{"select200/generic", benchSelect, DialectGeneric},
		{"insert/postgres", benchInsert, DialectPostgres},
		{"select10k/postgres", benchLong, DialectPostgres},
		{"select10k/generic", benchLong, DialectGeneric},
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
