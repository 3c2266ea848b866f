package dsn

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidateNormalises(t *testing.T) {
	c := NewConfig()
	c.Driver = "pg"
	c.Primary = Node{DSN: "p"}
	c.Replicas = []Node{}
	if err := c.Validate(); err != nil || c.Replicas != nil {
		t.Fatalf("Validate: %v, Replicas %#v", err, c.Replicas)
	}
	c.Replicas = []Node{{DSN: "r1", Weight: 2}, {DSN: "r2", Name: "east", Role: RolePrimary}, {DSN: "r3", Weight: 1}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := cfg("pg", "p",
		Node{DSN: "r1", Weight: 2},
		Node{DSN: "r2", Name: "east", Weight: 0},
		Node{DSN: "r3", Weight: 1})
	if diff := cmp.Diff(want, c); diff != "" {
		t.Fatalf("Validate result mismatch (-want +got):\n%s", diff)
	}
	// Idempotent.
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Fatalf("second Validate changed the config (-want +got):\n%s", diff)
	}
	// A normalised Go-built config formats to a DSN that parses back equal.
	got, err := Parse(c.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got); diff != "" {
		t.Fatalf("round trip mismatch (-want +got):\n%s", diff)
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
			if !errors.As(err, &e) || e.Offset != -1 || !errors.Is(err, ErrInvalid) || errors.Is(err, ErrSyntax) {
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
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
