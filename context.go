package rwpool

import "context"

type primaryKey struct{}

// WithPrimary returns a context that sends every statement run with it to
// the primary, whatever the statement is. Use it for reads that must see the
// latest writes.
func WithPrimary(ctx context.Context) context.Context {
	return context.WithValue(ctx, primaryKey{}, true)
}

// forcePrimary reports whether ctx was made by WithPrimary.
func forcePrimary(ctx context.Context) bool {
	v, _ := ctx.Value(primaryKey{}).(bool)
	return v
}
