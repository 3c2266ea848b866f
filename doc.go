// Package rwpool is a database/sql driver that makes one primary and any
// number of weighted replicas of a real driver look like one database.
//
// Import the real driver as usual and open rwpool with a composite DSN
// (see package dsn for its grammar and keys):
//
//	import (
//		"database/sql"
//
//		_ "github.com/lib/pq"
//		_ "github.com/rwpool/rwpool"
//	)
//
//	db, err := sql.Open("rwpool", "driver=postgres;"+
//		"primary='host=db1 user=app dbname=shop';"+
//		"replica='host=db2 user=app dbname=shop' weight=3;"+
//		"replica='host=db3 user=app dbname=shop' weight=1")
//
// or build a Config in Go (dsn.NewConfig) and open it with sql.OpenDB and
// the Connector NewConnector returns for it.
//
// # Routing
//
// Every statement is routed by its SQL (package routing classifies it) and
// the state of its connection: reads go to a replica chosen by weighted
// random among the available ones; writes, locking reads, statements that
// touch session state and read-write transactions go to the primary and
// pin the connection to it until database/sql takes the connection back;
// read-only transactions go to a replica (readonly_tx=replica, the
// default) or the primary. WithPrimary sends a context's statements to the
// primary, WithSession gives them read-your-writes consistency, and
// WithRoute reports where each went and why.
//
// # Failures
//
// rwpool keeps its own pool of real connections per node (package pool);
// a database/sql connection to rwpool is a cheap virtual connection that
// borrows a real one per statement. Each node has a circuit breaker: a
// node found dead or hung becomes unavailable, statements that need it
// fail at once with an error wrapping ErrUnavailable, reads move to other
// replicas and then to the primary (fallback=primary), and a background
// probe brings it back. A read that fails at the connection level before
// returning a row is replayed on another node, and reads in flight on a
// node that becomes unavailable are cancelled and replayed at once; a read
// running past probe_timeout has its node probed, so a hung node is found
// within about twice probe_timeout. With hedge_after, a query with no
// answer after that long is also started on another node, within
// hedge_budget (see the README's "Slow and hung replicas"). Node transitions are
// reported as Events (Configure, WithEventHandler, WithLogger), and Stats
// reports every node's state, pool and counters. When the primary changes,
// rwpool follows: it fences a demoted primary behind a moved endpoint,
// follows promotions with follow_promotion=on, and lets writes wait out a
// failover with failover_wait (see the README's Failover section).
//
// # Errors
//
// Errors returned by the real driver pass through unchanged, so code that
// inspects *pq.Error or *mysql.MySQLError keeps working; errors made by
// rwpool itself wrap their cause with %w, name the node and never contain
// a password. Branch on ErrUnavailable, ErrReadOnly, ErrSplitBrain,
// ErrAcquireTimeout, ErrTooManyWaiters and ErrClosed with errors.Is.
package rwpool
