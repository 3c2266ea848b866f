package dsn

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sentinel is a password that must never appear in an error or in
// redacted output.
const sentinel = "S3ntinelPW"

// cfg returns a defaults Config with the given driver and nodes, normalised
// as Parse returns it.
func cfg(driver string, primary string, replicas ...Node) *Config {
	c := NewConfig()
	c.Driver = driver
	c.Primary = Node{Name: "primary", DSN: primary, Weight: 1, Role: RolePrimary}
	for i, r := range replicas {
		if r.Name == "" {
			r.Name = "replica" + strconv.Itoa(i+1)
		}
		r.Role = RoleReplica
		c.Replicas = append(c.Replicas, r)
	}
	return c
}

// cmpConfig lets go-cmp compare Configs, whose marker field is unexported.
var cmpConfig = cmp.AllowUnexported(Config{})

func rep(dsn string, weight int) Node { return Node{DSN: dsn, Weight: weight} }

func TestParseExample(t *testing.T) {
	const in = "driver=postgres;primary='host=db1 user=app dbname=shop';replica='host=db2 user=app dbname=shop' weight=3;replica='host=db3 user=app dbname=shop' weight=1;pool_size=50"
	got, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	want := cfg("postgres", "host=db1 user=app dbname=shop",
		rep("host=db2 user=app dbname=shop", 3),
		rep("host=db3 user=app dbname=shop", 1))
	want.PoolSize = 50
	if diff := cmp.Diff(want, got, cmpConfig); diff != "" {
		t.Fatalf("Parse mismatch (-want +got):\n%s", diff)
	}
}

