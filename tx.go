package rwpool

import "database/sql/driver"

// tx is a transaction on the lease's pinned connection.
type tx struct {
	vc *conn
	tx driver.Tx
}

// Commit commits the real transaction and releases the pin it held.
func (t *tx) Commit() error {
	err := t.tx.Commit()
	t.vc.endTx(err)
	return err
}

// Rollback rolls the real transaction back and releases the pin it held.
func (t *tx) Rollback() error {
	err := t.tx.Rollback()
	t.vc.endTx(err)
	return err
}
