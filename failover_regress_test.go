package rwpool_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
)

// A primary that hangs is tripped by a statement's deadline and the probe
// that confirms it (which times out too). The writes refused afterwards
// must not each nudge another probe: every one would stay stuck in the
// driver (ctl's SetHang ignores contexts, as lib/pq does) until the
// server answers. At most one probe may be stuck at a time.
func TestHungPrimaryRefusedWritesPileUpNoProbes(t *testing.T) {
	cc := newCtlCluster(t, 1, "check_interval=1h") // no probe but the ones statements ask for
	if _, err := cc.db.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	cc.primary.SetHang(true)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := cc.db.ExecContext(ctx, "INSERT INTO t VALUES (2)")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write on the hung primary: %v, want context.DeadlineExceeded", err)
	}
	waitFor(t, "hung primary tripped", func() bool { return cc.stats(t, "primary").State == rwpool.Unavailable })
	most := 0
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		if _, err := cc.db.Exec("INSERT INTO t VALUES (3)"); !errors.Is(err, rwpool.ErrUnavailable) {
			t.Fatalf("write on the tripped primary: %v, want ErrUnavailable", err)
		}
		most = max(most, cc.primary.Hung("SELECT 1"))
		time.Sleep(10 * time.Millisecond) // a steady trickle of writes, as an application's
	}
	if most > 1 {
		t.Errorf("%d probes stuck on the hung primary at once, want at most 1", most)
	}
}

