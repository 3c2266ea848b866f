// Package embedded runs a small replicated MySQL-protocol cluster inside
// the process, for the rwpool demo: one primary and any number of replicas,
// each its own go-mysql-server engine with its own in-memory database,
// serving the MySQL wire protocol on a free loopback port. Clients reach
// them with go-sql-driver/mysql exactly as they would reach real servers.
//
// # Replication
//
// go-mysql-server has no replication, so this package adds statement-based
// replication, the way MySQL itself started: an interceptor on the
// primary's connection handler writes every statement that changed data,
// after it succeeded, to an in-memory log (writes are serialized on the
// primary so that the log order is the execution order), and one applier
// goroutine per replica executes the log, in order, on the replica's engine,
// after Options.Lag. The link between primary and replicas is in-process:
// a fault injected between a client and a replica (see package faultproxy)
// does not stop its replication, as a network partition between an
// application and a replica would not.
//
// Only text-protocol statements are replicated: clients must send their
// arguments interpolated (go-sql-driver/mysql's interpolateParams=true).
// A write prepared server-side is refused on the primary with an error
// saying so, rather than silently not replicated. Every statement is its own
// transaction (autocommit); BEGIN ... COMMIT is not replicated as a unit.
//
// Replicas are read-only for clients: a write sent to one fails with MySQL's
// error 1290 (--read-only), as on a real replica.
//
// # Identity
//
// Every server has a one-row table, NodeTable, holding its own name, which
// replication never touches, so a query can tell which server answered it:
//
//	SELECT (SELECT name FROM rwpool_demo_node), v FROM t WHERE id = 1
package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/sirupsen/logrus"

	"github.com/rwpool/rwpool/routing"
)

// Database is the name of the database every server serves.
const Database = "demo"

// NodeTable is the per-server identity table: one row, column name.
const NodeTable = "rwpool_demo_node"

// Options configure a Cluster.
type Options struct {
	// Replicas is the number of replicas (default 2). Servers are named
	// "primary", "replica1", "replica2", ..., like rwpool's default node
	// names.
	Replicas int
	// Lag delays the application of each logged statement on the replicas
	// (default 0: as soon as possible).
	Lag time.Duration
}

// Server is one embedded MySQL-protocol server.
type Server struct {
	Name string // "primary", "replica1", ...
	Addr string // host:port it listens on, on 127.0.0.1

	engine *sqle.Engine
	pro    *memory.DbProvider
	srv    *server.Server
	served chan struct{} // closed when the accept loop returned
	log    *binlog       // the primary's log, on every server
	role   string        // "primary" or "replica"
}

// Cluster is a primary and its replicas.
type Cluster struct {
	Primary  *Server
	Replicas []*Server

	log     *binlog
	stop    chan struct{}
	applied sync.WaitGroup
	appl    []*applier
	once    sync.Once
}

var silenceOnce sync.Once

// silence turns off go-mysql-server's logging (logrus' standard logger,
// which it writes to on every connection and error).
func silence() {
	silenceOnce.Do(func() {
		logrus.SetOutput(io.Discard)
		logrus.SetLevel(logrus.PanicLevel)
	})
}

// Start starts the primary and the replicas on free loopback ports and
// the replication from the primary to each replica.
func Start(opts Options) (*Cluster, error) {
	silence()
	if opts.Replicas == 0 {
		opts.Replicas = 2
	}
	if opts.Replicas < 0 {
		return nil, fmt.Errorf("embedded: %d replicas", opts.Replicas)
	}
	c := &Cluster{log: newBinlog(), stop: make(chan struct{})}
	p, err := c.start("primary", "primary")
	if err != nil {
		return nil, err
	}
	c.Primary = p
	for i := range opts.Replicas {
		r, err := c.start(fmt.Sprintf("replica%d", i+1), "replica")
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Replicas = append(c.Replicas, r)
		a := &applier{srv: r, log: c.log, lag: opts.Lag, stop: c.stop}
		c.appl = append(c.appl, a)
		c.log.register(a)
		c.applied.Add(1)
		go func() {
			defer c.applied.Done()
			a.run()
		}()
	}
	return c, nil
}

