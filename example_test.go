package rwpool_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/rwpool/rwpool"
)

// exampleCluster opens two *sql.DB (two Connectors: two processes, as far
// as rwpool knows) over one simulated PostgreSQL cluster whose replica has
// replayed nothing yet. The examples run on the project's fake drivers; a
// program names its real driver and servers in the DSN instead.
func exampleCluster(name string) (web, worker *sql.DB) {
	sim.Fresh(name + "/p")
	sim.Fresh(name + "/r1").SetReplayed(0)
	dsn := fmt.Sprintf("driver=rwpool-test-postgres-sim;primary=%[1]s/p;replica=%[1]s/r1;check_interval=1h;causal_wait=0", name)
	web, _ = sql.Open("rwpool", dsn)
	worker, _ = sql.Open("rwpool", dsn)
	return web, worker
}

// A web request writes; the job it enqueues runs in another process and
// must see the write. The session's token travels in the job's payload.
func ExampleSessionToken() {
	web, worker := exampleCluster("example-token")
	defer web.Close()
	defer worker.Close()

	// In the web process.
	ctx := rwpool.WithSession(context.Background())
	if _, err := web.ExecContext(ctx, "UPDATE orders SET status = 'paid' WHERE id = 7"); err != nil {
		fmt.Println(err)
		return
	}
	payload := rwpool.SessionToken(ctx) // with the job: a short, URL-safe string

	// In the worker process.
	jobCtx, err := rwpool.WithSessionToken(context.Background(), payload)
	if err != nil {
		fmt.Println(err) // errors.Is(err, rwpool.ErrInvalidToken)
		return
	}
	var r rwpool.Route
	var status string
	if err := worker.QueryRowContext(rwpool.WithRoute(jobCtx, &r), "SELECT status FROM orders WHERE id = 7").Scan(&status); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("served by", r.Node, "because", r.Reason)
	// Output: served by primary because read-your-writes: no replica has applied the session's writes
}

// What is not a token is refused, never trusted.
func ExampleWithSessionToken() {
	_, err := rwpool.WithSessionToken(context.Background(), "not-a-token")
	fmt.Println(errors.Is(err, rwpool.ErrInvalidToken))
	// Output: true
}

// A report that may be a second behind, but no more: replicas serve it
// only once they have what the primary had a second before the read.
func ExampleWithMaxStaleness() {
	web, other := exampleCluster("example-staleness")
	defer web.Close()
	defer other.Close()
	web.ExecContext(context.Background(), "UPDATE orders SET total = 10 WHERE id = 7")
	time.Sleep(2 * time.Millisecond) // the bound's moment is after the write

	ctx := rwpool.WithMaxStaleness(context.Background(), time.Millisecond)
	var r rwpool.Route
	var total string
	web.QueryRowContext(rwpool.WithRoute(ctx, &r), "SELECT total FROM orders WHERE id = 7").Scan(&total)
	fmt.Println("served by", r.Node, "because", r.Reason)
	// Output: served by primary because max staleness: no replica is fresh enough
}

// A slow-statement log: every statement that took longer than a threshold
// on its node is logged with where it ran and why, apart from what it
// waited for its connection. Here the threshold is 0, so that the example
// logs its one read; a service would take, say, 200 ms.
func ExampleWithStatementObserver() {
	latencyFake.Fresh("example-observer/p")
	latencyFake.Fresh("example-observer/r1")
	db, err := sql.Open("rwpool", "driver=rwpool-test-latency;primary=example-observer/p;replica=example-observer/r1;check_interval=1h")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	const slow = 0 * time.Millisecond
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Value.Kind() == slog.KindDuration {
				return slog.Attr{} // varies from run to run
			}
			return a
		},
	}))
	err = rwpool.Configure(db, rwpool.WithStatementObserver(func(_ context.Context, s rwpool.StatementInfo) {
		if s.Duration < slow {
			return
		}
		logger.Warn("slow statement", "node", s.Node, "role", s.Role, "kind", s.Kind, "outcome", s.Outcome,
			"reason", s.Reason, "took", s.Duration, "conn_wait", s.ConnWait)
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	var node string
	if err := db.QueryRowContext(context.Background(), "SELECT node").Scan(&node); err != nil {
		fmt.Println(err)
	}
	// Output:
	// level=WARN msg="slow statement" node=replica1 role=replica kind=read outcome=ok reason="read: SELECT/WITH/SHOW/VALUES/TABLE"
}
