// Package testcluster holds the examples' integration test helpers, over
// the replicated test clusters that the root module's internal/testcluster
// finds (scripts/cluster.sh starts them). Without them a test skips,
// except under CI=true, where it fails. It registers the real drivers.
package testcluster

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	cluster "github.com/rwpool/rwpool/internal/testcluster"

	_ "github.com/go-sql-driver/mysql" // "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // "pgx"
	_ "github.com/lib/pq"              // "postgres"
)

// Backend is one real driver over one replicated cluster (see the root
// module's internal/testcluster).
type Backend = cluster.Backend

// ForEach runs f as a subtest for every backend the environment
// describes: PostgreSQL through lib/pq and through pgx, and MariaDB through
// go-sql-driver/mysql, whose node DSNs ask for time.Time values
// (parseTime), as the ORMs need.
func ForEach(t *testing.T, f func(t *testing.T, b *Backend)) {
	t.Helper()
	for _, b := range cluster.Backends(t) {
		if b.Name == cluster.MariaDB {
			b.Params = "parseTime=true"
		}
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