// Servers returns the primary and the replicas, primary first.
func (c *Cluster) Servers() []*Server {
	return append([]*Server{c.Primary}, c.Replicas...)
}

// Close stops replication and every server. Client connections still open
// end when their clients (or the proxies in front) close them.
func (c *Cluster) Close() error {
	c.once.Do(func() {
		close(c.stop)
		c.applied.Wait()
		for _, s := range c.Servers() {
			if s != nil {
				s.close()
			}
		}
	})
	return nil
}

// Logged returns the number of statements the primary has logged.
func (c *Cluster) Logged() int64 { return c.log.end() }

// Behind returns how many logged statements the named replica has not
// applied yet.
func (c *Cluster) Behind(replica string) int64 {
	for _, a := range c.appl {
		if a.srv.Name == replica {
			return c.log.end() - a.position()
		}
	}
	return 0
}

// WaitCaughtUp waits until every replica applied the whole log, or ctx
// ends.
func (c *Cluster) WaitCaughtUp(ctx context.Context) error {
	for {
		behind := int64(0)
		for _, r := range c.Replicas {
			behind += c.Behind(r.Name)
		}
		if behind == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("embedded: replicas %d statements behind: %w", behind, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// WaitQuiet waits until the primary logged nothing new for quiet and
// every replica applied the whole log, or ctx ends. A client that gave up
// on a write does not stop the server from executing and logging it a
// little later: WaitQuiet lets such stragglers land and replicate.
func (c *Cluster) WaitQuiet(ctx context.Context, quiet time.Duration) error {
	for {
		if err := c.WaitCaughtUp(ctx); err != nil {
			return err
		}
		n := c.Logged()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quiet):
		}
		if c.Logged() == n {
			return c.WaitCaughtUp(ctx)
		}
	}
}

// start creates one server with its identity table and starts serving.
func (c *Cluster) start(name, role string) (*Server, error) {
	db := memory.NewDatabase(Database)
	db.BaseDatabase.EnablePrimaryKeyIndexes()
	pro := memory.NewDBProvider(db)
	s := &Server{Name: name, role: role, pro: pro, log: c.log, served: make(chan struct{})}
	s.engine = sqle.NewDefault(pro)
	for _, q := range []string{
		"CREATE TABLE " + NodeTable + " (name VARCHAR(64) PRIMARY KEY)",
		"INSERT INTO " + NodeTable + " VALUES ('" + name + "')",
	} {
		if err := s.exec(q); err != nil {
			return nil, fmt.Errorf("embedded: %s: %s: %w", name, q, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("embedded: %s: listen: %w", name, err)
	}
	s.Addr = ln.Addr().String()
	var ic server.InterceptorChain
	ic.WithInterceptor(&interceptor{s: s})
	cfg := server.Config{
		Protocol: "tcp",
		Address:  s.Addr,
		Listener: ln,
		Version:  "8.0.33-rwpool-demo-" + name,
		Options:  []server.Option{ic.Option()},
	}
	srv, err := server.NewServer(cfg, s.engine, gsql.NewContext, memory.NewSessionBuilder(pro), nil)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("embedded: %s: %w", name, err)
	}
	s.srv = srv
	go func() {
		defer close(s.served)
		srv.Start()
	}()
	return s, nil
}

func (s *Server) close() {
	if s.srv != nil {
		s.srv.Close()
		<-s.served
	}
}

// exec runs one statement on the server's engine, in process, in its own
// session (so in its own autocommitted transaction).
func (s *Server) exec(query string) error {
	sess := memory.NewSession(gsql.NewBaseSession(), s.pro)
	ctx := gsql.NewContext(context.Background(), gsql.WithSession(sess))
	ctx.SetCurrentDatabase(Database)
	_, iter, _, err := s.engine.Query(ctx, query)
	if err != nil {
		return err
	}
	_, err = gsql.RowIterToRows(ctx, iter)
	return err
}

// changesData reports whether a statement must be logged on the primary
// and refused on a replica. The classifier of rwpool itself decides; SET,
// BEGIN and other session statements are neither.
func changesData(query string) bool {
	d := routing.Classify(query, routing.DialectMySQL)
	if d.Target != routing.Primary {
		return false
	}
	switch d.Rule {
	case routing.RuleWrite, routing.RuleWritingCTE, routing.RuleMultiStatement,
		routing.RuleSelectInto, routing.RuleHintPrimary, routing.RuleUnterminated:
		return !isHarmless(query)
	}
	return false
}

// isHarmless spots the few "write" statements a client sends that change
// nothing: rwpool's classifier sends them to the primary conservatively.
func isHarmless(query string) bool {
	q := strings.ToUpper(strings.TrimSpace(query))
	return q == "" || strings.HasPrefix(q, "DO ")
}

// readOnlyErr is the error a real replica with read_only=ON returns.
func readOnlyErr() error {
	return mysql.NewSQLError(mysql.EROptionPreventsStatement, "HY000",
		"The MySQL server is running with the --read-only option so it cannot execute this statement")
}

// interceptor replicates writes on the primary and refuses them on
// replicas.
type interceptor struct{ s *Server }

var _ server.Interceptor = (*interceptor)(nil)

func (i *interceptor) Priority() int { return 0 }

func (i *interceptor) Query(ctx context.Context, chain server.Chain, c *mysql.Conn, query string,
	callback func(*sqltypes.Result, bool) error) error {
	// The engine's system variables are one set per process, shared by
	// the three servers: each answers @@read_only for its own role, as a
	// real replica with read_only=ON would (rwpool's role check asks).
	if strings.Contains(query, "@@read_only") {
		ro := "0"
		if i.s.role != "primary" {
			ro = "1"
		}
		query = strings.ReplaceAll(query, "@@read_only", ro)
	}
	if !changesData(query) {
		return chain.ComQuery(ctx, c, query, callback)
	}
	if i.s.role != "primary" {
		return readOnlyErr()
	}
	i.s.log.mu.Lock() // serialize writes: the log order is the execution order
	defer i.s.log.mu.Unlock()
	err := chain.ComQuery(ctx, c, query, callback)
	if err == nil {
		i.s.log.appendLocked(query)
	}
	return err
}

func (i *interceptor) ParsedQuery(chain server.Chain, c *mysql.Conn, query string, parsed sqlparser.Statement,
	callback func(*sqltypes.Result, bool) error) error {
	return errors.New("embedded: pre-parsed queries are not supported")
}

func (i *interceptor) MultiQuery(ctx context.Context, chain server.Chain, c *mysql.Conn, query string,
	callback func(*sqltypes.Result, bool) error) (string, error) {
	if !changesData(query) {
		return chain.ComMultiQuery(ctx, c, query, callback)
	}
	if i.s.role != "primary" {
		return "", readOnlyErr()
	}
	i.s.log.mu.Lock()
	defer i.s.log.mu.Unlock()
	rest, err := chain.ComMultiQuery(ctx, c, query, callback)
	if err == nil {
		if first := strings.TrimSuffix(query, rest); changesData(first) {
			i.s.log.appendLocked(first)
		}
	}
	return rest, err
}

func (i *interceptor) Prepare(ctx context.Context, chain server.Chain, c *mysql.Conn, query string,
	prepare *mysql.PrepareData) ([]*querypb.Field, error) {
	if changesData(query) {
		if i.s.role != "primary" {
			return nil, readOnlyErr()
		}
		return nil, mysql.NewSQLError(mysql.ERNotSupportedYet, "42000",
			"embedded demo server: prepared writes are not replicated; use interpolateParams=true")
	}
	return chain.ComPrepare(ctx, c, query, prepare)
}

func (i *interceptor) StmtExecute(ctx context.Context, chain server.Chain, c *mysql.Conn, prepare *mysql.PrepareData,
	callback func(*sqltypes.Result) error) error {
	return chain.ComStmtExecute(ctx, c, prepare, callback)
}