func TestDefaults(t *testing.T) {
	got, err := Parse("driver=d;primary=p")
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Driver:         "d",
		Primary:        Node{Name: "primary", DSN: "p", Weight: 1, Role: RolePrimary},
		PoolSize:       100,
		MinIdle:        0,
		AcquireTimeout: 10 * time.Second,
		IdleTimeout:    20 * time.Second,
		MaxLifetime:    30 * time.Minute,
		MaxWaiters:     10000,
		CheckInterval:  2 * time.Second,
		ProbeQuery:     "SELECT 1",
		ProbeTimeout:   time.Second,
		Breaker:        true,
		Fallback:       FallbackPrimary,
		ReadOnlyTx:     ReadOnlyTxReplica,
		HedgeBudget:    10,
		CausalWait:     50 * time.Millisecond,
		made:           true,
	}
	if diff := cmp.Diff(want, got, cmpConfig); diff != "" {
		t.Fatalf("defaults mismatch (-want +got):\n%s", diff)
	}
	nc := NewConfig()
	nc.Driver, nc.Primary = want.Driver, want.Primary
	if diff := cmp.Diff(want, nc, cmpConfig); diff != "" {
		t.Fatalf("NewConfig defaults mismatch (-want +got):\n%s", diff)
	}
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want func(c *Config) // applied to cfg("pg", "p")
	}{
		{"minimal", "driver=pg;primary=p", nil},
		{"trailing semicolon", "driver=pg;primary=p;", nil},
		{"empty items", ";;driver=pg;;;primary=p;;", nil},
		{"whitespace around items", "  driver=pg ;\t primary=p ; ", nil},
		{"multi-line", "\n\tdriver=pg;\n\tprimary='p';\n\tpool_size=7;\n", func(c *Config) { c.PoolSize = 7 }},
		{"crlf", "driver=pg;\r\nprimary=p;\r\nmin_idle=3\r\n", func(c *Config) { c.MinIdle = 3 }},
		{"quoted driver", "driver='pg';primary=p", nil},
		{"quoted with semicolon and spaces", "driver=pg;primary='a b;c'", func(c *Config) { c.Primary.DSN = "a b;c" }},
		{"quoted newline", "driver=pg;primary='a\nb'", func(c *Config) { c.Primary.DSN = "a\nb" }},
		{"escaped quote", `driver=pg;primary='it\'s'`, func(c *Config) { c.Primary.DSN = "it's" }},
		{"escaped backslash", `driver=pg;primary='a\\b'`, func(c *Config) { c.Primary.DSN = `a\b` }},
		{"other backslash kept", `driver=pg;primary='C:\data\n\x'`, func(c *Config) { c.Primary.DSN = `C:\data\n\x` }},
		{"trailing escaped backslash", `driver=pg;primary='a\\'`, func(c *Config) { c.Primary.DSN = `a\` }},
		{"libpq quotes inside", `driver=pg;primary='host=h password=\'p w\\\''`, func(c *Config) { c.Primary.DSN = `host=h password='p w\'` }},
		{"bare url", "driver=pg;primary=postgres://u:p@h/db?sslmode=disable", func(c *Config) { c.Primary.DSN = "postgres://u:p@h/db?sslmode=disable" }},
		{"bare mysql with equals", "driver=mysql;primary=u:p@tcp(h:3306)/db?parseTime=true&loc=UTC", func(c *Config) {
			c.Driver = "mysql"
			c.Primary.DSN = "u:p@tcp(h:3306)/db?parseTime=true&loc=UTC"
		}},
		{"bare backslash literal", `driver=pg;primary=a\b`, func(c *Config) { c.Primary.DSN = `a\b` }},
		{"replicas default weight and names", "driver=pg;primary=p;replica=r1;replica=r2", func(c *Config) {
			c.Replicas = []Node{
				{Name: "replica1", DSN: "r1", Weight: 1, Role: RoleReplica},
				{Name: "replica2", DSN: "r2", Weight: 1, Role: RoleReplica},
			}
		}},
		{"replica before primary", "driver=pg;replica=r1;primary=p", func(c *Config) {
			c.Replicas = []Node{{Name: "replica1", DSN: "r1", Weight: 1, Role: RoleReplica}}
		}},
		{"weights and names", "driver=pg;primary=p name=main;replica=r1 weight=0 name=spare;replica='r 2' name='east 1' weight=7;replica=r3", func(c *Config) {
			c.Primary.Name = "main"
			c.Replicas = []Node{
				{Name: "spare", DSN: "r1", Weight: 0, Role: RoleReplica},
				{Name: "east 1", DSN: "r 2", Weight: 7, Role: RoleReplica},
				{Name: "replica3", DSN: "r3", Weight: 1, Role: RoleReplica},
			}
		}},
		{"attributes across lines", "driver=pg;primary=p;replica='r'\n   weight=2\n\tname=x  ", func(c *Config) {
			c.Replicas = []Node{{Name: "x", DSN: "r", Weight: 2, Role: RoleReplica}}
		}},
		{"name may take an unused default", "driver=pg;primary=p;replica=r1 name=replica2", func(c *Config) {
			c.Replicas = []Node{{Name: "replica2", DSN: "r1", Weight: 1, Role: RoleReplica}}
		}},
		{"max_lag", "driver=pg;primary=p;max_lag=1500ms", func(c *Config) { c.MaxLag = 1500 * time.Millisecond }},
		{"follow_promotion", "driver=pg;primary=p;follow_promotion=on", func(c *Config) { c.FollowPromotion = true }},
		{"max weight", "driver=pg;primary=p;replica=r weight=" + strconv.Itoa(MaxWeight), func(c *Config) {
			c.Replicas = []Node{{Name: "replica1", DSN: "r", Weight: MaxWeight, Role: RoleReplica}}
		}},
		{"every key", "driver=pg;primary=p;pool_size=10;min_idle=10;acquire_timeout=500ms;idle_timeout=0;max_lifetime=0s;" +
			"max_waiters=0;check_interval=1m30s;probe_query='SELECT 2';probe_timeout=250ms;breaker=off;fallback=error;readonly_tx=primary;" +
			"read_your_writes=500ms;reset_query='DISCARD ALL';failover_wait=5s",
			func(c *Config) {
				c.FailoverWait = 5 * time.Second
				c.ReadYourWrites = 500 * time.Millisecond
				c.ResetQuery = "DISCARD ALL"
				c.PoolSize, c.MinIdle = 10, 10
				c.AcquireTimeout, c.IdleTimeout, c.MaxLifetime = 500*time.Millisecond, 0, 0
				c.MaxWaiters = 0
				c.CheckInterval = 90 * time.Second
				c.ProbeQuery = "SELECT 2"
				c.ProbeTimeout = 250 * time.Millisecond
				c.Breaker = false
				c.Fallback = FallbackError
				c.ReadOnlyTx = ReadOnlyTxPrimary
			}},
		{"balance", "driver=pg;primary=p;balance=adaptive", func(c *Config) { c.Balance = BalanceAdaptive }},
		{"explicit defaults", "driver=pg;primary=p;breaker=on;fallback=primary;readonly_tx=replica;balance=weighted;pool_size=100", nil},
		{"pool size bounds", "driver=pg;primary=p;pool_size=" + strconv.Itoa(MaxPoolSize), func(c *Config) { c.PoolSize = MaxPoolSize }},
		{"plus sign and zeros", "driver=pg;primary=p;pool_size=+007", func(c *Config) { c.PoolSize = 7 }},
		{"unicode", "driver=pg;primary='hôst=ü'  name=ñode", func(c *Config) { c.Primary.DSN, c.Primary.Name = "hôst=ü", "ñode" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			want := cfg("pg", "p")
			if tt.want != nil {
				tt.want(want)
			}
			if diff := cmp.Diff(want, got, cmpConfig); diff != "" {
				t.Fatalf("Parse(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
			// Round trip through the canonical form.
			again, err := Parse(got.FormatDSN())
			if err != nil {
				t.Fatalf("Parse(FormatDSN()=%q): %v", got.FormatDSN(), err)
			}
			if diff := cmp.Diff(got, again, cmpConfig); diff != "" {
				t.Fatalf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	pw := "host=db user=app password=" + sentinel
	q := "'" + pw + "'"
	tests := []struct {
		name   string
		in     string
		key    string   // expected Error.Key
		want   []string // substrings of Error()
		syntax bool     // a lexical error
	}{
		{"empty", "", "driver", []string{"driver", "required"}, false},
		{"missing driver", "primary=" + q, "driver", []string{"driver: required"}, false},
		{"empty driver", "driver=;primary=" + q, "driver", []string{"driver: required"}, false},
		{"no primary", "driver=pg;replica=" + q, "primary", []string{"primary", "exactly one"}, false},
		{"two primaries", "driver=pg;primary=" + q + ";primary=" + q, "primary", []string{"duplicate", "exactly one primary"}, false},
		{"duplicate scalar", "driver=pg;primary=" + q + ";pool_size=1;pool_size=2", "pool_size", []string{"pool_size: duplicate key"}, false},
		{"duplicate driver", "driver=pg;driver=pg;primary=" + q, "driver", []string{"driver: duplicate key"}, false},
		{"unknown key suggestion", "driver=pg;primary=" + q + ";pool_sise=5", "pool_sise", []string{`pool_sise`, `did you mean "pool_size"?`}, false},
		{"unknown key case", "driver=pg;primary=" + q + ";Pool_Size=5", "Pool_Size", []string{`did you mean "pool_size"?`}, false},
		{"unknown key prefix", "driver=pg;primary=" + q + ";readonly=primary", "readonly", []string{`did you mean "readonly_tx"?`}, false},
		{"unknown key far", "driver=pg;primary=" + q + ";timeoutx=5", "", []string{"unknown key", "known keys: driver"}, false},
		{"unknown key without =", "driver=pg;primary=" + q + ";pool_sise", "pool_sise", []string{`did you mean "pool_size"?`}, false},
		{"space after =", "driver=pg;primary= " + q, "primary", []string{"primary: whitespace after '='"}, true},
		{"space before =", "driver=pg;primary =" + q, "primary", []string{"primary: whitespace before '='"}, true},
		{"space around attribute =", "driver=pg;primary=p;replica=" + q + " weight = 2", "weight", []string{"weight: whitespace before '='"}, true},
		{"space after attribute =", "driver=pg;primary=p;replica=" + q + " weight= 2", "weight", []string{"weight: whitespace after '='"}, true},
		{"empty bare replica then attribute", "driver=pg;primary=" + q + ";replica= weight=2", "replica", []string{"whitespace after '='"}, true},
		{"known key without =", "driver=pg;primary=" + q + ";pool_size", "pool_size", []string{"missing '='"}, true},
		{"garbage item", "driver=pg;primary=" + q + ";'x'", "", []string{"expected key=value"}, true},
		{"stray word", "driver=pg;primary=" + q + ";hello", "", []string{"expected key=value"}, true},
		{"unterminated quote", "driver=pg;primary='" + pw, "primary", []string{"primary: unterminated quoted value"}, true},
		{"unterminated by escape", "driver=pg;primary='" + pw + `\'`, "primary", []string{"unterminated"}, true},
		{"garbage after quote", "driver=pg;primary='host=db password='" + sentinel + "'", "primary", []string{"primary: unexpected text after closing quote"}, true},
		{"quote in bare value", "driver=pg;primary=pass'" + sentinel + "'", "primary", []string{"quote inside an unquoted value"}, true},
		{"unquoted node with spaces", "driver=pg;primary=" + pw, "primary", []string{"unexpected text after node DSN"}, true},
		{"unquoted password first", "driver=pg;primary=password=" + sentinel + " host=db", "primary", []string{"unexpected text after node DSN"}, true},
		{"misquoted password becomes key", "driver=pg;primary='host=db password=';" + sentinel + "=x;", "", []string{"unknown key"}, false},
		{"misquoted password no =", "driver=pg;primary='host=db password=';" + sentinel + "'", "", []string{"expected key=value"}, true},
		{"empty primary dsn", "driver=pg;primary=''", "primary", []string{"primary: empty node DSN", `node "primary"`}, false},
		{"empty bare primary", "driver=pg;primary=", "primary", []string{"empty node DSN"}, false},
		{"empty replica dsn", "driver=pg;primary=" + q + ";replica=x;replica='' weight=2", "replica", []string{"replica: empty node DSN", `node "replica2"`}, false},
		{"weight on primary", "driver=pg;primary=" + q + " weight=2", "weight", []string{"weight: not allowed on the primary"}, false},
		{"weight 1 on primary", "driver=pg;primary=" + q + " weight=1", "weight", []string{"not allowed on the primary"}, false},
		{"negative weight", "driver=pg;primary=p;replica=" + q + " weight=-1", "weight", []string{"weight: must be >= 0, got -1", `node "replica1"`}, false},
		{"non-integer weight", "driver=pg;primary=p;replica=" + q + " weight=1.5", "weight", []string{"weight: must be an integer"}, false},
		{"word weight", "driver=pg;primary=p;replica=" + q + " weight=" + sentinel, "weight", []string{"weight: must be an integer"}, false},
		{"huge weight", "driver=pg;primary=p;replica=" + q + " weight=99999999999999999999999", "weight", []string{"out of range"}, false},
		{"weight too big", "driver=pg;primary=p;replica=" + q + " weight=" + strconv.Itoa(MaxWeight+1), "weight", []string{"must be <= "}, false},
		{"duplicate weight", "driver=pg;primary=p;replica=" + q + " weight=1 weight=2", "weight", []string{"duplicate node attribute"}, false},
		{"empty name", "driver=pg;primary=p;replica=" + q + " name=''", "name", []string{"name: must not be empty"}, false},
		{"duplicate names", "driver=pg;primary=p;replica=a name=x;replica=" + q + " name=x", "name", []string{`duplicate node name "x"`}, false},
		{"name clashes with default", "driver=pg;primary=p;replica=a;replica=" + q + " name=replica1", "name", []string{`duplicate node name "replica1"`}, false},
		{"name primary on replica", "driver=pg;primary=p;replica=" + q + " name=primary", "name", []string{`duplicate node name "primary"`}, false},
		{"control char in name", "driver=pg;primary=p;replica=" + q + " name='a\nb'", "name", []string{`control character`, `"a\nb"`}, false},
		{"unknown attribute typo", "driver=pg;primary=p;replica=" + q + " wieght=2", "wieght", []string{`unknown node attribute`, `did you mean "weight"?`}, false},
		{"unknown attribute far", "driver=pg;primary=p;replica=" + q + " priority=2", "replica", []string{`unexpected text after node DSN`}, true},
		{"attribute without =", "driver=pg;primary=p;replica=" + q + " weight 2", "weight", []string{`missing '='`}, true},
		{"missing semicolon", "driver=pg;primary=" + q + "\nreplica=" + q, "primary", []string{`missing ';' before "replica"`}, true},
		{"attribute on scalar", "driver=pg;primary=p;pool_size=5 weight=2", "weight", []string{"only allowed on primary, replica and discover"}, false},
		{"text after scalar", "driver=pg;primary=p;probe_query=SELECT 1", "probe_query", []string{"unexpected text after value"}, true},
		{"scalar missing semicolon", "driver=pg;primary=p;pool_size=5\nmin_idle=2", "pool_size", []string{`missing ';' before "min_idle"`}, true},
		{"pool_size zero", "driver=pg;primary=" + q + ";pool_size=0", "pool_size", []string{"pool_size: must be between 1 and 1048576, got 0"}, false},
		{"pool_size too big", "driver=pg;primary=p;pool_size=" + strconv.Itoa(MaxPoolSize+1), "pool_size", []string{"pool_size: must be between"}, false},
		{"pool_size text", "driver=pg;primary=p;pool_size=ten", "pool_size", []string{`pool_size: invalid integer "ten"`}, false},
		{"pool_size empty", "driver=pg;primary=p;pool_size=", "pool_size", []string{`pool_size: invalid integer ""`}, false},
		{"pool_size overflow", "driver=pg;primary=p;pool_size=99999999999999999999", "pool_size", []string{"out of range"}, false},
		{"min_idle negative", "driver=pg;primary=p;min_idle=-1", "min_idle", []string{"min_idle: must be between 0 and pool_size (100), got -1"}, false},
		{"min_idle above pool", "driver=pg;primary=p;pool_size=5;min_idle=6", "min_idle", []string{"min_idle: must be between 0 and pool_size (5), got 6"}, false},
		{"max_waiters negative", "driver=pg;primary=p;max_waiters=-1", "max_waiters", []string{"max_waiters: must be >= 0"}, false},
		{"duration no unit", "driver=pg;primary=p;acquire_timeout=10", "acquire_timeout", []string{`acquire_timeout: invalid duration "10"`}, false},
		{"duration garbage", "driver=pg;primary=p;idle_timeout=soon", "idle_timeout", []string{`idle_timeout: invalid duration "soon"`}, false},
		{"duration negative", "driver=pg;primary=p;max_lifetime=-1s", "max_lifetime", []string{"max_lifetime: must not be negative, got -1s"}, false},
		{"check_interval zero", "driver=pg;primary=p;check_interval=0s", "check_interval", []string{"check_interval: must be positive"}, false},
		{"probe_timeout zero", "driver=pg;primary=p;probe_timeout=0", "probe_timeout", []string{"probe_timeout: must be positive"}, false},
		{"probe_query empty", "driver=pg;primary=p;probe_query=''", "probe_query", []string{"probe_query: must not be empty"}, false},
		{"breaker value", "driver=pg;primary=p;breaker=yes", "breaker", []string{`breaker: invalid value "yes" (want on or off)`}, false},
		{"fallback value", "driver=pg;primary=p;fallback=replica", "fallback", []string{`fallback: invalid value "replica" (want primary or error)`}, false},
		{"balance value", "driver=pg;primary=p;balance=fastest", "balance", []string{`balance: invalid value "fastest" (want weighted or adaptive)`}, false},
		{"readonly_tx value", "driver=pg;primary=p;readonly_tx=any", "readonly_tx", []string{`readonly_tx: invalid value "any" (want replica or primary)`}, false},
		{"max_lag without breaker", "driver=pg;primary=p;breaker=off;max_lag=1s", "max_lag", []string{"max_lag: needs breaker=on"}, false},
		{"max_lag negative", "driver=pg;primary=p;max_lag=-1s", "max_lag", []string{"max_lag: must not be negative, got -1s"}, false},
		{"read_your_writes garbage", "driver=pg;primary=p;read_your_writes=on", "read_your_writes", []string{`read_your_writes: invalid duration "on"`}, false},
		{"long value truncated", "driver=pg;primary=p;breaker=" + strings.Repeat("x", 500), "breaker", []string{`..."`[:3]}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error", tt.in, c)
			}
			if c != nil {
				t.Errorf("Parse returned a Config along with error %v", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not a *Error", err, err)
			}
			msg := err.Error()
			if e.Key != tt.key {
				t.Errorf("Key = %q, want %q (error %q)", e.Key, tt.key, msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if !strings.HasPrefix(msg, "rwpool: dsn: ") {
				t.Errorf("error %q lacks the rwpool: dsn: prefix", msg)
			}
			if strings.Contains(msg, sentinel) || strings.Contains(msg, "host=db") {
				t.Errorf("error %q leaks a node DSN", msg)
			}
			if strings.ContainsAny(msg, "\n\r") {
				t.Errorf("error %q is not one line", msg)
			}
			if len(msg) > 400 {
				t.Errorf("error is %d bytes long: %q", len(msg), msg)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
			}
			if got := e.syntax; got != tt.syntax {
				t.Errorf("%v: syntax = %v, want %v", err, got, tt.syntax)
			}
		})
	}
}

func TestErrorOffset(t *testing.T) {
	in := "driver=pg;\nprimary=p;\npool_size=0"
	_, err := Parse(in)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v", err)
	}
	if want := strings.Index(in, "pool_size"); e.Offset != want {
		t.Errorf("Offset = %d, want %d (%v)", e.Offset, want, err)
	}
	in = "driver=pg;primary=p;replica=a;replica='' name=x"
	_, err = Parse(in)
	if !errors.As(err, &e) {
		t.Fatalf("got %v", err)
	}
	if want := strings.LastIndex(in, "replica="); e.Offset != want || e.Node != "x" {
		t.Errorf("Offset, Node = %d, %q; want %d, %q (%v)", e.Offset, e.Node, want, "x", err)
	}
	in = "driver=pg;primary='unterminated"
	_, err = Parse(in)
	if !errors.As(err, &e) {
		t.Fatalf("got %v", err)
	}
	if want := strings.Index(in, "'"); e.Offset != want {
		t.Errorf("Offset = %d, want %d (%v)", e.Offset, want, err)
	}
	if !strings.HasSuffix(err.Error(), " at offset "+strconv.Itoa(e.Offset)) {
		t.Errorf("error %q does not end with its offset", err)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    *Error
		want string
	}{
		{&Error{Key: "pool_size", Msg: "bad", Offset: -1}, "rwpool: dsn: pool_size: bad"},
		{&Error{Msg: "bad", Offset: 3}, "rwpool: dsn: bad at offset 3"},
		{&Error{Key: "weight", Node: "r1", Msg: "bad", Offset: 0}, `rwpool: dsn: weight: bad (node "r1") at offset 0`},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestManyReplicas(t *testing.T) {
	const n = MaxReplicas
	var b strings.Builder
	b.WriteString("driver=postgres;primary='host=db0 user=app password=" + sentinel + "'")
	for i := 1; i <= n; i++ {
		b.WriteString(";\nreplica='host=db")
		b.WriteString(strconv.Itoa(i))
		b.WriteString(" user=app password=" + sentinel + "' weight=")
		b.WriteString(strconv.Itoa(i % 5))
	}
	in := b.String()
	start := time.Now()
	c, err := Parse(in)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Replicas) != n {
		t.Fatalf("got %d replicas, want %d", len(c.Replicas), n)
	}
	if r := c.Replicas[n-1]; r.Name != "replica1024" || r.Weight != 1024%5 || r.DSN != "host=db1024 user=app password="+sentinel {
		t.Fatalf("last replica = %#v", r)
	}
	t.Logf("parsed %d replicas (%d bytes) in %v", n, len(in), elapsed)
	if elapsed > 500*time.Millisecond {
		t.Errorf("parsing %d replicas took %v", n, elapsed)
	}
	again, err := Parse(c.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(c, again, cmpConfig) {
		t.Fatal("round trip of many replicas differs")
	}
	if strings.Contains(c.String(), sentinel) {
		t.Fatal("String leaks a password")
	}
}

func TestTooManyReplicas(t *testing.T) {
	var b strings.Builder
	b.WriteString("driver=pg;primary=p")
	for i := 0; i < 10000; i++ {
		b.WriteString(";replica=r name=n")
		b.WriteString(strconv.Itoa(i))
	}
	_, err := Parse(b.String())
	if err == nil || !strings.Contains(err.Error(), "too many replicas") {
		t.Fatalf("got %v, want too many replicas", err)
	}
}
