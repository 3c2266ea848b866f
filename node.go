package rwpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/health"
	"github.com/rwpool/rwpool/pool"
)

// node is one database server: its configuration, pool, health and counters.
type node struct {
	cfg    dsn.Node
	pool   *pool.Pool
	health *health.Node
	conn   driver.Connector // the real driver's connector for this node

	served atomic.Uint64 // statements and transactions routed here
	errors atomic.Uint64 // statements that failed here
}

// acquire borrows a real connection from the node's pool.
func (n *node) acquire(ctx context.Context) (*pool.Conn, error) {
	pc, err := n.pool.Acquire(ctx)
	if err != nil {
		n.errors.Add(1)
		return nil, err
	}
	n.served.Add(1)
	return pc, nil
}

// done returns a connection after a statement that ended with err: a
// connection the driver reports broken is closed, anything else goes back.
func (n *node) done(pc *pool.Conn, err error) {
	if err != nil {
		n.noteErr(err)
		if isBadConn(err) {
			pc.Destroy()
			return
		}
	}
	pc.Release()
}

// noteErr counts a statement error on the node.
func (n *node) noteErr(err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		n.errors.Add(1)
	}
}

// isBadConn reports whether err means the real connection can't be reused.
func isBadConn(err error) bool {
	return errors.Is(err, driver.ErrBadConn)
}

// redactingConnector hides the node DSN's secrets in dial errors: drivers
// may echo the DSN they were given.
type redactingConnector struct {
	driver.Connector
	dsn string
}

func (r redactingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := r.Connector.Connect(ctx)
	if err != nil {
		return nil, redactErr(err, r.dsn)
	}
	return c, nil
}
