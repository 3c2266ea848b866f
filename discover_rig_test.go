package rwpool_test

// The rig of the discovery tests (discover_test.go and
// discover_regress_*_test.go): a discovery source that answers what a
// test sets, and a Connector whose replicas come from such sources.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/discovery"
	"github.com/rwpool/rwpool/dsn"
)

// testSources are the sources of the "rwpooltest" discovery scheme, by
// target: each test registers its own under its name (newTestSource).
var testSources sync.Map // string -> *testSource

func init() {
	discovery.Register("rwpooltest", func(target string) (discovery.Source, error) {
		s, ok := testSources.Load(target)
		if !ok {
			return nil, errors.New("no such test source")
		}
		return s.(*testSource), nil
	})
}

// testSource answers what a test sets: members, an error, or nothing.
type testSource struct {
	mu      sync.Mutex
	members []discovery.Member
	err     error
	asked   atomic.Int64
}

// newTestSource registers a test source as target ("rwpooltest:target"
// in a DSN), answering ms, until the test ends.
func newTestSource(t *testing.T, target string, ms ...discovery.Member) *testSource {
	s := &testSource{}
	s.set(nil, ms...)
	testSources.Store(target, s)
	t.Cleanup(func() { testSources.Delete(target) })
	return s
}

func (s *testSource) Members(context.Context) ([]discovery.Member, error) {
	s.asked.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.members), s.err
}

func (s *testSource) set(err error, ms ...discovery.Member) {
	s.mu.Lock()
	s.members, s.err = ms, err
	s.mu.Unlock()
}

// waitRounds waits until the source was asked k more times: every round
// after a change has applied it.
func (s *testSource) waitRounds(t *testing.T, k int64) {
	t.Helper()
	target := s.asked.Load() + k
	deadline := time.Now().Add(5 * time.Second)
	for s.asked.Load() < target {
		if time.Now().After(deadline) {
			t.Fatalf("the source was not asked %d more times in 5s", k)
		}
		time.Sleep(time.Millisecond)
	}
}

// mem is the member name at 127.0.0.1:port.
func mem(name string, port int) discovery.Member {
	return discovery.Member{Name: name, Host: "127.0.0.1", Port: fmt.Sprint(port)}
}

// memberDSN is the DSN a member at 127.0.0.1:port is dialled with: the
// primary's, pointed at the member's address (the fake drivers' nodes
// are named by their whole DSN).
func memberDSN(primary string, port int) string {
	return fmt.Sprintf("%s host=127.0.0.1 port=%d", primary, port)
}

// discoverRig is a Connector opened from a DSN with discover items, and
// its *sql.DB, closed when the test ends.
type discoverRig struct {
	t       *testing.T
	cfg     *dsn.Config // what NewConnector was given
	c       *rwpool.Connector
	db      *sql.DB
	src     *testSource // openCtlRig's source; nil from openRig
	primary string      // openCtlRig's primary DSN
}

// openRig opens a Connector with dsnText and opts. The sources its
// discover items name must be registered first (newTestSource): the
// Connector asks them at once.
func openRig(t *testing.T, dsnText string, opts ...rwpool.Option) *discoverRig {
	t.Helper()
	cfg, err := dsn.Parse(dsnText)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rwpool.NewConnector(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return &discoverRig{t: t, cfg: cfg, c: c, db: db}
}

// openCtlRig opens the rig most tests use: over the ctl fake driver
// (check_interval=50ms, probe_timeout=100ms), whose primary DSN is
// primary (a fresh node), and whose only source, registered under the
// test's name, answers initial until the test sets another answer; it is
// named "t" and asked every 10ms unless extra, appended to its discover
// item, says otherwise.
func openCtlRig(t *testing.T, primary, extra string, initial ...discovery.Member) *discoverRig {
	t.Helper()
	if !strings.Contains(extra, "every=") {
		extra = " every=10ms" + extra
	}
	src := newTestSource(t, t.Name(), initial...)
	ctl.Fresh(primary)
	r := openRig(t, "driver=rwpool-test-ctl;check_interval=50ms;probe_timeout=100ms;primary='"+primary+"';"+
		"discover='rwpooltest:"+t.Name()+"' name=t"+extra)
	r.src, r.primary = src, primary
	return r
}

// memberDSN is the DSN a member at 127.0.0.1:port is dialled with.
func (r *discoverRig) memberDSN(port int) string {
	return memberDSN(r.primary, port)
}

// node returns the first node of the Stats called name.
func (r *discoverRig) node(name string) (rwpool.NodeStats, bool) {
	for _, n := range r.c.Stats().Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return rwpool.NodeStats{}, false
}

// discovered returns the names of the nodes of the source named "t" that
// are not draining.
func (r *discoverRig) discovered() []string {
	var names []string
	for _, n := range r.c.Stats().Nodes {
		if n.Source == "t" && !n.Draining {
			names = append(names, n.Name)
		}
	}
	return names
}

// poll reports whether cond held within d, asking it every millisecond.
func (r *discoverRig) poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// waitFor fails the test unless cond holds within 5s, saying what it
// waited for, the nodes and the discovery stats.
func (r *discoverRig) waitFor(what string, cond func() bool) {
	r.t.Helper()
	if r.poll(5*time.Second, cond) {
		return
	}
	s := r.c.Stats()
	var nodes []string
	for _, n := range s.Nodes {
		nodes = append(nodes, fmt.Sprintf("%s(source %q, %s, draining %v)", n.Name, n.Source, n.State, n.Draining))
	}
	r.t.Fatalf("not within 5s: %s (nodes %v, discovery %+v)", what, nodes, s.Discovery)
}

// txOn begins read-only transactions until one runs on the node whose
// DSN ends with suffix, and returns it; it rolls the others back.
func (r *discoverRig) txOn(ctx context.Context, suffix string) *sql.Tx {
	r.t.Helper()
	for {
		tx, err := r.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			r.t.Fatal(err)
		}
		var where string
		if err := tx.QueryRow("SELECT node").Scan(&where); err != nil {
			r.t.Fatal(err)
		}
		if strings.HasSuffix(where, suffix) {
			return tx
		}
		tx.Rollback()
	}
}
