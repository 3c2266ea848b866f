package rwpool_test

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rwpool/rwpool/internal/fakedriver"
)

// lostWrites counts the INSERTs the fake primary received; each fails as
// lib/pq fails a statement whose connection the server closed after
// getting it: driver.ErrBadConn, though the write may have been applied.
var lostWrites atomic.Int64

var lostWrite = fakedriver.Register("rwpool-test-lostwrite", fakedriver.Options{Record: true, Fail: func(_, q string) error {
	if strings.HasPrefix(q, "INSERT") {
		lostWrites.Add(1)
		return driver.ErrBadConn
	}
	return nil
}})

// A write that loses its connection on a driver whose driver.ErrBadConn
// does not mean "nothing was sent" is sent once: rwpool does not send it
// again, and its error does not wrap driver.ErrBadConn, so database/sql
// does not either (found by the failover tests: a lib/pq write applied
// twice on the promoted primary).
func TestLostWriteIsNotSentAgain(t *testing.T) {
	lostWrite.Fresh("lw-p")
	db, err := sql.Open("rwpool", "driver=rwpool-test-lostwrite;primary=lw-p;check_interval=1h")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lostWrites.Store(0)
	_, err = db.Exec("INSERT INTO t VALUES (1)")
	if err == nil || errors.Is(err, driver.ErrBadConn) || !strings.Contains(err.Error(), "may have been applied") || !strings.Contains(err.Error(), "primary") {
		t.Fatalf("lost write: %v; want an error naming the node, saying it may have been applied, not wrapping driver.ErrBadConn", err)
	}
	if n := lostWrites.Load(); n != 1 {
		t.Fatalf("the write was sent %d times, want once", n)
	}
	// A read that loses its connection is still replayed: it applies
	// nothing.
	if _, err := db.Query("SELECT 1"); err != nil {
		t.Fatalf("read: %v", err)
	}
}
