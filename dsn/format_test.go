package dsn

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFormatDSN(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"driver=pg;primary=p", "driver=pg;primary='p'"},
		{" driver='pg' ;\n primary='p' name=primary;", "driver=pg;primary='p'"},
		{"driver=pg;primary=p name=main;replica=r1 weight=1;replica=r2 weight=0 name=replica2;replica=r3 name='x y'",
			"driver=pg;primary='p' name=main;replica='r1';replica='r2' weight=0;replica='r3' name='x y'"},
		{`driver=pg;primary='it\'s a \\ and \q'`, `driver=pg;primary='it\'s a \\ and \\q'`},
		{"driver=pg;primary=p;readonly_tx=primary;fallback=error;breaker=off;probe_timeout=2s;probe_query=q;check_interval=1s;" +
			"max_waiters=1;max_lifetime=0;idle_timeout=90s;acquire_timeout=1ms;min_idle=2;pool_size=3",
			"driver=pg;primary='p';pool_size=3;min_idle=2;acquire_timeout=1ms;idle_timeout=1m30s;max_lifetime=0s;max_waiters=1;" +
				"check_interval=1s;probe_query=q;probe_timeout=2s;breaker=off;fallback=error;readonly_tx=primary"},
		{"driver=pg;primary=p;probe_query='SELECT 1 -- it''s'", ""}, // invalid: garbage after quote
		{"driver=pg;primary=p;probe_query='SELECT \\'x\\''", `driver=pg;primary='p';probe_query='SELECT \'x\''`},
		{"driver='my driver';primary=p", "driver='my driver';primary='p'"},
		{"driver=pg;primary=p;balance=adaptive;fallback=error", "driver=pg;primary='p';fallback=error;balance=adaptive"},
		{"driver=pg;primary=p;balance=weighted", "driver=pg;primary='p'"},
	}
	for _, tt := range tests {
		c, err := Parse(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("Parse(%q) succeeded", tt.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		got := c.FormatDSN()
		if got != tt.want {
			t.Errorf("FormatDSN(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
		// Canonical: formatting is a fixed point.
		c2, err := Parse(got)
		if err != nil {
			t.Errorf("Parse(%q): %v", got, err)
			continue
		}
		if !cmp.Equal(c, c2, cmpConfig) || c2.FormatDSN() != got {
			t.Errorf("FormatDSN not canonical for %q", tt.in)
		}
		// No password: String is FormatDSN.
		if s := c.String(); s != got {
			t.Errorf("String() = %q, want %q", s, got)
		}
	}
	if got := (*Config)(nil).FormatDSN(); got != "" {
		t.Errorf("nil FormatDSN = %q", got)
	}
	if got := (*Config)(nil).String(); got != "<nil>" {
		t.Errorf("nil String = %q", got)
	}
}

func TestFormatDurations(t *testing.T) {
	for _, d := range []time.Duration{1, 999, time.Microsecond + 1, 1<<63 - 1, 25*time.Hour + 1} {
		c := cfg("pg", "p")
		c.AcquireTimeout, c.IdleTimeout, c.MaxLifetime, c.CheckInterval, c.ProbeTimeout = d, d, d, d, d
		got, err := Parse(c.FormatDSN())
		if err != nil {
			t.Fatalf("duration %v: %v", d, err)
		}
		if !cmp.Equal(c, got, cmpConfig) {
			t.Errorf("duration %v does not round trip: %s", d, cmp.Diff(c, got, cmpConfig))
		}
	}
}

// secretConfig returns a Config whose node DSNs hold sentinel passwords in
// several formats.
func secretConfig(t *testing.T) *Config {
	t.Helper()
	c, err := Parse(`driver=pg;
		primary='host=db1 user=app password=` + sentinel + `1 dbname=shop';
		replica='postgres://app:` + sentinel + `2@db2:5432/shop?sslmode=disable' weight=3;
		replica='app:` + sentinel + `3@tcp(db3:3306)/shop?parseTime=true' name=mysql;
		replica='host=db4 password=\'` + sentinel + `4 with spaces\'' weight=0`)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStringRedacts(t *testing.T) {
	c := secretConfig(t)
	if !strings.Contains(c.FormatDSN(), sentinel+"1") {
		t.Fatal("FormatDSN lost the password")
	}
	want := `driver=pg;primary='host=db1 user=app password=*** dbname=shop';` +
		`replica='postgres://app:***@db2:5432/shop?sslmode=disable' weight=3;` +
		`replica='app:***@tcp(db3:3306)/shop?parseTime=true' name=mysql;` +
		`replica='host=db4 password=***' weight=0`
	if got := c.String(); got != want {
		t.Errorf("String()\n got %q\nwant %q", got, want)
	}
	// Everything that prints a Config or a Node must redact.
	var logBuf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logBuf, nil))
	logger.Info("config", "cfg", c, "node", c.Primary, "replicas", c.Replicas)
	jsonLogger := slog.New(slog.NewJSONHandler(&logBuf, nil))
	jsonLogger.Info("config", "cfg", c, "node", c.Replicas[2])
	outputs := map[string]string{
		"%v":       fmt.Sprintf("%v", c),
		"%+v":      fmt.Sprintf("%+v", c),
		"%#v":      fmt.Sprintf("%#v", c),
		"%s":       fmt.Sprintf("%s", c),
		"value %v": fmt.Sprintf("%v", *c),
		"value+v":  fmt.Sprintf("%+v", *c),
		"value#v":  fmt.Sprintf("%#v", *c),
		"node %v":  fmt.Sprintf("%v", c.Replicas[0]),
		"node %#v": fmt.Sprintf("%#v", c.Replicas[0]),
		"node +v":  fmt.Sprintf("%+v", c.Replicas),
		"slog":     logBuf.String(),
		"GoString": c.GoString(),
		"Redacted": c.Primary.Redacted(),
	}
	for name, out := range outputs {
		if strings.Contains(out, sentinel) {
			t.Errorf("%s leaks a password: %s", name, out)
		}
		if !strings.Contains(out, "***") {
			t.Errorf("%s shows no redaction: %s", name, out)
		}
	}
	if got, want := c.Replicas[1].String(), "mysql (app:***@tcp(db3:3306)/shop?parseTime=true)"; got != want {
		t.Errorf("Node.String() = %q, want %q", got, want)
	}
	// The redacted form is itself a valid DSN.
	r, err := Parse(c.String())
	if err != nil {
		t.Fatalf("Parse(String()): %v", err)
	}
	if r.Replicas[1].Name != "mysql" || r.Replicas[0].Weight != 3 {
		t.Errorf("Parse(String()) = %v", r)
	}
}

func TestGoString(t *testing.T) {
	c := cfg("pg", "host=h password=x", rep("r", 2))
	want := `&dsn.Config{Driver:"pg", Primary:dsn.Node{Name:"primary", DSN:"host=h password=***", Weight:1, Role:dsn.RolePrimary}, ` +
		`Replicas:[]dsn.Node{dsn.Node{Name:"replica1", DSN:"r", Weight:2, Role:dsn.RoleReplica}}, PoolSize:100, MinIdle:0, ` +
		`AcquireTimeout:10000000000, IdleTimeout:20000000000, MaxLifetime:1800000000000, MaxWaiters:10000, CheckInterval:2000000000, ` +
		`ProbeQuery:"SELECT 1", ProbeTimeout:1000000000, Breaker:true, Fallback:0, ReadOnlyTx:0, Balance:0, MaxLag:0, ReadYourWrites:0, ResetQuery:"", FailoverWait:0, FollowPromotion:false, HedgeAfter:0, HedgeBudget:10, CausalWait:50000000, CausalFallback:0}`
	if got := fmt.Sprintf("%#v", c); got != want {
		t.Errorf("%%#v\n got %s\nwant %s", got, want)
	}
	if got := fmt.Sprintf("%#v", (*Config)(nil)); got != "(*dsn.Config)(nil)" {
		t.Errorf("nil GoString = %s", got)
	}
	if got := fmt.Sprintf("%#v", NewConfig()); !strings.Contains(got, "Replicas:[]dsn.Node(nil)") {
		t.Errorf("GoString = %s", got)
	}
}
