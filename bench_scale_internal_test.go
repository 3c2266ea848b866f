package rwpool

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkReadReplicas measures how a read's cost grows with the number
// of replicas (issue #25: it must not grow beyond the pick's own), over
// the no-op driver as a driver that honours contexts, with a context that
// cannot end; and what a Connector of that many nodes holds in memory
// (connector-B, measured once per size from the heap before and after
// opening it, before any statement).
func BenchmarkReadReplicas(b *testing.B) {
	for _, n := range []int{1, 2, 8, 32, 64} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			var s strings.Builder
			s.WriteString("driver=rwpool-bench-nop;primary=p;check_interval=1h")
			for i := range n {
				fmt.Fprintf(&s, ";replica=r%d", i+1)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			db := openHonouring(b, s.String())
			defer db.Close()
			runtime.GC()
			runtime.ReadMemStats(&after)
			benchRead(b, db, context.Background())
			b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "connector-B")
		})
	}
}
