package rwpool_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/pool"
)

// The errors of a full or closed node pool reach callers as rwpool's own
// exported errors, and a closed pool's error is the closed Connector's.
func TestPoolErrorsAreRootErrors(t *testing.T) {
	if !errors.Is(pool.ErrClosed, rwpool.ErrClosed) || !errors.Is(rwpool.ErrAcquireTimeout, pool.ErrAcquireTimeout) ||
		!errors.Is(rwpool.ErrTooManyWaiters, pool.ErrTooManyWaiters) {
		t.Fatal("root errors are not the pool's")
	}
	for _, c := range []struct {
		settings string
		want     error
	}{
		{"acquire_timeout=30ms", rwpool.ErrAcquireTimeout},
		{"max_waiters=0", rwpool.ErrTooManyWaiters},
	} {
		t.Run(c.want.Error(), func(t *testing.T) {
			cc := newCtlCluster(t, 0, "pool_size=1;"+c.settings)
			ctx := context.Background()
			tx, err := cc.db.BeginTx(ctx, nil) // holds the primary's one connection
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			_, err = cc.db.ExecContext(ctx, "INSERT INTO t VALUES (1)")
			if !errors.Is(err, c.want) {
				t.Fatalf("write on a full pool with %s: %v, want %v", c.settings, err, c.want)
			}
		})
	}

	t.Run("closed", func(t *testing.T) {
		node := t.Name() + "-p"
		ctl.Fresh(node)
		cfg, err := dsn.Parse("driver=rwpool-test-ctl;pool_size=1;check_interval=1h;primary='" + node + "'")
		if err != nil {
			t.Fatal(err)
		}
		c, err := rwpool.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(c)
		defer db.Close()
		ctx := context.Background()
		tx, err := db.BeginTx(ctx, nil) // holds the pool's one connection
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		waiting := make(chan error, 1)
		go func() {
			_, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)")
			waiting <- err
		}()
		waitFor(t, "a statement waiting for the pool", func() bool { return c.Stats().Nodes[0].Waiting == 1 })
		c.Close()
		if err := <-waiting; !errors.Is(err, rwpool.ErrClosed) {
			t.Errorf("statement waiting when the Connector closed: %v, want ErrClosed", err)
		}
		if _, err := c.Connect(ctx); !errors.Is(err, rwpool.ErrClosed) {
			t.Errorf("Connect after Close: %v, want ErrClosed", err)
		}
	})
}
