package rwpool

import (
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
)

// A probe that starts once Close has begun closes the connection it was
// handed. The health checker hands its own connection to each probe
// (probe takes it over and gives it back only on success); a probe that
// background.Go refused, Close having begun, lost it: a connection left
// open after Close, with no goroutine holding it. Found by TestSimulation
// (close-leak, about 1 run in 50).
func TestProbeAfterCloseClosesItsConnection(t *testing.T) {
	endpointFake.Fresh("pcl-p").SetStatus(primaryStatus)
	r := endpointFake.Fresh("pcl-r")
	r.SetStatus(replicaStatus)
	cfg := dsn.NewConfig()
	cfg.Driver = "rwpool-internal-endpoint-postgres"
	cfg.Primary = dsn.Node{Name: "primary", DSN: "pcl-p", Weight: 1, Role: dsn.RolePrimary}
	cfg.Replicas = []dsn.Node{{Name: "replica1", DSN: "pcl-r", Weight: 1, Role: dsn.RoleReplica}}
	cfg.CheckInterval = time.Hour
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if o := r.Open(); o != 0 {
		t.Fatalf("%d connections open after Close, before the probe", o)
	}
	conn, err := endpointFake.Open("pcl-r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.topo().nodes[1].probe(&conn, false); err == nil {
		t.Fatal("a probe after Close succeeded")
	}
	if conn != nil {
		conn.Close()
	}
	if o := r.Open(); o != 0 {
		t.Errorf("%d connections open after a probe refused by Close: the checker's connection it was handed was dropped, not closed", o)
	}
}
