// Package fakedriver is the database/sql driver rwpool's tests and
// benchmarks run against when they need no real server. One Driver type,
// configured by Options, stands for every fake the tests need: a driver
// with only the interfaces database/sql requires (Legacy), nodes that go
// down, hang or lose their connection mid-result, statements recorded per
// node (Record), a no-op driver for benchmarks (Nop), a simulated
// PostgreSQL replication cluster answering rwpool's status and position
// queries (Replication), real prepared statements (Prepare) and read-only
// transactions that refuse writes (ReadOnlyTx).
//
// A node is named by its DSN: the driver keeps one Node per DSN it was
// asked to open (or a test asked for), so that a test can act on the node
// behind each of rwpool's node DSNs. Unless AnswerOne is set, every query
// answers one row whose column "node" holds the node's DSN, so a test sees
// where its read ran.
//
// The package imports nothing of rwpool: the root package's own tests use
// it too. A driver rwpool should take for PostgreSQL (status queries,
// positions, its errors) must be registered under a name containing
// "postgres".
package fakedriver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Options configure a Driver. The zero value is a driver whose
// connections implement the context interfaces (driver.ConnBeginTx
// included, accepting any driver.TxOptions) and driver.Validator, whose
// statements always succeed, and whose queries answer the node's DSN.
type Options struct {
	// Legacy gives connections only the interfaces database/sql requires:
	// driver.Conn (statements run through Prepare), driver.Stmt,
	// driver.Tx, driver.Rows. No context interfaces, no
	// driver.Validator, no NamedValueChecker, no column types.
	Legacy bool

	// Nop makes every connection a no-op one, for benchmarks that measure
	// rwpool and database/sql rather than a driver: a statement succeeds
	// at once, a query answers one row (n = 1) and allocates only its
	// rows; no node is consulted, counted or recorded, and Begin is not
	// supported. The other options do not apply.
	Nop bool

	// Record keeps every statement a node runs (BEGIN, COMMIT and
	// ROLLBACK included) with its arguments: see Node.Statements,
	// Node.Args and Node.Count.
	Record bool

	// AnswerOne makes queries answer one row whose column "n" holds
	// int64(1), instead of the node's DSN in column "node".
	AnswerOne bool

	// Replication simulates a PostgreSQL cluster: each write (an exec, or
	// a query with RETURNING) moves the node's written position by 0x100;
	// pg_current_wal_lsn() answers it and pg_last_wal_replay_lsn() the
	// node's replayed position; the status query (pg_is_in_recovery())
	// answers from them, read-only for a node made a replica by
	// Node.SetReplayed. A status set with Node.SetStatus wins, in every
	// mode.
	Replication bool

	// DialError is what dialling a node that is down returns. nil: a
	// refused TCP connection (*net.OpError, syscall.ECONNREFUSED) that
	// does not name the node.
	DialError func(dsn string) error

	// DownError is what a statement or Begin fails with on a node that is
	// down; the connection is invalid afterwards. nil: io.ErrUnexpectedEOF,
	// a connection lost mid-statement.
	DownError error

	// Fail, when set, is asked before every statement a node runs: an
	// error fails the statement.
	Fail func(dsn, query string) error

	// Prepare gives the connections real prepared statements, as Legacy
	// ones always have: Prepare returns a driver.Stmt (without the
	// context interfaces) whose Exec and Query run as the connection's
	// ExecContext and QueryContext would, so that Node.SetHang holds them
	// too. Without it, Prepare answers driver.ErrSkip. See also
	// Node.ClosedMidStatement.
	Prepare bool

	// ReadOnlyTx makes a write (an exec whose first word is INSERT,
	// UPDATE, DELETE or REPLACE) inside a transaction begun with
	// driver.TxOptions.ReadOnly fail as the server refuses it: with a
	// *PostgresError of SQLSTATE 25006 (read_only_sql_transaction) on a
	// driver whose name contains "postgres", with a *MySQLError numbered
	// 1792 (ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION) on any other.
	// Without it, read-only transactions accept writes.
	ReadOnlyTx bool
}

// PostgresError is a PostgreSQL server's error as lib/pq and pgx report
// it, reduced to what rwpool reads of it: its SQLSTATE, from SQLState.
type PostgresError struct {
	Code    string // the SQLSTATE, such as "25006"
	Message string
}

func (e *PostgresError) Error() string    { return "pq: " + e.Message + " (SQLSTATE " + e.Code + ")" }
func (e *PostgresError) SQLState() string { return e.Code }

// MySQLError has the shape rwpool reads of go-sql-driver/mysql's
// *mysql.MySQLError: a struct type whose name ends in MySQLError, with a
// uint16 Number.
type MySQLError struct {
	Number  uint16
	Message string
}

