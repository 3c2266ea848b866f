package rwotel

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/rwpool/rwpool"
)

// Span attributes and events Trace adds.
const (
	AttrReason          = attribute.Key("rwpool.reason")                // why the statement went where it did (rwpool.Route's Reason): a rule, a fallback, a causal decision, a hedge
	AttrConnWait        = attribute.Key("rwpool.conn_wait_seconds")     // what it waited for a connection of the node's pool
	AttrFailoverWait    = attribute.Key("rwpool.failover_wait_seconds") // what a write waited for a writable primary (failover_wait)
	AttrDurationOnNode  = attribute.Key("rwpool.duration_seconds")      // its time on the node
	attrServerAddress   = attribute.Key("server.address")
	attrServerPort      = attribute.Key("server.port")
	EventReplay         = "rwpool.replay" // an attempt failed on a node and the read is replayed on another (attributes: rwpool.node, error.type)
	EventHedge          = "rwpool.hedge"  // an attempt was overtaken: by its hedge on another node, or a hedge by the read it hedged (rwpool.node)
	EventTrip           = "rwpool.trip"   // the statement met a node found unavailable (rwpool.node)
	spanNamePrefix      = "rwpool "
	tracerInstrumentKey = "github.com/rwpool/rwpool/metrics/otel"
)

// TraceOption configures Trace.
type TraceOption func(*traceConfig)

type traceConfig struct {
	tp trace.TracerProvider
}

// WithSpans makes Trace start a span of its own, from tp, for each
// statement whose context carries no recording span (one named "rwpool
// read", "rwpool write" or "rwpool transaction", of kind client, covering
// the statement's time on its node). Without it, such statements are not
// traced: the application's spans, or otelsql's when it wraps rwpool, are
// the ones annotated.
func WithSpans(tp trace.TracerProvider) TraceOption {
	return func(c *traceConfig) { c.tp = tp }
}

// Trace adds a statement observer (rwpool.WithStatementObserver) to db that
// annotates each statement's trace span (trace.SpanFromContext of the
// statement's context: the application's, or otelsql's when it wraps
// rwpool) with where the statement ran and why: rwpool.node, rwpool.role,
// server.address and server.port of the node (never a DSN or password),
// db.system.name, rwpool.reason (the route's reason: a rule, a fallback to
// the primary, a session's or a staleness bound's causal decision, a
// hedge), rwpool.kind, rwpool.outcome, the time waited for a connection
// and for a failover, and the time on the node. Attempts that did not
// serve the statement are events on the span: EventReplay (a read that
// failed on a node and was replayed on another), EventHedge (an attempt
// overtaken by a hedge, or a hedge overtaken), EventTrip (a node found
// unavailable). A span covering several statements carries the last
// one's attributes and every one's events.
//
// db must have been opened with rwpool. The returned stop ends the
// annotation (a statement observer cannot be removed: it then does
// nothing).
func Trace(db *sql.DB, opts ...TraceOption) (stop func(), err error) {
	if db == nil {
		return nil, errors.New("rwotel: nil *sql.DB")
	}
	t := newTracer(opts)
	if err := rwpool.Configure(db, rwpool.WithStatementObserver(t.observe)); err != nil {
		return nil, err
	}
	return func() { t.off.Store(true) }, nil
}

// TraceConnector is Trace for programs that open their *sql.DB with
// sql.OpenDB(c).
func TraceConnector(c *rwpool.Connector, opts ...TraceOption) (stop func(), err error) {
	if c == nil {
		return nil, errors.New("rwotel: nil *rwpool.Connector")
	}
	t := newTracer(opts)
	rwpool.WithStatementObserver(t.observe)(c)
	return func() { t.off.Store(true) }, nil
}

type tracer struct {
	cfg traceConfig
	tr  trace.Tracer // nil without WithSpans
	off atomic.Bool
}

func newTracer(opts []TraceOption) *tracer {
	t := &tracer{}
	for _, o := range opts {
		o(&t.cfg)
	}
	if t.cfg.tp != nil {
		t.tr = t.cfg.tp.Tracer(tracerInstrumentKey)
	}
	return t
}

// observe is the statement observer.
func (t *tracer) observe(ctx context.Context, s rwpool.StatementInfo) {
	if t.off.Load() {
		return
	}
	span := trace.SpanFromContext(ctx)
	own := false
	if !span.IsRecording() {
		if t.tr == nil {
			return
		}
		_, span = t.tr.Start(ctx, spanNamePrefix+s.Kind, trace.WithTimestamp(s.Start), trace.WithSpanKind(trace.SpanKindClient))
		own = true
	}
	node := AttrStatementNode.String(s.Node)
	switch s.Outcome {
	case "replayed":
		span.AddEvent(EventReplay, trace.WithTimestamp(s.Start.Add(s.Duration)), trace.WithAttributes(node, attrErrorType.String(errorType(s.Err))))
	case "hedged":
		span.AddEvent(EventHedge, trace.WithTimestamp(s.Start.Add(s.Duration)), trace.WithAttributes(node))
	}
	if s.Err != nil && errors.Is(s.Err, rwpool.ErrUnavailable) {
		span.AddEvent(EventTrip, trace.WithTimestamp(s.Start.Add(s.Duration)), trace.WithAttributes(node))
	}
	if s.Outcome == "ok" || s.Outcome == "error" || own {
		attrs := []attribute.KeyValue{
			node, AttrStatementRole.String(s.Role), attrSystem.String(s.System),
			AttrStatementKind.String(s.Kind), AttrStatementOutcome.String(s.Outcome), AttrReason.String(s.Reason),
			AttrConnWait.Float64(s.ConnWait.Seconds()), AttrDurationOnNode.Float64(s.Duration.Seconds()),
		}
		if s.FailoverWait > 0 {
			attrs = append(attrs, AttrFailoverWait.Float64(s.FailoverWait.Seconds()))
		}
		if s.ServerAddress != "" {
			attrs = append(attrs, attrServerAddress.String(s.ServerAddress))
		}
		if p, err := strconv.Atoi(s.ServerPort); err == nil {
			attrs = append(attrs, attrServerPort.Int(p))
		}
		if s.Err != nil {
			attrs = append(attrs, attrErrorType.String(errorType(s.Err)))
		}
		span.SetAttributes(attrs...)
	}
	if own {
		if s.Err != nil {
			span.SetStatus(codes.Error, errorType(s.Err))
		}
		span.End(trace.WithTimestamp(s.Start.Add(s.Duration)))
	}
}
