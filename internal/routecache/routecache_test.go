package routecache

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"testing"

	"github.com/rwpool/rwpool/routing"
)

const (
	// benchSelect is a typical ORM read of about 200 bytes with a leading
	// comment.
	benchSelect = `/* app:api,route:/users */ SELECT "users"."id", "users"."name", "users"."email" ` +
		`FROM "users" WHERE "users"."org_id" = $1 AND "users"."deleted_at" IS NULL ` +
		`ORDER BY "users"."id" LIMIT 50`
	benchInsert = `INSERT INTO "users" ("name","email") VALUES ($1,$2) RETURNING "id"`
)

var mysqlSelect = strings.ReplaceAll(strings.ReplaceAll(benchSelect, `"`, "`"), "$1", "?")

func TestCacheAgreesWithClassify(t *testing.T) {
	for _, d := range []routing.Dialect{routing.DialectGeneric, routing.DialectPostgres, routing.DialectMySQL} {
		c := New(d, 64) // small: slots are shared and replaced
		qs := []string{benchSelect, benchInsert, "SELECT 1", "SELECT 1 FOR UPDATE", "SET x = 1", "/*rwpool:primary*/ SELECT 1",
			"SELECT nextval('s')", "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", ""}
		for i := range 200 {
			qs = append(qs, fmt.Sprintf("SELECT %d FROM t", i), fmt.Sprintf("UPDATE t SET x = %d", i))
		}
		for round := range 3 {
			for _, q := range qs {
				if got, want := c.Classify(q), routing.Classify(q, d); got != want {
					t.Fatalf("%s round %d: cache says %+v for %q, Classify %+v", d, round, got, q, want)
				}
			}
		}
	}
}

func TestCacheSecondSighting(t *testing.T) {
	c := New(routing.DialectPostgres, 8)
	c.Classify("SELECT 1")
	if c.slots[c.slotOf("SELECT 1")].Load() != nil {
		t.Fatal("a statement seen once was cached")
	}
	c.Classify("SELECT 1")
	if e := c.slots[c.slotOf("SELECT 1")].Load(); e == nil || e.query != "SELECT 1" {
		t.Fatal("a statement seen twice was not cached")
	}
	long := "SELECT " + strings.Repeat("x", MaxLen)
	c.Classify(long)
	c.Classify(long)
	if e := c.slots[c.slotOf(long)].Load(); e != nil && e.query == long {
		t.Fatal("a statement over MaxLen was cached")
	}
	if got := testing.AllocsPerRun(100, func() { c.Classify("SELECT 1") }); got != 0 {
		t.Errorf("a hit allocates %v times", got)
	}
	n := 0
	if got := testing.AllocsPerRun(100, func() { n++; c.Classify(fmt.Sprint("SELECT ", n)) }); got > 2 {
		t.Errorf("one-off statements allocate %v times each (the test's Sprint is 2)", got)
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := New(routing.DialectMySQL, 4)
	qs := []string{"SELECT 1", "INSERT INTO t VALUES (1)", "SELECT 1 FOR UPDATE", "SET @x = 1", "SELECT 2"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				q := qs[(i+g)%len(qs)]
				if got, want := c.Classify(q), routing.Classify(q, routing.DialectMySQL); got != want {
					t.Errorf("%q: %+v, want %+v", q, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func (c *Cache) slotOf(q string) uint64 { return maphash.String(c.seed, q) & c.mask }

func BenchmarkCacheHit(b *testing.B) {
	for _, bc := range []struct {
		name string
		q    string
		d    routing.Dialect
	}{
		{"select200_comment/postgres", benchSelect, routing.DialectPostgres},
		{"select200_comment/mysql", mysqlSelect, routing.DialectMySQL},
		{"insert/postgres", benchInsert, routing.DialectPostgres},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := New(bc.d, 1024)
			c.Classify(bc.q)
			c.Classify(bc.q)
			// A copy with the same text: a statement an ORM builds anew
			// each time, not the very string the cache holds.
			q := strings.Clone(bc.q)
			b.ReportAllocs()
			for b.Loop() {
				c.Classify(q)
			}
		})
	}
}

// FuzzCache checks that a cached Decision is always the one Classify
// gives, for any statement seen any number of times.
func FuzzCache(f *testing.F) {
	f.Add("SELECT 1", "INSERT INTO t VALUES (1)")
	f.Add(benchSelect, "SELECT 1 FOR UPDATE")
	c := New(routing.DialectPostgres, 2) // tiny: constant replacement
	f.Fuzz(func(t *testing.T, a, b string) {
		for range 3 {
			for _, q := range []string{a, b} {
				if got, want := c.Classify(q), routing.Classify(q, routing.DialectPostgres); got != want {
					t.Fatalf("cache %+v, Classify %+v for %q", got, want, q)
				}
			}
		}
	})
}