func (e *MySQLError) Error() string { return fmt.Sprintf("Error %d: %s", e.Number, e.Message) }

// Status is a node's answer to rwpool's PostgreSQL status query
// (pg_is_in_recovery() OR transaction_read_only, the applied or written
// LSN, the age of the last replayed commit).
type Status struct {
	ReadOnly  bool    // in recovery or read-only: what a replica reports
	LSN       string  // the node's position, such as "0/1000"
	ReplayAge float64 // seconds since the last replayed commit; -1 for none (a primary)
}

// Driver is a fake database/sql driver; see Options.
type Driver struct {
	opts  Options
	pg    bool // registered under a name containing "postgres"
	mu    sync.Mutex
	nodes map[string]*Node
}

// Register registers a new driver configured by o under name with
// database/sql, and returns it.
func Register(name string, o Options) *Driver {
	if o.DialError == nil {
		o.DialError = func(string) error { return errRefused }
	}
	if o.DownError == nil {
		o.DownError = io.ErrUnexpectedEOF
	}
	d := &Driver{opts: o, pg: strings.Contains(strings.ToLower(name), "postgres"), nodes: map[string]*Node{}}
	sql.Register(name, d)
	return d
}

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// Node returns the node whose DSN is dsn, creating a healthy one.
func (d *Driver) Node(dsn string) *Node {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, ok := d.nodes[dsn]
	if !ok {
		n = &Node{}
		d.nodes[dsn] = n
	}
	return n
}

// Fresh replaces the node whose DSN is dsn with a new, healthy one and
// returns it, so that tests run with -count=N start clean. Connections
// already open keep the node they were opened on.
func (d *Driver) Fresh(dsn string) *Node {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := &Node{}
	d.nodes[dsn] = n
	return n
}

// Open implements driver.Driver: it dials the node called name.
func (d *Driver) Open(name string) (driver.Conn, error) {
	if d.opts.Nop {
		return nopConn{}, nil
	}
	n := d.Node(name)
	n.dials.Add(1)
	if n.down.Load() {
		return nil, d.opts.DialError(name)
	}
	n.open.Add(1)
	c := &conn{d: d, n: n, dsn: name}
	if d.opts.Legacy {
		return &legacyConn{c}, nil
	}
	return &ctxConn{c}, nil
}

// Node is one server of a fake cluster.
type Node struct {
	down    atomic.Bool
	dials   atomic.Int64
	open    atomic.Int64
	served  atomic.Int64
	rowsErr atomic.Pointer[error]

	closedMidStmt atomic.Int64

	mu       sync.Mutex
	hang     chan struct{}  // when non-nil, statements block until it is closed
	hung     map[string]int // statements blocked by hang now, by query
	ran      []string
	args     []driver.Value
	status   *Status
	replica  bool
	written  uint64
	replayed uint64
}

// SetDown takes the node down (true) or brings it back. Down, it refuses
// dials (Options.DialError) and fails statements (Options.DownError).
func (n *Node) SetDown(down bool) { n.down.Store(down) }

// SetHang makes the node's statements block (true), ignoring their
// contexts as lib/pq does on a hung server, or releases them.
func (n *Node) SetHang(on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if on && n.hang == nil {
		n.hang = make(chan struct{})
	}
	if !on && n.hang != nil {
		close(n.hang)
		n.hang = nil
	}
}

// SetRowsErr makes the node's result sets fail with err after their
// first row, a connection lost mid-result; nil ends that.
func (n *Node) SetRowsErr(err error) {
	if err == nil {
		n.rowsErr.Store(nil)
		return
	}
	n.rowsErr.Store(&err)
}

// SetStatus makes the node answer rwpool's status query with st.
func (n *Node) SetStatus(st Status) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.status = &st
}

// SetWritten sets the node's written position (Options.Replication).
func (n *Node) SetWritten(lsn uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.written = lsn
}

// SetReplayed makes the node a replica that has replayed up to lsn
// (Options.Replication).
func (n *Node) SetReplayed(lsn uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.replica, n.replayed = true, lsn
}

// Dials returns how many times the node was dialled, refused dials
// included.
func (n *Node) Dials() int64 { return n.dials.Load() }

// Open returns how many connections to the node are open.
func (n *Node) Open() int64 { return n.open.Load() }

// Served returns how many statements the node ran.
func (n *Node) Served() int64 { return n.served.Load() }

