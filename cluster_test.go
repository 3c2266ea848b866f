package rwpool_test

import (
	"database/sql"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
)

// go-sql-driver/mysql logs every broken connection to stderr; the fault
// tests break hundreds on purpose, and assert on what matters instead.
func init() { mysql.SetLogger(log.New(io.Discard, "", 0)) }

// cluster describes one of the real replicated test clusters that
// scripts/cluster.sh starts on loopback and describes in RWPOOL_* variables.
type cluster struct {
	name      string // "postgres" (lib/pq), "pgx" (pgx's stdlib driver, same servers) or "mariadb"
	driver    string // the database/sql driver name rwpool routes to
	primary   string // host:port
	replicas  []string
	nodeDSN   func(addr string) string
	portQuery string // returns the port of the server that answers
}

// realClusters returns the clusters the environment describes. Without
// them a test skips, except under CI=true, where it fails: CI must never
// pass by not testing.
func realClusters(t testing.TB) []*cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	user, pw, db := os.Getenv("RWPOOL_DB_USER"), os.Getenv("RWPOOL_DB_PASSWORD"), os.Getenv("RWPOOL_DB_NAME")
	pg, my := os.Getenv("RWPOOL_PG_PRIMARY"), os.Getenv("RWPOOL_MY_PRIMARY")
	if pg == "" || my == "" || user == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but the test clusters are not described (RWPOOL_PG_PRIMARY, RWPOOL_MY_PRIMARY); run ./scripts/test.sh")
		}
		t.Skip("no test clusters: run ./scripts/test.sh (or scripts/cluster.sh up and source its env file)")
	}
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	// lib/pq and pgx both take PostgreSQL's keyword/value connection
	// strings; connect_timeout is in seconds for both.
	pgDSN := func(addr string) string {
		host, port, _ := strings.Cut(addr, ":")
		return fmt.Sprintf("host=%s port=%s user=%s password=%s dbname=%s sslmode=disable connect_timeout=5",
			host, port, user, pw, db)
	}
	return []*cluster{
		{
			name: "postgres", driver: "postgres", primary: pg,
			replicas:  split(os.Getenv("RWPOOL_PG_REPLICAS")),
			nodeDSN:   pgDSN,
			portQuery: "SELECT inet_server_port()",
		},
		{
			name: "pgx", driver: "pgx", primary: pg,
			replicas:  split(os.Getenv("RWPOOL_PG_REPLICAS")),
			nodeDSN:   pgDSN,
			portQuery: "SELECT inet_server_port()",
		},
		{
			name: "mariadb", driver: "mysql", primary: my,
			replicas: split(os.Getenv("RWPOOL_MY_REPLICAS")),
			nodeDSN: func(addr string) string {
				return fmt.Sprintf("%s:%s@tcp(%s)/%s?timeout=5s", user, pw, addr, db)
			},
			portQuery: "SELECT @@port",
		},
	}
}

// isPostgres reports whether the cluster is PostgreSQL, through either
// driver: SQL dialect, placeholders ($1) and server behaviour are the same
// for lib/pq and pgx.
func (cl *cluster) isPostgres() bool { return cl.name == "postgres" || cl.name == "pgx" }

// forEachCluster runs f as a subtest on every real cluster.
func forEachCluster(t *testing.T, f func(t *testing.T, cl *cluster)) {
	for _, cl := range realClusters(t) {
		t.Run(cl.name, func(t *testing.T) { f(t, cl) })
	}
}

// dsn returns a composite DSN for the cluster: weights apply to replicas in
// order (default 1 each); extra items are appended.
func (cl *cluster) dsn(extra string, weights ...int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "driver=%s;\nprimary='%s';", cl.driver, cl.nodeDSN(cl.primary))
	for i, r := range cl.replicas {
		w := 1
		if i < len(weights) {
			w = weights[i]
		}
		fmt.Fprintf(&b, "\nreplica='%s' weight=%d;", cl.nodeDSN(r), w)
	}
	b.WriteString(extra)
	return b.String()
}

// open opens rwpool over the cluster and closes it when the test ends.
func (cl *cluster) open(t *testing.T, extra string, weights ...int) *sql.DB {
	t.Helper()
	db, err := sql.Open("rwpool", cl.dsn(extra, weights...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatalf("%s: ping: %v", cl.name, err)
	}
	return db
}

// port returns the port of the node that ran the cluster's port query via q.
func (cl *cluster) port(t *testing.T, q interface {
	QueryRow(string, ...any) *sql.Row
}) string {
	t.Helper()
	var port string
	if err := q.QueryRow(cl.portQuery).Scan(&port); err != nil {
		t.Fatalf("%s: %v", cl.portQuery, err)
	}
	return port
}

func portOf(addr string) string {
	_, p, _ := strings.Cut(addr, ":")
	return p
}

func (cl *cluster) replicaPorts() map[string]int {
	m := map[string]int{}
	for i, r := range cl.replicas {
		m[portOf(r)] = i
	}
	return m
}

// waitReplicas waits until every replica, asked directly through the real
// driver, answers q (which must return one row) with want: replicas replay
// the primary's writes a moment later, and a test that writes and then reads
// on a replica must wait for that.
func (cl *cluster) waitReplicas(t *testing.T, q string, want string) {
	t.Helper()
	for _, r := range cl.replicas {
		db, err := sql.Open(cl.driver, cl.nodeDSN(r))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			var got string
			err := db.QueryRow(q).Scan(&got)
			if err == nil && got == want {
				break
			}
			if time.Now().After(deadline) {
				db.Close()
				t.Fatalf("replica %s: %q = %q (%v) after 10s, want %q", r, q, got, err, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		db.Close()
	}
}
