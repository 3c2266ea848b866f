package rwpool

import (
	"context"
	"database/sql/driver"
)

// tx is a transaction on the lease's pinned connection.
type tx struct {
	vc  *conn
	tx  driver.Tx
	ctx context.Context // BeginTx's, for the statement observers of COMMIT and ROLLBACK
}

// Commit commits the real transaction and ends it on the lease. After the
// lease was lost (a statement of the transaction was abandoned at its
// deadline, or its connection broke), the transaction is gone and the real
// connection must not be touched.
func (t *tx) Commit() error {
	l := &t.vc.lease
	if err := l.usable(); err != nil {
		l.tx = nil
		return err
	}
	n := l.n
	start := stmtStart{at: monoNow(), ctx: t.ctx}
	err := t.tx.Commit()
	t.vc.c.txEnds(n, start, err)
	// The sessions the transaction was begun with or that wrote in it
	// (lease.txSessions). tx.Commit has no context: the position read is
	// bounded by probe_timeout.
	t.vc.committed(context.Background(), err)
	l.endTx(err, t.vc.c.primaryNode())
	if err != nil && outcomeOf(err) != finished && n != nil && n.isPrimary() {
		// The connection was lost with the COMMIT in flight: the
		// transaction may have committed or not.
		return writeLost(n, "the COMMIT", err)
	}
	return txEndLost(n, "COMMIT", err)
}

// Rollback rolls the real transaction back and ends it on the lease.
func (t *tx) Rollback() error {
	l := &t.vc.lease
	if err := l.usable(); err != nil {
		l.tx = nil
		return err
	}
	start := stmtStart{at: monoNow(), ctx: t.ctx}
	n := l.n
	err := t.tx.Rollback()
	t.vc.c.txEnds(n, start, err)
	l.txSessions = nil
	l.endTx(err, t.vc.c.primaryNode())
	return txEndLost(n, "ROLLBACK", err)
}

// txEnds records a COMMIT or ROLLBACK that began at start on n (nil once
// the lease lost its pin: nothing to record).
func (c *Connector) txEnds(n *node, start stmtStart, err error) {
	if n == nil {
		return
	}
	out := outOK
	if err != nil {
		out = outError
	}
	c.statementEnds(n, kindTx, out, start, reasonTx, err)
}
