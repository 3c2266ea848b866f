package rwotel_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/XSAM/otelsql"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/fakedriver"
	rwotel "github.com/rwpool/rwpool/metrics/otel"
)

// slowFake's node whose DSN contains "slow" answers queries after 300 ms,
// for a hedge to overtake.
var slowFake = fakedriver.Register("rwotel-test-slow", fakedriver.Options{
	AnswerOne: true,
	BeforeAnswer: func(_ context.Context, dsn, _ string) {
		if strings.Contains(dsn, "slow") {
			time.Sleep(300 * time.Millisecond)
		}
	},
})

func newTracing(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp, exp
}

// spanAttrs returns the attributes of the one ended span named name, and
// its events' names with their rwpool.node.
func spanAttrs(t *testing.T, exp *tracetest.InMemoryExporter, name string) (map[string]string, []string) {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1; all: %v", len(found), name, exp.GetSpans())
	}
	attrs := map[string]string{}
	for _, a := range found[0].Attributes {
		attrs[string(a.Key)] = a.Value.Emit()
		if strings.Contains(a.Value.Emit(), sentinel) {
			t.Errorf("attribute %s shows the password: %s", a.Key, a.Value.Emit())
		}
	}
	var events []string
	for _, e := range found[0].Events {
		node := ""
		for _, a := range e.Attributes {
			if a.Key == rwotel.AttrStatementNode {
				node = a.Value.Emit()
			}
		}
		events = append(events, e.Name+" "+node)
	}
	return attrs, events
}

func want(t *testing.T, what string, attrs map[string]string, kv ...string) {
	t.Helper()
	for i := 0; i < len(kv); i += 2 {
		if got := attrs[kv[i]]; got != kv[i+1] {
			t.Errorf("%s: %s = %q, want %q (all: %v)", what, kv[i], got, kv[i+1], attrs)
		}
	}
}

// The application's span of a read, a write, and a read replayed from
// replica to replica until the primary served it: each says where its
// statement ran and why, the failed attempts are events, and no attribute
// shows a DSN's password.
func TestTraceAnnotatesTheApplicationsSpan(t *testing.T) {
	c := newCluster(t, "breaker=off")
	tp, exp := newTracing(t)
	stop, err := rwotel.Trace(c.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	app := tp.Tracer("app")
	run := func(name string, f func(ctx context.Context) error) {
		ctx, span := app.Start(context.Background(), name)
		if err := f(ctx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		span.End()
	}
	var n int
	run("read", func(ctx context.Context) error { return c.DB.QueryRowContext(ctx, "SELECT 1").Scan(&n) })
	run("write", func(ctx context.Context) error { _, err := c.DB.ExecContext(ctx, "UPDATE t SET x = 1"); return err })
	run("replayed", func(ctx context.Context) error { return c.DB.QueryRowContext(ctx, boomQuery).Scan(&n) })

	host := "replica1." + strings.ReplaceAll(t.Name(), "/", "-") + ".test"
	read, events := spanAttrs(t, exp, "read")
	want(t, "read", read, "rwpool.node", "replica1", "rwpool.role", "replica", "rwpool.kind", "read", "rwpool.outcome", "ok",
		"server.address", host, "server.port", "5432", "db.system.name", "other_sql", "rwpool.reason", "read: SELECT/WITH/SHOW/VALUES/TABLE")
	if len(events) != 0 {
		t.Errorf("a read served at once has events: %v", events)
	}
	write, _ := spanAttrs(t, exp, "write")
	want(t, "write", write, "rwpool.node", "primary", "rwpool.role", "primary", "rwpool.kind", "write", "rwpool.outcome", "ok")
	replayed, events := spanAttrs(t, exp, "replayed")
	want(t, "replayed", replayed, "rwpool.node", "primary", "rwpool.outcome", "ok")
	if !strings.HasPrefix(replayed["rwpool.reason"], "fallback") {
		t.Errorf("the replayed read's reason %q, want the primary's fallback", replayed["rwpool.reason"])
	}
	if fmt.Sprint(events) != "[rwpool.replay replica1 rwpool.replay replica2]" {
		t.Errorf("the replayed read's events: %v, want a replay on replica1, then on replica2", events)
	}
	stop()
	run("stopped", func(ctx context.Context) error { return c.DB.QueryRowContext(ctx, "SELECT 1").Scan(&n) })
	if attrs, _ := spanAttrs(t, exp, "stopped"); len(attrs) != 0 {
		t.Errorf("annotated after stop: %v", attrs)
	}
}

// A hedged read: the slow replica's attempt is an event, the hedge's
// answer the span's attributes, with the reason hedged.
func TestTraceHedgedRead(t *testing.T) {
	for _, d := range []string{t.Name() + "-p", t.Name() + "-slow", t.Name() + "-r2"} {
		slowFake.Fresh(d)
	}
	db, err := sql.Open("rwpool", fmt.Sprintf("driver=rwotel-test-slow;primary=%[1]s-p;replica=%[1]s-slow weight=1;replica=%[1]s-r2 weight=0;breaker=off;hedge_after=20ms;hedge_budget=100%%", t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tp, exp := newTracing(t)
	if _, err := rwotel.Trace(db); err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("app").Start(context.Background(), "hedged")
	var n int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	span.End()
	attrs, events := spanAttrs(t, exp, "hedged")
	if !strings.HasPrefix(attrs["rwpool.reason"], "hedged") || attrs["rwpool.node"] == "replica1" {
		t.Errorf("the hedged read's attributes: %v", attrs)
	}
	if fmt.Sprint(events) != "[rwpool.hedge replica1]" {
		t.Errorf("the hedged read's events: %v, want the slow replica's attempt overtaken", events)
	}
}

// With WithSpans, a statement whose context has no span gets one of its
// own, covering its time on the node.
func TestTraceWithSpans(t *testing.T) {
	c := newCluster(t, "breaker=off")
	tp, exp := newTracing(t)
	if _, err := rwotel.Trace(c.DB, rwotel.WithSpans(tp)); err != nil {
		t.Fatal(err)
	}
	mustQuery(t, c.DB, "SELECT 1")
	attrs, _ := spanAttrs(t, exp, "rwpool read")
	want(t, "own span", attrs, "rwpool.node", "replica1", "rwpool.kind", "read", "rwpool.outcome", "ok")
}

// otelsql wrapping rwpool (otelsql.OpenDB of an rwpool Connector): its
// span of each statement carries rwpool's attributes.
func TestTraceUnderOtelsql(t *testing.T) {
	cfg := dsn.NewConfig()
	cfg.Driver = fakeDriverName
	cfg.Primary.DSN = nodeDSN(t, "primary")
	cfg.Replicas = []dsn.Node{{DSN: nodeDSN(t, "replica1"), Weight: 1}}
	cfg.Breaker = false
	conn, err := rwpool.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tp, exp := newTracing(t)
	db := otelsql.OpenDB(conn, otelsql.WithTracerProvider(tp), otelsql.WithAttributes(attribute.String("db", "shop")))
	defer db.Close()
	if _, err := rwotel.TraceConnector(conn); err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("app").Start(context.Background(), "request")
	var n int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	span.End()
	var query []string
	for _, s := range exp.GetSpans() {
		for _, a := range s.Attributes {
			if a.Key == rwotel.AttrStatementNode {
				query = append(query, s.Name+": "+a.Value.Emit())
			}
		}
	}
	if len(query) != 1 || !strings.HasSuffix(query[0], ": replica1") || strings.HasPrefix(query[0], "request") {
		t.Errorf("spans carrying rwpool.node: %v, want otelsql's query span, on replica1", query)
	}
}
