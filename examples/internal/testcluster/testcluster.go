// Package testcluster finds the replicated test clusters that
// scripts/cluster.sh starts and describes in RWPOOL_* variables (see
// cluster_test.go in the root module), for the examples' integration tests.
// Without them a test skips, except under CI=true, where it fails.
package testcluster

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rwpool/rwpool"

	_ "github.com/go-sql-driver/mysql" // "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // "pgx"
	_ "github.com/lib/pq"              // "postgres"
)

// Backend is one real driver over one replicated cluster.
type Backend struct {
	Name      string   // "postgres" (lib/pq), "pgx" (same servers, pgx's stdlib driver) or "mariadb"
	Driver    string   // the database/sql driver rwpool routes to
	Primary   string   // host:port
	Replicas  []string // host:port
	PortQuery string   // answers the port of the server that runs it
	nodeDSN   func(addr string) string
}

// IsPostgres reports whether the backend is PostgreSQL (either driver).
func (b *Backend) IsPostgres() bool { return b.Name == "postgres" || b.Name == "pgx" }

// DSN returns the composite rwpool DSN: the primary, every replica with
// weight 1, then extra items (e.g. "pool_size=10").
func (b *Backend) DSN(extra string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "driver=%s;primary='%s';", b.Driver, b.nodeDSN(b.Primary))
	for _, r := range b.Replicas {
		fmt.Fprintf(&s, "replica='%s';", b.nodeDSN(r))
	}
	s.WriteString(extra)
	return s.String()
}

// PrimaryPort is the primary's port, as the port query answers it.
func (b *Backend) PrimaryPort() string { return port(b.Primary) }

// IsReplicaPort reports whether p is the port of one of the replicas.
func (b *Backend) IsReplicaPort(p string) bool {
	return slices.ContainsFunc(b.Replicas, func(a string) bool { return port(a) == p })
}

func port(addr string) string {
	_, p, _ := strings.Cut(addr, ":")
	return p
}

// Backends returns every backend the environment describes: PostgreSQL
// through lib/pq and through pgx, and MariaDB through go-sql-driver/mysql.
func Backends(t testing.TB) []*Backend {
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
	pgDSN := func(addr string) string {
		host, port, _ := strings.Cut(addr, ":")
		return fmt.Sprintf("host=%s port=%s user=%s password=%s dbname=%s sslmode=disable connect_timeout=5",
			host, port, user, pw, db)
	}
	pgReplicas := split(os.Getenv("RWPOOL_PG_REPLICAS"))
	return []*Backend{
		{Name: "postgres", Driver: "postgres", Primary: pg, Replicas: pgReplicas, nodeDSN: pgDSN, PortQuery: "SELECT inet_server_port()"},
		{Name: "pgx", Driver: "pgx", Primary: pg, Replicas: pgReplicas, nodeDSN: pgDSN, PortQuery: "SELECT inet_server_port()"},
		{
			Name: "mariadb", Driver: "mysql", Primary: my, Replicas: split(os.Getenv("RWPOOL_MY_REPLICAS")),
			nodeDSN: func(addr string) string {
				return fmt.Sprintf("%s:%s@tcp(%s)/%s?timeout=5s&parseTime=true", user, pw, addr, db)
			},
			PortQuery: "SELECT @@port",
		},
	}
}

// ForEach runs f as a subtest for every backend.
func ForEach(t *testing.T, f func(t *testing.T, b *Backend)) {
	t.Helper()
	for _, b := range Backends(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, b) })
	}
}

// Route runs f with a context that records where its (last) statement
// ran, and returns that route. f's error fails the test.
func Route(t *testing.T, what string, f func(ctx context.Context) error) rwpool.Route {
	t.Helper()
	var r rwpool.Route
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f(rwpool.WithRoute(ctx, &r)); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if r.Node == "" {
		t.Fatalf("%s: no route recorded: the library dropped the context", what)
	}
	return r
}

// OnPrimary runs f like Route and fails the test unless the primary served it.
func OnPrimary(t *testing.T, what string, f func(ctx context.Context) error) rwpool.Route {
	t.Helper()
	r := Route(t, what, f)
	if r.Role != "primary" {
		t.Errorf("%s ran on %s (%s, %s), want the primary", what, r.Node, r.Role, r.Reason)
	}
	return r
}

// OnReplica runs f like Route and fails the test unless a replica served it.
func OnReplica(t *testing.T, what string, f func(ctx context.Context) error) rwpool.Route {
	t.Helper()
	r := Route(t, what, f)
	if r.Role != "replica" {
		t.Errorf("%s ran on %s (%s, %s), want a replica", what, r.Node, r.Role, r.Reason)
	}
	return r
}

// Served returns how many statements and transactions the primary and the
// replicas (together) of db served so far.
func Served(t *testing.T, db *sql.DB) (primary, replicas int64) {
	t.Helper()
	s, err := rwpool.Stats(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range s.Nodes {
		if n.Role == "primary" {
			primary += n.Served
		} else {
			replicas += n.Served
		}
	}
	return primary, replicas
}

// Eventually polls cond every 20ms until it holds, failing the test after
// timeout: for reads on replicas of rows just written on the primary.
func Eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s (last error: %v)", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
