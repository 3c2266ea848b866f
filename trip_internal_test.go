package rwpool

// Review (scratch): the trip contexts' children.

import (
	"context"
	"reflect"
	"sync"
	"testing"
)

func tripChildren(n *node) int {
	return reflect.ValueOf(n.trip.Load().ctx).Elem().FieldByName("children").Len()
}

func TestTripChildrenReleased(t *testing.T) {
	db, c, _ := openHonourC(t, ";check_interval=1h")
	db.SetMaxIdleConns(2)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				var node string
				if err := db.QueryRowContext(context.Background(), "SELECT node").Scan(&node); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, n := range c.topo().replicas {
		t.Logf("%s: %d children of its trip context, open vcs %d", n.cfg.Name, tripChildren(n), db.Stats().OpenConnections)
		if tripChildren(n) > db.Stats().OpenConnections {
			t.Errorf("%s: %d children for %d open connections", n.cfg.Name, tripChildren(n), db.Stats().OpenConnections)
		}
	}
	db.Close()
	for _, n := range c.topo().replicas {
		if k := tripChildren(n); k != 0 {
			t.Errorf("%s: %d children after Close", n.cfg.Name, k)
		}
	}
}
