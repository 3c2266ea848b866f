package dsn

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidateDoesNotModify(t *testing.T) {
	c := NewConfig()
	c.Driver = "pg"
	c.Primary = Node{DSN: "p"}
	c.Replicas = []Node{{DSN: "r1", Weight: 2}, {DSN: "r2", Name: "east", Role: RolePrimary}, {DSN: "r3", Weight: 1}}
	before := *c
	before.Replicas = slices.Clone(c.Replicas)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&before, c, cmpConfig); diff != "" {
		t.Fatalf("Validate changed the config (-before +after):\n%s", diff)
	}
	// Nodes fills in names, roles and the primary's weight, on a copy.
	want := []Node{
		{Name: "primary", DSN: "p", Weight: 1, Role: RolePrimary},
		{Name: "replica1", DSN: "r1", Weight: 2, Role: RoleReplica},
		{Name: "east", DSN: "r2", Weight: 0, Role: RoleReplica},
		{Name: "replica3", DSN: "r3", Weight: 1, Role: RoleReplica},
	}
	if diff := cmp.Diff(want, c.Nodes()); diff != "" {
		t.Fatalf("Nodes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&before, c, cmpConfig); diff != "" {
		t.Fatalf("Nodes changed the config (-before +after):\n%s", diff)
	}
	// A Go-built config formats to a DSN that parses back to its Nodes.
	got, err := Parse(c.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	filled := cfg("pg", "p", want[1], want[2], want[3])
	if diff := cmp.Diff(filled, got, cmpConfig); diff != "" {
		t.Fatalf("round trip mismatch (-want +got):\n%s", diff)
	}
	// Without replicas, Parse returns nil Replicas.
	c.Replicas = []Node{}
	if got, err := Parse(c.FormatDSN()); err != nil || got.Replicas != nil {
		t.Fatalf("Parse: %v, Replicas %#v", err, got.Replicas)
	}
}

// Only NewConfig and Parse make a Config: a literal, whose zero values
// would silently mean breaker=off, max_waiters=0 and so on, is rejected,
// and a copy of a made Config is accepted.
func TestValidateRejectsLiteral(t *testing.T) {
	lit := &Config{Driver: "pg", Primary: Node{DSN: "p"}, PoolSize: 10, CheckInterval: time.Second,
		ProbeTimeout: time.Second, ProbeQuery: "SELECT 1"}
	err := lit.Validate()
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "dsn.NewConfig") {
		t.Fatalf("Validate of a literal: %v", err)
	}
	c := NewConfig()
	c.Driver, c.Primary.DSN = "pg", "p"
	cp := *c
	if err := cp.Validate(); err != nil {
		t.Fatalf("Validate of a copy of a NewConfig: %v", err)
	}
	parsed, err := Parse("driver=pg;primary=p")
	if err != nil {
		t.Fatal(err)
	}
	cp = *parsed
	if err := cp.Validate(); err != nil {
		t.Fatalf("Validate of a copy of a parsed Config: %v", err)
	}
}

