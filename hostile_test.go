package rwpool_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/fakedriver"
)

// Hostile input: each case ends in a clear error or a correct answer, never
// a panic or a leak (goleak checks every test of the package in TestMain).

func TestHostileStatements(t *testing.T) {
	cc := newCtlCluster(t, 1, "")
	big := "SELECT '" + strings.Repeat("x", 1<<20) + "'"
	bigWrite := "INSERT INTO t VALUES ('" + strings.Repeat("y", 1<<20) + "')"
	cases := []string{
		big,
		"SELECT 1\x00; DELETE FROM t",
		"\x00SELECT 1",
		"SELECT '\xff\xfe\xfd' FROM t",
		"\xff\xfeSELECT 1",
		"SELECT 1 /* unterminated",
		"SELECT 'unterminated",
		"",
		"   ",
		strings.Repeat("(", 100000) + "SELECT 1",
	}
	for _, q := range cases {
		name := q
		if len(name) > 40 {
			name = name[:40]
		}
		var node string
		err := cc.db.QueryRow(q).Scan(&node)
		if err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	start := time.Now()
	if _, err := cc.db.Exec(bigWrite); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("a 1 MB statement took %v", took)
	}
	// Statements a replica must never see went to the primary.
	var r struct{ node string }
	if err := cc.db.QueryRow("SELECT 1\x00; DELETE FROM t").Scan(&r.node); err != nil || !strings.Contains(r.node, "-p ") {
		t.Fatalf("a multi-statement with a write behind a NUL byte ran on %q (%v)", r.node, err)
	}
}

func TestHostileDSNs(t *testing.T) {
	many := &strings.Builder{}
	many.WriteString("driver=rwpool-test-ctl;primary=p")
	for i := range 10000 {
		fmt.Fprintf(many, ";replica='r%d password=%s'", i, sentinelPW)
	}
	cases := []struct{ dsn, want string }{
		{many.String(), "too many replicas"},
		{"driver=rwpool-test-ctl;primary=p;pool_size=0", "pool_size"},
		{"driver=rwpool-test-ctl;primary=p;pool_size=99999999999999999999", "pool_size"},
		{"driver=rwpool-test-ctl;primary=p;pool_size=-1", "pool_size"},
		{"driver=rwpool-test-ctl;primary=p;max_waiters=-5", "max_waiters"},
		{"driver=rwpool-test-ctl;primary=p;check_interval=0s", "check_interval"},
		{"driver=rwpool-test-ctl;primary=p;acquire_timeout=1e999h", "acquire_timeout"},
		{"driver=rwpool-test-ctl;primary='p\x00 password=" + sentinelPW + "';bogus", "key=value"},
		{"driver=rwpool-test-ctl;primary='\xff\xfe password=" + sentinelPW + "';replica=\xff", ""},
	}
	for _, c := range cases {
		db, err := sql.Open("rwpool", c.dsn)
		if err == nil {
			db.Close()
			if c.want != "" {
				t.Errorf("%.60q: opened, want an error about %s", c.dsn, c.want)
			}
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), sentinelPW) {
			t.Errorf("%.60q: %v", c.dsn, err)
		}
	}
	// The largest pool_size allowed opens without allocating for it.
	db, err := sql.Open("rwpool", "driver=rwpool-test-ctl;primary=huge-p;pool_size=1048576")
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}

func TestCancelledContextAndStatementsAfterClose(t *testing.T) {
	cc := newCtlCluster(t, 1, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cc.db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); !errors.Is(err, context.Canceled) {
		t.Fatalf("write with a cancelled context: %v", err)
	}
	var node string
	if err := cc.db.QueryRowContext(ctx, "SELECT node").Scan(&node); !errors.Is(err, context.Canceled) {
		t.Fatalf("read with a cancelled context: %v", err)
	}
	for _, n := range []string{"primary", "replica1"} {
		if st := cc.stats(t, n); st.State != rwpool.Available || st.InUse != 0 {
			t.Fatalf("a cancelled context must not trip or leak: %+v", st)
		}
	}
	cc.db.Close()
	if _, err := cc.db.Exec("INSERT INTO t VALUES (1)"); err == nil {
		t.Fatal("statement after Close succeeded")
	}
	if err := cc.db.QueryRow("SELECT node").Scan(&node); err == nil {
		t.Fatal("query after Close succeeded")
	}
}

func TestCloseRacesWithInFlightStatements(t *testing.T) {
	for round := range 5 {
		cc := newCtlCluster(t, 2, "")
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; ; i++ {
					var err error
					switch (w + i) % 4 {
					case 0:
						_, err = cc.db.Exec("INSERT INTO t VALUES (1)")
					case 1:
						var node string
						err = cc.db.QueryRow("SELECT node").Scan(&node)
					case 2:
						var tx *sql.Tx
						if tx, err = cc.db.Begin(); err == nil {
							tx.Exec("INSERT INTO t VALUES (2)")
							err = tx.Commit()
						}
					case 3:
						var c *sql.Conn
						if c, err = cc.db.Conn(context.Background()); err == nil {
							c.ExecContext(context.Background(), "SET x = 1")
							c.Close()
						}
					}
					if err != nil && i > 0 {
						return // closed under us: the expected end
					}
				}
			}()
		}
		close(start)
		time.Sleep(time.Duration(round) * 2 * time.Millisecond) // let some traffic start
		if err := cc.db.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for i, n := range append([]*fakedriver.Node{cc.primary}, cc.replicas...) {
			waitFor(t, fmt.Sprintf("node %d: real connections closed", i), func() bool { return n.Open() == 0 })
		}
	}
}
