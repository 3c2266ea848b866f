package rwpool

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool/dsn"
)

// hangDial is endpointFake, except that dials of the DSNs in hung block,
// ignoring their context, as lib/pq's startup handshake does on a server
// that accepted the TCP connection and answers nothing (stopped, or
// swapping) when connect_timeout is not set.
type hangDial struct {
	mu      sync.Mutex
	release chan struct{}
	blocked int
}

var hangDialDrv = &hangDial{release: make(chan struct{})}

func init() { sql.Register("rwpool-internal-hangdial-postgres", hangDialDrv) }

func (h *hangDial) Open(name string) (driver.Conn, error) {
	if name == "hd-p" {
		h.mu.Lock()
		h.blocked++
		ch := h.release
		h.mu.Unlock()
		<-ch
		h.mu.Lock()
		h.blocked--
		h.mu.Unlock()
		return nil, errors.New("dial: connection reset")
	}
	return endpointFake.Open(name)
}

func (h *hangDial) stuck() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.blocked
}

// A node whose dials hang (the server accepts TCP connections and answers
// nothing) collects one stuck dial, not one per probe: each probe is
// abandoned at probe_timeout but its dial stays in the driver, and it
// counts as a stuck probe (probeStuck), which holds off the next ones
// until the driver lets go. It was not counted (the watched dial returned
// ctx.Err(), not errAbandoned): 8 dials stuck after a second here, 14
// once an unavailable node was probed twice as often. Found by an
// adversarial review.
func TestHungDialsDoNotPileUp(t *testing.T) {
	endpointFake.Fresh("hd-r").SetStatus(replicaStatus)
	cfg := dsn.NewConfig()
	cfg.Driver = "rwpool-internal-hangdial-postgres"
	cfg.Primary = dsn.Node{Name: "primary", DSN: "hd-p", Weight: 1, Role: dsn.RolePrimary}
	cfg.Replicas = []dsn.Node{{Name: "replica1", DSN: "hd-r", Weight: 1, Role: dsn.RoleReplica}}
	cfg.CheckInterval = 100 * time.Millisecond
	cfg.ProbeTimeout = 20 * time.Millisecond
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		hangDialDrv.mu.Lock()
		close(hangDialDrv.release) // the dials let go
		hangDialDrv.release = make(chan struct{})
		hangDialDrv.mu.Unlock()
		c.Close()
	})
	time.Sleep(time.Second)
	if s := hangDialDrv.stuck(); s > 2 {
		t.Errorf("%d probes' dials stuck in the driver on one hung node after 1s (check_interval 100ms, probe_timeout 20ms)", s)
	}
}
