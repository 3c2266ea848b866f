package dsn_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
)

// TestCausalKeys: causal_wait and causal_fallback parse, validate, and
// survive FormatDSN; the defaults are 50ms and primary.
func TestCausalKeys(t *testing.T) {
	base := "driver=pg;primary='host=a'"
	c, err := dsn.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	if c.CausalWait != 50*time.Millisecond || c.CausalFallback != dsn.FallbackPrimary {
		t.Errorf("defaults: causal_wait %s, causal_fallback %s", c.CausalWait, c.CausalFallback)
	}
	c, err = dsn.Parse(base + ";causal_wait=0;causal_fallback=error")
	if err != nil {
		t.Fatal(err)
	}
	if c.CausalWait != 0 || c.CausalFallback != dsn.FallbackError {
		t.Errorf("parsed causal_wait %s, causal_fallback %s", c.CausalWait, c.CausalFallback)
	}
	again, err := dsn.Parse(c.FormatDSN())
	if err != nil || again.CausalWait != 0 || again.CausalFallback != dsn.FallbackError {
		t.Errorf("FormatDSN %q parses to %v, %v", c.FormatDSN(), again, err)
	}
	for _, bad := range []string{"causal_wait=-1s", "causal_wait=soon", "causal_fallback=replica"} {
		if _, err := dsn.Parse(base + ";" + bad); err == nil || !strings.Contains(err.Error(), strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("%s: err %v, want one naming the key", bad, err)
		}
	}
}