// ClosedMidStatement returns how many statements prepared on the node's
// connections were closed while a statement was running on their
// connection (one still held by SetHang, say): a use of one driver.Conn
// by two goroutines at once, which database/sql never makes and a real
// driver does not survive.
func (n *Node) ClosedMidStatement() int64 { return n.closedMidStmt.Load() }

// Statements returns the statements the node ran (Options.Record).
func (n *Node) Statements() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.ran...)
}

// Args returns the arguments of the node's statements, all in one list
// (Options.Record).
func (n *Node) Args() []driver.Value {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]driver.Value(nil), n.args...)
}

// Count returns how many of the node's statements contain sub
// (Options.Record).
func (n *Node) Count(sub string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, q := range n.ran {
		if strings.Contains(q, sub) {
			c++
		}
	}
	return c
}

// Hung returns how many statements containing sub are blocked by SetHang
// right now (a probe stuck on a hung server, say).
func (n *Node) Hung(sub string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for q, k := range n.hung {
		if strings.Contains(q, sub) {
			c += k
		}
	}
	return c
}

// await blocks statement q while the node hangs, counted by Hung.
func (n *Node) await(q string) {
	n.mu.Lock()
	h := n.hang
	if h == nil {
		n.mu.Unlock()
		return
	}
	if n.hung == nil {
		n.hung = map[string]int{}
	}
	n.hung[q]++
	n.mu.Unlock()
	<-h
	n.mu.Lock()
	n.hung[q]--
	n.mu.Unlock()
}

func (n *Node) record(q string, args []driver.Value) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ran = append(n.ran, q)
	n.args = append(n.args, args...)
}

// statusOf returns the node's answer to the status query, if it has one.
func (n *Node) statusOf(replication bool) (Status, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.status != nil:
		return *n.status, true
	case !replication:
		return Status{}, false
	case n.replica:
		return Status{ReadOnly: true, LSN: lsnText(n.replayed), ReplayAge: -1}, true
	}
	return Status{LSN: lsnText(n.written), ReplayAge: -1}, true
}

// position answers the position queries of Options.Replication, and moves
// the written position on a write.
func (n *Node) position(q string, write bool) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case strings.Contains(q, "pg_current_wal_lsn()"):
		return lsnText(n.written), true
	case strings.Contains(q, "pg_last_wal_replay_lsn()"):
		return lsnText(n.replayed), true
	case write || strings.Contains(q, "RETURNING"):
		n.written += 0x100
	}
	return "", false
}

func lsnText(n uint64) string { return fmt.Sprintf("%X/%X", n>>32, uint32(n)) }

// conn is what both kinds of connection share.
type conn struct {
	d        *Driver
	n        *Node
	dsn      string
	bad      bool         // a statement failed on a down node
	readOnly atomic.Bool  // in a transaction begun read-only
	running  atomic.Int32 // statements running (see Node.ClosedMidStatement)
}

func (c *conn) Close() error { c.n.open.Add(-1); return nil }

func (c *conn) Begin() (driver.Tx, error) { return c.begin(false) }

func (c *conn) begin(readOnly bool) (driver.Tx, error) {
	if c.n.down.Load() {
		c.bad = true
		return nil, c.d.opts.DownError
	}
	c.record("BEGIN", nil)
	c.readOnly.Store(readOnly)
	return tx{c}, nil
}

func (c *conn) record(q string, args []driver.Value) {
	if c.d.opts.Record {
		c.n.record(q, args)
	}
}

// run admits a statement: it blocks while the node hangs and fails while
// it is down or Options.Fail says so.
func (c *conn) run(q string, args []driver.Value) error {
	c.n.await(q)
	if c.n.down.Load() {
		c.bad = true
		return c.d.opts.DownError
	}
	if f := c.d.opts.Fail; f != nil {
		if err := f(c.dsn, q); err != nil {
			return err
		}
	}
	c.n.served.Add(1)
	c.record(q, args)
	return nil
}

func (c *conn) exec(q string, args []driver.Value) (driver.Result, error) {
	c.running.Add(1)
	defer c.running.Add(-1)
	if err := c.run(q, args); err != nil {
		return nil, err
	}
	if c.d.opts.ReadOnlyTx && c.readOnly.Load() {
		if verb, ok := writeVerb(q); ok {
			return nil, c.d.readOnlyError(verb)
		}
	}
	if c.d.opts.Replication {
		c.n.position(q, true)
	}
	return driver.RowsAffected(1), nil
}

var statusColumns = []string{"ro", "pos", "age"}

