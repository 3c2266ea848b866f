package rwpool

import (
	"database/sql"
	"log/slog"
)

// Option sets how a Connector reports what happens to its nodes. The same
// options serve both ways of opening rwpool: pass them to NewConnector, or,
// for a *sql.DB opened with sql.Open("rwpool", …), which takes no options,
// to Configure. Either may be called again later; the last setting wins.
type Option func(*Connector)

// WithLogger logs every node transition, once, through l: a warning when a
// node becomes unavailable or lagging, or reports an unexpected role (with
// the cause), an info line when it comes back (with how long it was out).
// rwpool logs nothing else, and only through log/slog. A nil l, the
// default, logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(c *Connector) { c.logger.Store(l) }
}

// WithEventHandler calls f for every node transition (see Event),
// synchronously and in order for each node, from the goroutine that
// noticed it: f must not block for long. A nil f, the default, calls
// nothing.
func WithEventHandler(f func(Event)) Option {
	return func(c *Connector) { c.handler.Store(&f) }
}

// Configure applies opts to the Connector behind db, a *sql.DB opened with
// rwpool (by sql.Open("rwpool", …) or sql.OpenDB with a *Connector):
//
//	db, err := sql.Open("rwpool", dsn)
//	if err != nil { … }
//	err = rwpool.Configure(db,
//		rwpool.WithLogger(slog.Default()),
//		rwpool.WithEventHandler(func(e rwpool.Event) { … }))
//
// It returns ErrNotRWPool for any other *sql.DB. Health checks start when
// the Connector is made, so an event may precede Configure; pass the
// options to NewConnector to see every one.
func Configure(db *sql.DB, opts ...Option) error {
	c := connectorOf(db)
	if c == nil {
		return ErrNotRWPool
	}
	for _, o := range opts {
		o(c)
	}
	return nil
}