func TestValidateErrors(t *testing.T) {
	valid := func() *Config {
		c := NewConfig()
		c.Driver = "pg"
		c.Primary = Node{DSN: "host=db password=" + sentinel}
		c.Replicas = []Node{{DSN: "host=r1 password=" + sentinel, Weight: 1}}
		return c
	}
	tests := []struct {
		name string
		mod  func(c *Config)
		want string
	}{
		{"no driver", func(c *Config) { c.Driver = "" }, "rwpool: dsn: driver: required (for example driver=postgres)"},
		{"no primary", func(c *Config) { c.Primary = Node{} }, `rwpool: dsn: primary: empty node DSN (node "primary")`},
		{"primary weight", func(c *Config) { c.Primary.Weight = 3 }, `rwpool: dsn: weight: not allowed on the primary (node "primary")`},
		{"empty replica", func(c *Config) { c.Replicas[0].DSN = "" }, `rwpool: dsn: replica: empty node DSN (node "replica1")`},
		{"negative weight", func(c *Config) { c.Replicas[0].Weight = -2 }, `rwpool: dsn: weight: must be >= 0, got -2 (node "replica1")`},
		{"huge weight", func(c *Config) { c.Replicas[0].Weight = MaxWeight + 1 }, `rwpool: dsn: weight: must be <= 1048576, got 1048577 (node "replica1")`},
		{"duplicate names", func(c *Config) { c.Replicas[0].Name = "primary" }, `rwpool: dsn: name: duplicate node name "primary"`},
		{"control name", func(c *Config) { c.Primary.Name = "a\tb" }, `rwpool: dsn: name: node name "a\tb" contains a control character`},
		{"too many replicas", func(c *Config) { c.Replicas = make([]Node, MaxReplicas+1) }, "rwpool: dsn: replica: too many replicas (maximum 1024)"},
		{"pool size", func(c *Config) { c.PoolSize = 0 }, "rwpool: dsn: pool_size: must be between 1 and 1048576, got 0"},
		{"min idle", func(c *Config) { c.MinIdle = 101 }, "rwpool: dsn: min_idle: must be between 0 and pool_size (100), got 101"},
		{"acquire timeout", func(c *Config) { c.AcquireTimeout = -time.Second }, "rwpool: dsn: acquire_timeout: must not be negative, got -1s"},
		{"idle timeout", func(c *Config) { c.IdleTimeout = -1 }, "rwpool: dsn: idle_timeout: must not be negative, got -1ns"},
		{"max lifetime", func(c *Config) { c.MaxLifetime = -time.Minute }, "rwpool: dsn: max_lifetime: must not be negative, got -1m0s"},
		{"check interval", func(c *Config) { c.CheckInterval = 0 }, "rwpool: dsn: check_interval: must be positive, got 0s"},
		{"probe timeout", func(c *Config) { c.ProbeTimeout = 0 }, "rwpool: dsn: probe_timeout: must be positive, got 0s"},
		{"max waiters", func(c *Config) { c.MaxWaiters = -1 }, "rwpool: dsn: max_waiters: must be >= 0, got -1"},
		{"probe query", func(c *Config) { c.ProbeQuery = "" }, "rwpool: dsn: probe_query: must not be empty"},
		{"fallback", func(c *Config) { c.Fallback = 9 }, "rwpool: dsn: fallback: invalid value Fallback(9) (want primary or error)"},
		{"balance", func(c *Config) { c.Balance = 9 }, "rwpool: dsn: balance: invalid value Balance(9) (want weighted or adaptive)"},
		{"readonly tx", func(c *Config) { c.ReadOnlyTx = 9 }, "rwpool: dsn: readonly_tx: invalid value ReadOnlyTx(9) (want replica or primary)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.mod(c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate succeeded")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Validate() = %q, want %q", got, tt.want)
			}
			if strings.Contains(err.Error(), sentinel) {
				t.Errorf("error leaks a password: %v", err)
			}
			var e *Error
			if !errors.As(err, &e) || e.Offset != -1 || !errors.Is(err, ErrInvalid) || e.syntax {
				t.Errorf("error %#v: want a non-syntax *Error with Offset -1", err)
			}
		})
	}
	if err := (*Config)(nil).Validate(); err == nil {
		t.Error("nil Config validated")
	}
	if err := valid().Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// TestParseValidateSameMessages checks that a rule enforced by both Parse
// and Validate reports the same message (apart from the offset).
func TestParseValidateSameMessages(t *testing.T) {
	_, perr := Parse("driver=pg;primary=p;pool_size=5;min_idle=9")
	c := NewConfig()
	c.Driver, c.Primary.DSN, c.PoolSize, c.MinIdle = "pg", "p", 5, 9
	verr := c.Validate()
	var pe, ve *Error
	if !errors.As(perr, &pe) || !errors.As(verr, &ve) {
		t.Fatalf("errors: %v / %v", perr, verr)
	}
	if pe.Key != ve.Key || pe.Msg != ve.Msg {
		t.Errorf("Parse: %v\nValidate: %v", perr, verr)
	}
	_, perr = Parse("driver=pg;primary=p;replica=r weight=-3")
	c = NewConfig()
	c.Driver, c.Primary.DSN, c.Replicas = "pg", "p", []Node{{DSN: "r", Weight: -3}}
	verr = c.Validate()
	if !errors.As(perr, &pe) || !errors.As(verr, &ve) {
		t.Fatalf("errors: %v / %v", perr, verr)
	}
	if pe.Key != ve.Key || pe.Msg != ve.Msg || pe.Node != ve.Node {
		t.Errorf("Parse: %v\nValidate: %v", perr, verr)
	}
}

func TestEnumStrings(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{RolePrimary.String(), "primary"},
		{RoleReplica.String(), "replica"},
		{Role(7).String(), "Role(7)"},
		{FallbackPrimary.String(), "primary"},
		{FallbackError.String(), "error"},
		{Fallback(7).String(), "Fallback(7)"},
		{ReadOnlyTxReplica.String(), "replica"},
		{ReadOnlyTxPrimary.String(), "primary"},
		{ReadOnlyTx(7).String(), "ReadOnlyTx(7)"},
		{BalanceWeighted.String(), "weighted"},
		{BalanceAdaptive.String(), "adaptive"},
		{Balance(7).String(), "Balance(7)"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
