package workload

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	_ "github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/cmd/rwpool/internal/embedded"
	"github.com/rwpool/rwpool/routing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestQueries(t *testing.T) {
	c := Config{Dialect: routing.DialectPostgres}
	r, w := c.Queries()
	if r != "SELECT v FROM rwpool_demo WHERE id = $1" || w != "UPDATE rwpool_demo SET v = v + 1 WHERE id = $1" {
		t.Errorf("postgres: %q, %q", r, w)
	}
	c = Config{Dialect: routing.DialectMySQL, Identity: true, IdentityTable: "me"}
	if r, _ := c.Queries(); r != "SELECT (SELECT name FROM me), v FROM rwpool_demo WHERE id = ?" {
		t.Errorf("mysql with identity: %q", r)
	}
}

// TestRun runs the workload through rwpool over an embedded cluster.
func TestRun(t *testing.T) {
	cl, err := embedded.Start(embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	node := func(s *embedded.Server) string {
		return fmt.Sprintf("'root@tcp(%s)/%s?interpolateParams=true' name=%s", s.Addr, embedded.Database, s.Name)
	}
	db, err := sql.Open("rwpool", "driver=mysql;primary="+node(cl.Primary)+";replica="+node(cl.Replicas[0])+
		";replica="+node(cl.Replicas[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 2 { // idempotent
		if err := Setup(ctx, db, routing.DialectMySQL, 50); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	byNode := map[string]map[Kind]int{}
	var failed []error
	runCtx, stop := context.WithTimeout(ctx, 700*time.Millisecond)
	defer stop()
	Run(runCtx, Config{
		DB: db, Dialect: routing.DialectMySQL, Goroutines: 4, ReadRatio: 0.7, Rows: 50,
		Identity: true, IdentityTable: embedded.NodeTable,
		Record: func(a Attempt) {
			mu.Lock()
			defer mu.Unlock()
			if a.Err != nil {
				failed = append(failed, a.Err)
				return
			}
			if a.Kind == Read && a.ServedBy != a.Node {
				t.Errorf("read routed to %s answered by %s", a.Node, a.ServedBy)
			}
			if byNode[a.Node] == nil {
				byNode[a.Node] = map[Kind]int{}
			}
			byNode[a.Node][a.Kind]++
		},
	})
	if len(failed) > 0 {
		t.Fatalf("%d failures, first %v", len(failed), failed[0])
	}
	if byNode["primary"][Read] != 0 || byNode["replica1"][Write] != 0 || byNode["replica2"][Write] != 0 {
		t.Errorf("misrouted: %v", byNode)
	}
	if byNode["primary"][Write] == 0 || byNode["replica1"][Read] == 0 || byNode["replica2"][Read] == 0 {
		t.Errorf("no traffic somewhere: %v", byNode)
	}
	var n, sum int64
	if err := db.QueryRowContext(ctx, "/*rwpool:primary*/ SELECT count(*), sum(v) FROM "+Table).Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	// Each recorded write added 1; a write cut short by the end of the run
	// is not recorded but may have landed (at most one per goroutine).
	if w := int64(byNode["primary"][Write]); n != 50 || sum < w || sum > w+4 {
		t.Errorf("%d rows, sum %d; want 50 rows and sum %d to %d (one per write)", n, sum, w, w+4)
	}
}
