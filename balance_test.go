package rwpool_test

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/rwpool/rwpool"
)

// TestBalanceLatencyInStats checks that balance=adaptive measures the reads
// each replica serves (NodeStats.BalanceLatency) and that the default,
// weighted, measures nothing.
func TestBalanceLatencyInStats(t *testing.T) {
	for _, tt := range []struct {
		balance  string
		measured bool
	}{{"", false}, {";balance=weighted", false}, {";balance=adaptive", true}} {
		t.Run(tt.balance, func(t *testing.T) {
			db, err := sql.Open("rwpool", fmt.Sprintf("driver=rwpool-test-ctl;check_interval=1h;primary='%[1]s-p';replica='%[1]s-r1';replica='%[1]s-r2'%s",
				t.Name(), tt.balance))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var n string
			for range 200 {
				if err := db.QueryRow("SELECT 1").Scan(&n); err != nil {
					t.Fatal(err)
				}
			}
			s, err := rwpool.Stats(db)
			if err != nil {
				t.Fatal(err)
			}
			for _, ns := range s.Nodes[1:] {
				if got := ns.BalanceLatency > 0; got != tt.measured || ns.Served == 0 {
					t.Errorf("%s: BalanceLatency %s after %d reads, want measured=%v", ns.Name, ns.BalanceLatency, ns.Served, tt.measured)
				}
			}
			if s.Nodes[0].BalanceLatency != 0 {
				t.Errorf("primary measured (%s): it serves no balanced read", s.Nodes[0].BalanceLatency)
			}
		})
	}
}

// BenchmarkQueryRWPoolBalance is BenchmarkQueryRWPool with two replicas
// under each balance: what balance=adaptive's measuring of every read and
// its comparing of two candidates cost over the weighted pick.
func BenchmarkQueryRWPoolBalance(b *testing.B) {
	for _, balance := range []string{"weighted", "adaptive"} {
		b.Run("balance="+balance, func(b *testing.B) {
			db, err := sql.Open("rwpool", "driver=rwpool-bench-nop;primary=p;replica=r1;replica=r2;balance="+balance)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			benchQuery(b, db)
		})
	}
}
