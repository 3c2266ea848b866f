package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"
)

func open(t *testing.T, s *Server) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/%s?interpolateParams=true&timeout=2s", s.Addr, Database))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func start(t *testing.T, opts Options) *Cluster {
	t.Helper()
	c, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestIdentity(t *testing.T) {
	c := start(t, Options{})
	if len(c.Replicas) != 2 {
		t.Fatalf("%d replicas", len(c.Replicas))
	}
	for _, s := range c.Servers() {
		var name, version string
		if err := open(t, s).QueryRow("SELECT (SELECT name FROM "+NodeTable+"), version()").Scan(&name, &version); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if name != s.Name {
			t.Errorf("server at %s says it is %q, want %q", s.Addr, name, s.Name)
		}
		t.Logf("%s %s %s", s.Name, s.Addr, version)
	}
}

func TestReplication(t *testing.T) {
	c := start(t, Options{Lag: 20 * time.Millisecond})
	p := open(t, c.Primary)
	for _, q := range []string{
		"CREATE TABLE kv (id INT PRIMARY KEY, v BIGINT NOT NULL)",
		"INSERT INTO kv VALUES (1, 10), (2, 20)",
	} {
		if _, err := p.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i := range 50 {
		if _, err := p.Exec("UPDATE kv SET v = v + ? WHERE id = ?", i, 1+i%2); err != nil {
			t.Fatal(err)
		}
	}
	var want int64
	if err := p.QueryRow("SELECT SUM(v) FROM kv").Scan(&want); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Logged(); got != 52 {
		t.Errorf("Logged = %d, want 52", got)
	}
	for _, r := range c.Replicas {
		var got int64
		if err := open(t, r).QueryRow("SELECT SUM(v) FROM kv").Scan(&got); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if got != want {
			t.Errorf("%s: sum %d, primary %d", r.Name, got, want)
		}
	}
}

func TestReplicaIsReadOnly(t *testing.T) {
	c := start(t, Options{Replicas: 1})
	r := open(t, c.Replicas[0])
	_, err := r.Exec("CREATE TABLE x (id INT PRIMARY KEY)")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1290 {
		t.Fatalf("write on a replica: %v, want error 1290", err)
	}
	if _, err := r.Exec("SET @@session.sql_mode = ''"); err != nil {
		t.Errorf("SET on a replica: %v", err)
	}
}

func TestPreparedWriteRefused(t *testing.T) {
	c := start(t, Options{Replicas: 1})
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/%s", c.Primary.Addr, Database))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE kv (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO kv VALUES (?)", 1); err == nil {
		t.Fatal("a prepared write was accepted (and would not be replicated)")
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM kv WHERE id > ?", 0).Scan(&n); err != nil {
		t.Fatalf("prepared read: %v", err)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWaitQuiet(t *testing.T) {
	c := start(t, Options{Lag: 10 * time.Millisecond})
	p := open(t, c.Primary)
	if _, err := p.Exec("CREATE TABLE kv (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		p.Exec("INSERT INTO kv VALUES (1)")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.WaitQuiet(ctx, 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if c.Logged() != 2 || c.Behind("replica1") != 0 || c.Behind("replica2") != 0 {
		t.Errorf("logged %d, behind %d and %d", c.Logged(), c.Behind("replica1"), c.Behind("replica2"))
	}
}

// TestReadOnlyVariable: each server answers @@read_only for its own role,
// though the engine's system variables are shared by the process.
func TestReadOnlyVariable(t *testing.T) {
	c := start(t, Options{Replicas: 1})
	for i, db := range []*sql.DB{open(t, c.Primary), open(t, c.Replicas[0])} {
		var ro int
		if err := db.QueryRow("SELECT @@read_only").Scan(&ro); err != nil {
			t.Fatal(err)
		}
		if want := i; ro != want {
			t.Errorf("server %d: @@read_only = %d, want %d", i, ro, want)
		}
	}
}
