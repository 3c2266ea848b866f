package rwpool

import (
	"context"
	"time"
)

type ctxKey struct{}

// ctxOpts is everything rwpool reads from a statement's context, kept
// under one key so a statement costs one context lookup.
type ctxOpts struct {
	primary   bool
	route     *Route
	session   *session      // WithSession
	staleness time.Duration // WithMaxStaleness
}

func optsOf(ctx context.Context) ctxOpts {
	o, _ := ctx.Value(ctxKey{}).(ctxOpts)
	return o
}

// WithPrimary returns a context that sends every statement run with it to
// the primary, whatever the statement is. Use it for reads that must see the
// latest writes. Unlike a write, it does not pin the connection's lease.
func WithPrimary(ctx context.Context) context.Context {
	o := optsOf(ctx)
	o.primary = true
	return context.WithValue(ctx, ctxKey{}, o)
}

// Route says where a statement ran and why.
type Route struct {
	Node    string // the node's name, e.g. "replica2"
	Role    string // "primary" or "replica"
	Reason  string // why it went there, e.g. "read: SELECT/WITH/SHOW/VALUES/TABLE", "transaction", "fallback: no replica available"
	Replays int    // nodes that failed before this one served it
}

// WithRoute returns a context that records in r where each statement run
// with it went, and why (the last statement wins). It answers the question
// "which node served this?" in logs, traces and tests:
//
//	var r rwpool.Route
//	err := db.QueryRowContext(rwpool.WithRoute(ctx, &r), "SELECT …").Scan(&v)
//	log.Printf("served by %s (%s): %s", r.Node, r.Role, r.Reason)
//
// r is written by the goroutine running the statement; read it after the
// statement returns.
func WithRoute(ctx context.Context, r *Route) context.Context {
	o := optsOf(ctx)
	o.route = r
	return context.WithValue(ctx, ctxKey{}, o)
}

// record fills the caller's Route, if it asked for one.
func (o ctxOpts) record(n *node, reason string, replays int) {
	if o.route != nil {
		*o.route = Route{Node: n.cfg.Name, Role: n.role().String(), Reason: reason, Replays: replays}
	}
}
