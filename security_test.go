package rwpool_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/rwpool/rwpool"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The sentinel password of every node DSN never appears in an error, a log
// line, Stats or an event, through every failure path the breaker has.
func TestPasswordNeverLeaks(t *testing.T) {
	cc := newCtlCluster(t, 2, "")
	var logs syncBuffer
	if err := rwpool.Configure(cc.db, rwpool.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))); err != nil {
		t.Fatal(err)
	}
	var seen []string
	check := func(what string, s string) {
		t.Helper()
		seen = append(seen, s)
		if strings.Contains(s, sentinelPW) {
			t.Fatalf("%s leaks the password: %s", what, s)
		}
	}
	// Dial failures, statement failures, trips, unavailable errors,
	// fallbacks and recovery.
	cc.replicas[0].SetDown(true)
	cc.primary.SetDown(true)
	for range 50 {
		if _, err := cc.db.Exec("INSERT INTO t VALUES (1)"); err != nil {
			check("write error", err.Error())
			check("write error %+v", fmt.Sprintf("%+v", err))
			for e := err; e != nil; e = errors.Unwrap(e) {
				check("wrapped error", e.Error())
			}
		}
		if _, err := cc.read(t); err != nil {
			check("read error", err.Error())
		}
	}
	waitFor(t, "nodes tripped", func() bool {
		return cc.stats(t, "primary").State == rwpool.Unavailable && cc.stats(t, "replica1").State == rwpool.Unavailable
	})
	cc.replicas[0].SetDown(false)
	cc.primary.SetDown(false)
	waitFor(t, "nodes recovered", func() bool {
		return cc.stats(t, "primary").State == rwpool.Available && cc.stats(t, "replica1").State == rwpool.Available
	})
	s, err := rwpool.Stats(cc.db)
	if err != nil {
		t.Fatal(err)
	}
	check("Snapshot.String", s.String())
	check("Snapshot %+v", fmt.Sprintf("%+v %#v", s, s))
	check("logs", logs.String())
	cc.mu.Lock()
	events := append([]rwpool.Event(nil), cc.events...)
	cc.mu.Unlock()
	for _, e := range events {
		check("event", fmt.Sprintf("%+v %v", e, e.Cause))
	}
	if !strings.Contains(logs.String(), "unavailable") || !strings.Contains(logs.String(), "available again") {
		t.Fatalf("no transition was logged: %s", logs.String())
	}
	if len(seen) < 10 {
		t.Fatalf("only %d outputs checked: the failure paths were not exercised", len(seen))
	}
}

// Node DSNs, TLS settings included, reach the real driver byte for byte.
func TestNodeDSNPassesThroughUntouched(t *testing.T) {
	primary := t.Name() + " host=db1 sslmode=verify-full sslrootcert=/etc/ssl/ca.pem password='p a;s\\'s' application_name=x"
	replica := t.Name() + "-r user:pw@tcp(db2:3306)/shop?tls=custom&parseTime=true&loc=UTC"
	p, r := ctl.Fresh(primary), ctl.Fresh(replica)
	quote := func(s string) string { return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'" }
	db, err := sql.Open("rwpool", "driver=rwpool-test-ctl;primary="+quote(primary)+";replica="+quote(replica))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var node string
	if err := db.QueryRow("SELECT node").Scan(&node); err != nil {
		t.Fatal(err)
	}
	// ctl keys its nodes by the exact DSN it was opened with.
	if p.Served() == 0 || r.Served() == 0 || node != replica {
		t.Fatalf("the driver did not receive the node DSNs verbatim (primary served %d, replica served %d, read answered by %q)",
			p.Served(), r.Served(), node)
	}
}
