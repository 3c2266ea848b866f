package dsn

import (
	"strings"
	"testing"
	"time"
)

func TestHedgeKeys(t *testing.T) {
	c, err := Parse("driver=pg;primary=p;replica=r;hedge_after=50ms;hedge_budget=30%")
	if err != nil {
		t.Fatal(err)
	}
	if c.HedgeAfter != 50*time.Millisecond || c.HedgeBudget != 30 {
		t.Fatalf("hedge_after=%s hedge_budget=%g, want 50ms and 30", c.HedgeAfter, c.HedgeBudget)
	}
	if got := c.FormatDSN(); !strings.Contains(got, "hedge_after=50ms;hedge_budget=30%") {
		t.Fatalf("FormatDSN: %s", got)
	}
	back, err := Parse(c.FormatDSN())
	if err != nil || back.HedgeBudget != 30 || back.HedgeAfter != c.HedgeAfter {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if c, err := Parse("driver=pg;primary=p;hedge_budget=2.5"); err != nil || c.HedgeBudget != 2.5 {
		t.Fatalf("hedge_budget=2.5: %v, %v", c, err)
	}
	for _, bad := range []string{"hedge_budget=0%", "hedge_budget=101%", "hedge_budget=-1", "hedge_budget=ten", "hedge_budget=NaN", "hedge_after=-1s"} {
		if _, err := Parse("driver=pg;primary=p;" + bad); err == nil {
			t.Errorf("%s: accepted", bad)
		} else if !strings.Contains(err.Error(), strings.Split(bad, "=")[0]) {
			t.Errorf("%s: error does not name the key: %v", bad, err)
		}
	}
}
