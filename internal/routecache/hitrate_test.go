package routecache

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rwpool/rwpool/routing"
)

// BenchmarkCacheHitRate measures the cache's hit rate and what it holds
// (issue #25: "a long statement mix") for a Connector's 1,024 slots under
// an application's statement mix: distinct statements of about 200 bytes
// (benchSelect with its own table), repeated with a Zipf distribution (a
// few statements make most of the traffic, as an ORM's do), and one
// statement in ten never seen before (SQL with inlined values). It
// reports hit-% (of all statements, the one-offs included: at most 90)
// and held-B, the bytes of the statements the cache holds (their text;
// 1,024 slots of at most MaxLen bytes bound it at 2 MiB whatever the mix).
func BenchmarkCacheHitRate(b *testing.B) {
	for _, distinct := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("statements=%d", distinct), func(b *testing.B) {
			qs := make([]string, distinct)
			for i := range qs {
				qs[i] = fmt.Sprintf("/* app:api */ SELECT \"t%d\".\"id\", \"t%d\".\"name\" FROM \"t%d\" WHERE \"t%d\".\"org_id\" = $1 AND \"t%d\".\"deleted_at\" IS NULL ORDER BY \"t%d\".\"id\" LIMIT 50", i, i, i, i, i, i)
			}
			r := rand.New(rand.NewPCG(1, 2))
			zipf := rand.NewZipf(r, 1.1, 1, uint64(distinct-1))
			c := New(routing.DialectPostgres, 1024)
			var hits, n int
			oneOff := 0
			for b.Loop() {
				q := ""
				if r.IntN(10) == 0 {
					oneOff++
					q = fmt.Sprintf("SELECT * FROM t WHERE id = %d", oneOff)
				} else {
					q = qs[zipf.Uint64()]
				}
				if e := c.slots[c.slotOf(q)].Load(); e != nil && e.query == q {
					hits++
				}
				c.Classify(q)
				n++
			}
			held := 0
			for i := range c.slots {
				if e := c.slots[i].Load(); e != nil {
					held += len(e.query)
				}
			}
			b.ReportMetric(100*float64(hits)/float64(n), "hit-%")
			b.ReportMetric(float64(held), "held-B")
		})
	}
}
