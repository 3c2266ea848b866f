package rwpool_test

import (
	"database/sql"
	"io"
	"log"
	"os"
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
		cl := &cluster{b}
		cl.awaitPoolers(t)
		cls = append(cls, cl)
	}
	return cls
}

// awaitPoolers waits until a statement goes through each of the backend's
// poolers, if it has any. PgBouncer remembers a failed login to its server
// (an earlier test killed it) until its next login succeeds, and refuses
// the first clients after even a long quiet spell with "server login has
// been failing"; every test starts with the cluster healthy, so the
// refusal belongs to the test that caused it, not to the next one.
func (cl *cluster) awaitPoolers(t testing.TB) {
	t.Helper()
	for addr := range cl.Via {
		db, err := sql.Open(cl.Driver, cl.NodeDSN(addr))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			var one int
			err := db.QueryRow("SELECT 1").Scan(&one)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				db.Close()
				t.Fatalf("%s: pooler %s (server %s) does not answer: %v", cl.Name, addr, cl.Server(addr), err)
			}
			time.Sleep(100 * time.Millisecond) // a poll with a deadline
		}
		db.Close()
	}
}

// forEachCluster runs f as a subtest on every real cluster.
func forEachCluster(t *testing.T, f func(t *testing.T, cl *cluster)) {
	for _, cl := range realClusters(t) {
		t.Run(cl.Name, func(t *testing.T) { f(t, cl) })
	}
}

// skipTransactionPooled skips a test of session state (SET, temporary
// tables) on a backend behind a transaction pooler: there, that state
// belongs to a server connection that another client's next transaction
// may get, whatever rwpool does with its own connections. PgBouncer's
// documentation rules such features out in transaction mode; the README
// says so (Behind PgBouncer).
func skipTransactionPooled(t *testing.T, cl *cluster) {
	t.Helper()
	if cl.TransactionPooled {
		t.Skip("session state does not outlive a transaction behind a transaction pooler (README: Behind PgBouncer)")
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

// clusterEnv is the environment's description of the clusters, read once.
var clusterEnv, _ = testcluster.Read(os.Getenv)

// portOf returns the port of the server that addr reaches: the tests'
// faults and sightings concern servers, and a PgBouncer backend's
// addresses are those of the poolers in front of them.
func portOf(addr string) string { return testcluster.Port(clusterEnv.Server(addr)) }

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
