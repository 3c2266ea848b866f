package rwpool_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/rwpool/rwpool"
)

// mixStatement is one statement of the mix and how it is run.
type mixStatement struct {
	q     string
	write bool // ExecContext; else QueryContext and read the rows
}

// mixRepeated are the statements an application repeats: an ORM's reads
// and writes with placeholders, of varying shapes and lengths (8 B to
// 1.3 KB), plain reads for the most part as in most applications.
var mixRepeated = func() []mixStatement {
	cols := []string{"id", "org_id", "name", "email", "status", "created_at", "updated_at", "last_login_at", "plan", "locale"}
	colList := func(table string, n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `"%s"."%s"`, table, cols[i%len(cols)])
		}
		return b.String()
	}
	var ss []mixStatement
	read := func(q string) { ss = append(ss, mixStatement{q: q}) }
	write := func(q string) { ss = append(ss, mixStatement{q: q, write: true}) }
	for i, table := range []string{"users", "orgs", "orders", "invoices", "products", "carts", "sessions", "events"} {
		read(`SELECT ` + colList(table, 3+i) + ` FROM "` + table + `" WHERE "` + table + `"."id" = $1 LIMIT 1`)
		read(`/* app:api,route:/` + table + ` */ SELECT ` + colList(table, 6+2*i) + ` FROM "` + table +
			`" WHERE "` + table + `"."org_id" = $1 AND "` + table + `"."deleted_at" IS NULL ORDER BY "` + table + `"."id" LIMIT 50`)
		read(`SELECT count(*) FROM "` + table + `" WHERE "org_id" = $1`)
	}
	read(`SELECT 1`)
	read(`SELECT u.id, u.name, o.name AS org FROM users u JOIN orgs o ON o.id = u.org_id WHERE u.email = $1`)
	read(`WITH recent AS (SELECT user_id, max(created_at) AS at FROM events WHERE created_at > $1 GROUP BY user_id) ` +
		`SELECT u.id, u.name, r.at FROM users u JOIN recent r ON r.user_id = u.id ORDER BY r.at DESC LIMIT 100`)
	read(`SELECT p.id, p.name, p.price, coalesce(sum(oi.qty), 0) AS sold FROM products p ` +
		`LEFT JOIN order_items oi ON oi.product_id = p.id AND oi.created_at >= $1 ` +
		`WHERE p.org_id = $2 GROUP BY p.id, p.name, p.price HAVING coalesce(sum(oi.qty), 0) > $3 ORDER BY sold DESC LIMIT 20`)
	read(`SELECT ` + colList("orders", 60) + ` FROM "orders" WHERE "orders"."org_id" = $1 AND "orders"."status" = ANY($2) ORDER BY "orders"."created_at" DESC LIMIT 200`)
	read(`SELECT id FROM jobs WHERE queue = $1 AND run_at <= now() ORDER BY run_at LIMIT 10`)
	read(`SELECT EXISTS (SELECT 1 FROM memberships WHERE user_id = $1 AND org_id = $2)`)
	read(`SELECT "settings"."value" FROM "settings" WHERE "settings"."key" = $1`)
	read(`SELECT o.id, o.total, o.status, i.sku, i.qty FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.id = ANY($1)`)
	write(`INSERT INTO "events" ("org_id","user_id","kind","payload","created_at") VALUES ($1,$2,$3,$4,$5) RETURNING "id"`)
	write(`UPDATE "users" SET "last_login_at" = $1, "updated_at" = $1 WHERE "id" = $2`)
	write(`UPDATE "carts" SET "items" = $1, "updated_at" = now() WHERE "id" = $2 AND "version" = $3`)
	write(`DELETE FROM "sessions" WHERE "expires_at" < $1`)
	write(`INSERT INTO "order_items" ("order_id","sku","qty","price") VALUES ($1,$2,$3,$4)`)
	write(`INSERT INTO audit_log (actor, action, target, at) VALUES ($1, $2, $3, now())`)
	return ss
}()

// mixOneOff returns n statements with their values inlined, each seen
// once: reports and scripts that build SQL text, for the most part reads.
func mixOneOff(n int) []mixStatement {
	ss := make([]mixStatement, n)
	for i := range ss {
		switch i % 5 {
		case 0:
			ss[i] = mixStatement{q: fmt.Sprintf(`SELECT "users"."id", "users"."name", "users"."email" FROM "users" WHERE "users"."org_id" = %d AND "users"."email" = 'user%d@example.com' LIMIT 1`, i%977, i)}
		case 1:
			ss[i] = mixStatement{q: fmt.Sprintf(`/* report */ SELECT date_trunc('day', created_at) AS day, count(*), sum(total) FROM orders WHERE org_id = %d AND created_at >= '2025-01-%02d' AND status IN ('paid', 'shipped') GROUP BY 1 ORDER BY 1`, i%977, 1+i%28)}
		case 2:
			ss[i] = mixStatement{q: fmt.Sprintf(`SELECT * FROM products WHERE id IN (%d, %d, %d, %d) AND name ILIKE '%%item %d%%'`, i, i+1, i+2, i+3, i)}
		case 3:
			ss[i] = mixStatement{q: fmt.Sprintf(`SELECT count(*) FROM events WHERE user_id = %d AND kind = 'login' AND created_at > now() - interval '%d days'`, i, 1+i%30)}
		case 4:
			ss[i] = mixStatement{q: fmt.Sprintf(`INSERT INTO audit_log (actor, action, target, at) VALUES (%d, 'export', 'report-%d', now())`, i%977, i), write: true}
		}
	}
	return ss
}

// BenchmarkStatementMix runs a realistic mix through database/sql and the
// shim over a no-op driver, one statement at a time: 9 in 10 executions
// from mixRepeated, 1 in 10 a statement never seen before (oneoff=10%). It
// measures what classification costs a whole statement once the decision
// cache answers the repeats. oneoff=100% runs only statements never seen
// before: the bound for an application that inlines all its values.
// Besides wall time it reports cpu-ns/op, the process's CPU time per
// statement (see ProcessCPU).
func BenchmarkStatementMix(b *testing.B) {
	db, err := sql.Open("rwpool", "driver=rwpool-bench-nop-postgres;primary=p;replica=r1 weight=2;replica=r2")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	// A one-off seen again 64Ki statements later has long lost its slot's
	// second-sighting mark to others: it is still classified afresh.
	oneOff := mixOneOff(1 << 16)
	run := func(s mixStatement) {
		if s.write {
			if _, err := db.ExecContext(ctx, s.q, 1, 2, 3, 4, 5); err != nil {
				b.Fatal(err)
			}
			return
		}
		rows, err := db.QueryContext(ctx, s.q, 1, 2, 3)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
		}
		if err := rows.Close(); err != nil {
			b.Fatal(err)
		}
	}
	// Warm the cache with the repeats, as a running application has.
	for range 2 {
		for _, s := range mixRepeated {
			run(s)
		}
	}
	next := 0
	for _, every := range []int{10, 1} {
		b.Run(fmt.Sprintf("oneoff=%d%%", 100/every), func(b *testing.B) {
			b.ReportAllocs()
			cpu0, cpuOK := rwpool.ProcessCPU()
			i := 0
			for b.Loop() {
				if i%every == every-1 {
					run(oneOff[next%len(oneOff)])
					next++
				} else {
					run(mixRepeated[i%len(mixRepeated)])
				}
				i++
			}
			if cpu1, ok := rwpool.ProcessCPU(); ok && cpuOK && i > 0 {
				b.ReportMetric(float64(cpu1-cpu0)/float64(i), "cpu-ns/op")
			}
		})
	}
}
