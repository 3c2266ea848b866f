package rwpool_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
)

// NewConnector takes only a Config made by dsn.NewConfig or dsn.Parse, and
// fills in default node names on its own copy, never on the caller's.
func TestNewConnectorConfig(t *testing.T) {
	lit := &dsn.Config{Driver: "rwpool-test-ctl", Primary: dsn.Node{DSN: t.Name() + "-p"}, PoolSize: 5,
		CheckInterval: time.Hour, ProbeTimeout: time.Second, ProbeQuery: "SELECT 1"}
	if c, err := rwpool.NewConnector(lit); err == nil || !errors.Is(err, dsn.ErrInvalid) ||
		!strings.Contains(err.Error(), "dsn.NewConfig") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("NewConnector(literal) = %v, want an error pointing to dsn.NewConfig", err)
	}

	cfg := dsn.NewConfig()
	cfg.Driver = "rwpool-test-ctl"
	cfg.CheckInterval = time.Hour
	cfg.Primary.DSN = t.Name() + "-p"
	cfg.Replicas = []dsn.Node{{DSN: t.Name() + "-r", Weight: 1}}
	c, err := rwpool.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if cfg.Primary.Name != "" || cfg.Replicas[0].Name != "" || cfg.Replicas[0].Role != dsn.RolePrimary {
		t.Errorf("NewConnector changed the caller's Config: %#v", cfg)
	}
	got := c.Config()
	if got.Primary.Name != "primary" || got.Replicas[0].Name != "replica1" || got.Replicas[0].Role != dsn.RoleReplica {
		t.Errorf("Connector.Config() = %#v, want default names and roles", got)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("the Connector's copy does not validate: %v", err)
	}
	names := []string{}
	for _, n := range c.Stats().Nodes {
		names = append(names, n.Name)
	}
	if strings.Join(names, ",") != "primary,replica1" {
		t.Errorf("nodes %v", names)
	}
}
