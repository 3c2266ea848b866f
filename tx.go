package rwpool

import "database/sql/driver"

// tx is a transaction on the lease's pinned connection.
type tx struct {
	vc *conn
	tx driver.Tx
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
