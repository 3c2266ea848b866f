package rwpool

import (
	"context"
	"database/sql/driver"
)

// tx is a transaction on the lease's pinned connection.
type tx struct {
	vc      *conn
	tx      driver.Tx
	session *session // the causal session a read-write primary transaction belongs to
}

// Commit commits the real transaction and releases the pin it held. After
// a statement of the transaction was abandoned at its deadline, the real
// connection belongs to the goroutine still in the driver: the transaction
// is lost and must not be touched.
func (t *tx) Commit() error {
	if t.vc.broken {
		t.vc.tx = nil
		return driver.ErrBadConn
	}
	err := t.tx.Commit()
	if err == nil && t.session != nil && t.vc.pin != nil {
		// tx.Commit has no context: the position read is bounded by
		// probe_timeout.
		t.vc.sessionWrote(context.Background(), t.session)
	}
	t.vc.endTx(err)
	return err
}

// Rollback rolls the real transaction back and releases the pin it held.
func (t *tx) Rollback() error {
	if t.vc.broken {
		t.vc.tx = nil
		return driver.ErrBadConn
	}
	err := t.tx.Rollback()
	t.vc.endTx(err)
	return err
}