func (c *conn) query(q string, args []driver.Value) (driver.Rows, error) {
	c.running.Add(1)
	defer c.running.Add(-1)
	if err := c.run(q, args); err != nil {
		return nil, err
	}
	if strings.Contains(q, "pg_is_in_recovery()") {
		if st, ok := c.n.statusOf(c.d.opts.Replication); ok {
			return &rows{cols: statusColumns, row: []driver.Value{st.ReadOnly, st.LSN, st.ReplayAge}}, nil
		}
	}
	if c.d.opts.Replication {
		if lsn, ok := c.n.position(q, false); ok {
			return &rows{cols: []string{"lsn"}, row: []driver.Value{lsn}}, nil
		}
	}
	r := &rows{cols: []string{"node"}, row: []driver.Value{c.dsn}}
	if c.d.opts.AnswerOne {
		r.cols, r.row = []string{"n"}, []driver.Value{int64(1)}
	}
	if e := c.n.rowsErr.Load(); e != nil {
		r.err = *e
	}
	return r, nil
}

// writeVerb returns the first word of q, upper-cased, if it is one of
// the writes Options.ReadOnlyTx refuses.
func writeVerb(q string) (string, bool) {
	f := strings.Fields(q)
	if len(f) == 0 {
		return "", false
	}
	switch v := strings.ToUpper(f[0]); v {
	case "INSERT", "UPDATE", "DELETE", "REPLACE":
		return v, true
	}
	return "", false
}

// readOnlyError is how the server refuses a write of verb in a read-only
// transaction (Options.ReadOnlyTx).
func (d *Driver) readOnlyError(verb string) error {
	if d.pg {
		return &PostgresError{Code: "25006", Message: "cannot execute " + verb + " in a read-only transaction"}
	}
	return &MySQLError{Number: 1792, Message: "Cannot execute statement in a READ ONLY transaction."}
}

// ctxConn is a connection with the context interfaces and
// driver.Validator; it prepares nothing unless Options.Prepare says so.
type ctxConn struct{ *conn }

func (c *ctxConn) IsValid() bool { return !c.bad }

func (c *ctxConn) Prepare(q string) (driver.Stmt, error) {
	if !c.d.opts.Prepare {
		return nil, driver.ErrSkip
	}
	return &stmt{c.conn, q}, nil
}

func (c *ctxConn) BeginTx(_ context.Context, o driver.TxOptions) (driver.Tx, error) {
	return c.begin(o.ReadOnly)
}

func (c *ctxConn) QueryContext(_ context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.query(q, c.values(args))
}

func (c *ctxConn) ExecContext(_ context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.exec(q, c.values(args))
}

func (c *ctxConn) values(args []driver.NamedValue) []driver.Value {
	if !c.d.opts.Record || len(args) == 0 {
		return nil
	}
	vs := make([]driver.Value, len(args))
	for i, a := range args {
		vs[i] = a.Value
	}
	return vs
}

// legacyConn has only what database/sql requires: statements run through
// Prepare.
type legacyConn struct{ *conn }

func (c *legacyConn) Prepare(q string) (driver.Stmt, error) { return &stmt{c.conn, q}, nil }

// stmt is a prepared statement of a Legacy connection, or of one with
// Options.Prepare.
type stmt struct {
	c *conn
	q string
}

func (s *stmt) Close() error {
	if s.c.running.Load() > 0 {
		s.c.n.closedMidStmt.Add(1)
	}
	return nil
}

func (s *stmt) NumInput() int { return -1 }
func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.c.exec(s.q, args)
}
func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.c.query(s.q, args)
}

type tx struct{ c *conn }

func (t tx) Commit() error {
	t.c.readOnly.Store(false)
	t.c.record("COMMIT", nil)
	return nil
}

func (t tx) Rollback() error {
	t.c.readOnly.Store(false)
	t.c.record("ROLLBACK", nil)
	return nil
}

// rows is a result of one row; with err set, the row is followed by err
// instead of the end of the result.
type rows struct {
	cols []string
	row  []driver.Value
	err  error
	done bool
}

func (r *rows) Columns() []string { return r.cols }
func (r *rows) Close() error      { return nil }
func (r *rows) Next(dest []driver.Value) error {
	if r.done {
		if r.err != nil {
			return r.err
		}
		return io.EOF
	}
	r.done = true
	copy(dest, r.row)
	return nil
}

// nopConn is the connection of Options.Nop.
type nopConn struct{}

func (nopConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (nopConn) Close() error                        { return nil }
func (nopConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }
func (nopConn) QueryContext(context.Context, string, []driver.NamedValue) (driver.Rows, error) {
	return &nopRows{}, nil
}
func (nopConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(1), nil
}

type nopRows struct{ done bool }

func (*nopRows) Columns() []string { return []string{"n"} }
func (*nopRows) Close() error      { return nil }
func (r *nopRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}
