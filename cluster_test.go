package rwpool_test

import (
	"database/sql"
	"io"
	"log"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"

	"github.com/rwpool/rwpool/internal/testcluster"
)

// go-sql-driver/mysql logs every broken connection to stderr; the fault
// tests break hundreds on purpose, and assert on what matters instead.
func init() { mysql.SetLogger(log.New(io.Discard, "", 0)) }

// cluster is one backend of the real replicated test clusters (see
// internal/testcluster), with the root tests' own helpers as methods.
type cluster struct{ *testcluster.Backend }

// realClusters returns the backends the environment describes; without
// them the test skips, or fails under CI=true.
func realClusters(t testing.TB) []*cluster {
	t.Helper()
	var cls []*cluster
	for _, b := range testcluster.Backends(t) {
		cls = append(cls, &cluster{b})
	}
	return cls
}

// forEachCluster runs f as a subtest on every real cluster.
func forEachCluster(t *testing.T, f func(t *testing.T, cl *cluster)) {
	for _, cl := range realClusters(t) {
		t.Run(cl.Name, func(t *testing.T) { f(t, cl) })
	}
}

// open opens rwpool over the cluster and closes it when the test ends.
func (cl *cluster) open(t *testing.T, extra string, weights ...int) *sql.DB {
	t.Helper()
	db, err := sql.Open("rwpool", cl.DSN(extra, weights...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatalf("%s: ping: %v", cl.Name, err)
	}
	return db
}

var portOf = testcluster.Port

// waitReplicas waits until every replica, asked directly through the real
// driver, answers q (which must return one row) with want: replicas replay
// the primary's writes a moment later, and a test that writes and then reads
// on a replica must wait for that.
func (cl *cluster) waitReplicas(t *testing.T, q string, want string) {
	t.Helper()
	for _, r := range cl.Replicas {
		db, err := sql.Open(cl.Driver, cl.NodeDSN(r))
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
