// Package fakedriver is the database/sql driver rwpool's tests and
// benchmarks run against when they need no real server. One Driver type,
// configured by Options, stands for every fake the tests need: a driver
// with only the interfaces database/sql requires (Legacy), nodes that go
// down, hang or lose their connection mid-result, statements recorded per
// node (Record), a no-op driver for benchmarks (Nop), a simulated
// PostgreSQL replication cluster answering rwpool's status and position
// queries (Replication), real prepared statements (Prepare), read-only
// transactions that refuse writes (ReadOnlyTx), PostgreSQL server
// identities with restarts (Node.SetIdentity, Node.Restart) and endpoints
// whose dials reach one node or another (Driver.SetEndpoint). A hook holds
// a query's answer (BeforeAnswer), and each node counts what a test checks
// rwpool leaves behind: result sets not closed (Node.OpenRows), a
// connection used by two goroutines at once (Node.ConcurrentUse).
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
	// mode. See also Node.SetCommitRecords (a transaction's writes are
	// covered only by its commit's position) and Node.SetHangPositions.
	Replication bool

	// DialError is what dialling a node that is down returns. nil: a
	// refused TCP connection (*net.OpError, syscall.ECONNREFUSED) that
	// does not name the node.
	DialError func(dsn string) error

	// DownError is what a statement or Begin fails with on a node that is
	// down; the connection is invalid afterwards. nil: io.ErrUnexpectedEOF,
	// a connection lost mid-statement.
	DownError error

	// Fail, when set, is asked before every statement a node runs, and
	// before a driver.Tx's Commit (as the query "COMMIT"): an error fails
	// the statement or the commit.
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

	// BeforeAnswer, when set, runs for every query a node admitted (see
	// Fail), just before the query answers its rows, with the query's
	// context (context.Background() for a Legacy connection or a prepared
	// statement). The query answers when it returns, whatever became of
	// the context meanwhile, as a driver whose answer was already in: a
	// test holds an answer there to order it against what rwpool does
	// meanwhile (a hedge answering, the node tripping).
	BeforeAnswer func(ctx context.Context, dsn, query string)
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
	opts      Options
	pg        bool // registered under a name containing "postgres"
	mu        sync.Mutex
	nodes     map[string]*Node
	endpoints map[string]func(dial int64) string // SetEndpoint
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

// SetEndpoint makes dsn an endpoint (a DNS name, a virtual IP, a
// balancing proxy) in front of other nodes: its k-th dial (k = 1, 2, ...,
// counted by the endpoint's own Node.Dials) reaches the node whose DSN is
// route(k), another than dsn, and is from then on a connection to that node, as if route(k)
// had been dialled: its queries answer that DSN, it breaks with that
// node's restarts, and that node counts the dial too. A nil route makes
// dsn an ordinary node again.
func (d *Driver) SetEndpoint(dsn string, route func(dial int64) string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.endpoints == nil {
		d.endpoints = map[string]func(int64) string{}
	}
	if route == nil {
		delete(d.endpoints, dsn)
		return
	}
	d.endpoints[dsn] = route
}

// route returns the DSN a dial of name reaches (SetEndpoint).
func (d *Driver) route(name string) string {
	d.mu.Lock()
	r := d.endpoints[name]
	d.mu.Unlock()
	if r == nil {
		return name
	}
	return r(d.Node(name).dials.Add(1))
}

// Open implements driver.Driver: it dials the node called name, or the
// one its endpoint leads to (SetEndpoint).
func (d *Driver) Open(name string) (driver.Conn, error) {
	if d.opts.Nop {
		return nopConn{}, nil
	}
	name = d.route(name)
	n := d.Node(name)
	n.dials.Add(1)
	if n.down.Load() {
		return nil, d.opts.DialError(name)
	}
	n.open.Add(1)
	c := &conn{d: d, n: n, dsn: name, gen: n.gen.Load()}
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
	openRows      atomic.Int64
	concurrent    atomic.Int64

	gen atomic.Int64 // restarts (Restart); a connection of an older one is broken

	mu       sync.Mutex
	ident    *Identity      // SetIdentity
	hang     chan struct{}  // when non-nil, statements block until it is closed
	hung     map[string]int // statements blocked by hang now, by query
	hangPos  chan struct{}  // when non-nil, position queries block until it is closed
	commits  bool           // SetCommitRecords
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

// SetHangPositions makes the node's position queries (Options.Replication:
// pg_current_wal_lsn() and pg_last_wal_replay_lsn()) block (true),
// ignoring their contexts as lib/pq does, or releases them. Other
// statements run as usual: a node whose WAL position reads are stuck
// behind a slow checkpoint, say, while it still serves queries.
func (n *Node) SetHangPositions(on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if on && n.hangPos == nil {
		n.hangPos = make(chan struct{})
	}
	if !on && n.hangPos != nil {
		close(n.hangPos)
		n.hangPos = nil
	}
}

// SetCommitRecords makes the node's positions (Options.Replication) follow
// transactions as a real server's do. Only writes move the position then:
// an exec or query whose first word is INSERT, UPDATE, DELETE or REPLACE,
// or a query with RETURNING, by 0x100 each as it runs (its WAL records).
// A write is covered only by its transaction's commit record, which moves
// the position by another 0x100: a replica whose replay position lies
// between has the write but not its commit, and does not show it. A write
// outside a transaction commits when it completes: an exec at once, a
// query when its rows are closed (the server commits a statement after
// its last row). A write inside a transaction commits with it, when a
// transaction that wrote ends successfully. A connection is in a
// transaction from Begin (or BeginTx) to Tx.Commit or Tx.Rollback; from
// the statement BEGIN or START TRANSACTION (after any /* */ comment) to
// COMMIT, END, ROLLBACK or ABORT (not ROLLBACK TO); and, after SET
// autocommit=0 (MySQL), always: COMMIT ends one and the next begins, SET
// autocommit=1 commits and ends the mode. BEGIN, COMMIT and SET
// themselves move nothing. Off (the default), every exec moves the position, as does a
// query with RETURNING, transactions or not.
func (n *Node) SetCommitRecords(on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.commits = on
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

// Identity is what a node answers rwpool's PostgreSQL server identity
// query (the one reading pg_postmaster_start_time()) with: Addr + "/" +
// Started, as inet_server_addr():inet_server_port() and the postmaster's
// start time would be.
type Identity struct {
	Addr    string // the server's address and port, such as "10.0.0.1:5432"
	Started string // when the server (re)started, such as "2026-12-01 10:00:00+00"
}

// SetIdentity makes the node answer the identity query with id. Without
// it, the node answers that query as any other one: with its DSN.
func (n *Node) SetIdentity(id Identity) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ident = &id
}

// Restart restarts the node quickly, between two statements: every
// connection opened before fails its next statement with
// Options.DownError and is invalid afterwards; new dials succeed, and
// the identity they read (SetIdentity) has the start time started.
func (n *Node) Restart(started string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ident != nil {
		n.ident.Started = started
	}
	n.gen.Add(1)
}

// identity returns the node's answer to the identity query, if it has one.
func (n *Node) identity() (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ident == nil {
		return "", false
	}
	return n.ident.Addr + "/" + n.ident.Started, true
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
// included; for an endpoint (Driver.SetEndpoint), how many times the
// endpoint was.
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

// OpenRows returns how many result sets the node's queries answered that
// are not closed yet. A driver.Rows left unclosed holds resources in a
// real driver (a prepared statement, a context watcher) even once its
// connection is closed.
func (n *Node) OpenRows() int64 { return n.openRows.Load() }

// ConcurrentUse returns how many calls on one of the node's connections
// (a statement, Begin, Commit, Rollback, Prepare, IsValid, Close, or the
// Next or Close of a result set or statement of the connection) began
// while another call on the same connection was still running: a use of
// one driver.Conn by two goroutines at once, which database/sql never
// makes and a real driver does not survive (see also
// ClosedMidStatement).
func (n *Node) ConcurrentUse() int64 { return n.concurrent.Load() }

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

// isPositionQuery reports whether q is one of the position queries of
// Options.Replication.
func isPositionQuery(q string) bool {
	return strings.Contains(q, "pg_current_wal_lsn()") || strings.Contains(q, "pg_last_wal_replay_lsn()")
}

// position answers the position queries of Options.Replication, and moves
// the written position on a write. exec says q runs as an exec.
func (c *conn) position(q string, exec bool) (string, bool) {
	if isPositionQuery(q) {
		if h := c.n.hangPosCh(); h != nil {
			<-h
		}
	}
	n := c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case strings.Contains(q, "pg_current_wal_lsn()"):
		return lsnText(n.written), true
	case strings.Contains(q, "pg_last_wal_replay_lsn()"):
		return lsnText(n.replayed), true
	case n.commits:
		c.followTx(q, exec)
	case exec || strings.Contains(q, "RETURNING"):
		n.written += 0x100
	}
	return "", false
}

// followTx moves the written position for q, run on c, as
// Node.SetCommitRecords says. The caller holds c.n.mu.
func (c *conn) followTx(q string, exec bool) {
	n := c.n
	_, write := writeVerb(q)
	if write || strings.Contains(q, "RETURNING") {
		n.written += 0x100
		switch {
		case c.inTx():
			c.txWrote = true
		case exec:
			n.written += 0x100
		default:
			c.commitAtClose = true
		}
		return
	}
	w := strings.Fields(strings.ToUpper(skipComment(q)))
	if len(w) == 0 {
		return
	}
	set := strings.Join(w, "")
	switch {
	case w[0] == "BEGIN" || w[0] == "START" && len(w) > 1 && strings.HasPrefix(w[1], "TRANSACTION"):
		c.sqlTx = true
	case w[0] == "COMMIT" || w[0] == "END":
		c.committed()
		c.sqlTx = false
	case (w[0] == "ROLLBACK" || w[0] == "ABORT") && (len(w) == 1 || w[1] != "TO"):
		c.txWrote, c.sqlTx = false, false
	case strings.HasPrefix(set, "SET") && (strings.Contains(set, "AUTOCOMMIT=0") || strings.Contains(set, "AUTOCOMMIT=OFF")):
		c.noAutocommit = true
	case strings.HasPrefix(set, "SET") && (strings.Contains(set, "AUTOCOMMIT=1") || strings.Contains(set, "AUTOCOMMIT=ON")):
		c.committed()
		c.noAutocommit = false
	}
}

// skipComment returns q without its leading /* … */ comments.
func skipComment(q string) string {
	for {
		q = strings.TrimSpace(q)
		if !strings.HasPrefix(q, "/*") {
			return q
		}
		i := strings.Index(q, "*/")
		if i < 0 {
			return ""
		}
		q = q[i+2:]
	}
}

// inTx reports whether c is in a transaction (Node.SetCommitRecords).
func (c *conn) inTx() bool { return c.tx || c.sqlTx || c.noAutocommit }

// committed writes the commit record of c's transaction, if it wrote. The
// caller holds c.n.mu.
func (c *conn) committed() {
	if c.txWrote {
		c.n.written += 0x100
		c.txWrote = false
	}
}

// commitRecord writes the commit record of a write that ran outside a
// transaction (Node.SetCommitRecords).
func (n *Node) commitRecord() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.written += 0x100
}

// endTx ends c's transaction begun by Begin: committed or not.
func (c *conn) endTx(commit bool) {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	if commit {
		c.committed()
	}
	c.tx, c.txWrote = false, false
}

func (n *Node) hangPosCh() chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hangPos
}

func lsnText(n uint64) string { return fmt.Sprintf("%X/%X", n>>32, uint32(n)) }

// conn is what both kinds of connection share.
type conn struct {
	d        *Driver
	n        *Node
	dsn      string
	gen      int64        // the node's restarts when it was opened (Node.Restart)
	bad      bool         // a statement failed on a down node
	readOnly atomic.Bool  // in a transaction begun read-only
	running  atomic.Int32 // statements running (see Node.ClosedMidStatement)
	calls    atomic.Int32 // calls running on the connection (see Node.ConcurrentUse)

	// Transactions, as Node.SetCommitRecords follows them; under n.mu.
	tx, sqlTx, noAutocommit bool // begun by Begin, by BEGIN; SET autocommit=0
	txWrote                 bool // the transaction wrote: its commit moves the position
	commitAtClose           bool // the query just run commits when its rows close
}

// enter counts a call on c, flagging one that overlaps another; leave
// ends it.
func (c *conn) enter() {
	if c.calls.Add(1) > 1 {
		c.n.concurrent.Add(1)
	}
}

func (c *conn) leave() { c.calls.Add(-1) }

func (c *conn) Close() error {
	c.enter()
	defer c.leave()
	c.n.open.Add(-1)
	return nil
}

func (c *conn) Begin() (driver.Tx, error) { return c.begin(false) }

func (c *conn) begin(readOnly bool) (driver.Tx, error) {
	c.enter()
	defer c.leave()
	if c.n.down.Load() || c.gen != c.n.gen.Load() {
		c.bad = true
		return nil, c.d.opts.DownError
	}
	c.record("BEGIN", nil)
	c.readOnly.Store(readOnly)
	c.n.mu.Lock()
	c.tx = true
	c.n.mu.Unlock()
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
	if c.n.down.Load() || c.gen != c.n.gen.Load() {
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
	c.enter()
	defer c.leave()
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
		c.position(q, true)
	}
	return driver.RowsAffected(1), nil
}

var statusColumns = []string{"ro", "pos", "age"}

func (c *conn) query(ctx context.Context, q string, args []driver.Value) (driver.Rows, error) {
	c.enter()
	defer c.leave()
	c.running.Add(1)
	defer c.running.Add(-1)
	if err := c.run(q, args); err != nil {
		return nil, err
	}
	if h := c.d.opts.BeforeAnswer; h != nil {
		h(ctx, c.dsn, q)
	}
	if strings.Contains(q, "pg_postmaster_start_time()") {
		if id, ok := c.n.identity(); ok {
			return c.rows(&rows{cols: []string{"id"}, row: []driver.Value{id}}), nil
		}
	}
	if strings.Contains(q, "pg_is_in_recovery()") {
		if st, ok := c.n.statusOf(c.d.opts.Replication); ok {
			return c.rows(&rows{cols: statusColumns, row: []driver.Value{st.ReadOnly, st.LSN, st.ReplayAge}}), nil
		}
	}
	if c.d.opts.Replication {
		if lsn, ok := c.position(q, false); ok {
			return c.rows(&rows{cols: []string{"lsn"}, row: []driver.Value{lsn}}), nil
		}
	}
	r := &rows{cols: []string{"node"}, row: []driver.Value{c.dsn}}
	if c.commitAtClose { // Node.SetCommitRecords
		c.commitAtClose = false
		r.close = c.n.commitRecord
	}
	if c.d.opts.AnswerOne {
		r.cols, r.row = []string{"n"}, []driver.Value{int64(1)}
	}
	if e := c.n.rowsErr.Load(); e != nil {
		r.err = *e
	}
	return c.rows(r), nil
}

// rows counts r as one of c's open result sets (Node.OpenRows).
func (c *conn) rows(r *rows) *rows {
	r.c = c
	c.n.openRows.Add(1)
	return r
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

func (c *ctxConn) IsValid() bool {
	c.enter()
	defer c.leave()
	return !c.bad
}

func (c *ctxConn) Prepare(q string) (driver.Stmt, error) {
	c.enter()
	defer c.leave()
	if !c.d.opts.Prepare {
		return nil, driver.ErrSkip
	}
	return &stmt{c.conn, q}, nil
}

func (c *ctxConn) BeginTx(_ context.Context, o driver.TxOptions) (driver.Tx, error) {
	return c.begin(o.ReadOnly)
}

func (c *ctxConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.query(ctx, q, c.values(args))
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

func (c *legacyConn) Prepare(q string) (driver.Stmt, error) {
	c.enter()
	defer c.leave()
	return &stmt{c.conn, q}, nil
}

// stmt is a prepared statement of a Legacy connection, or of one with
// Options.Prepare.
type stmt struct {
	c *conn
	q string
}

func (s *stmt) Close() error {
	s.c.enter()
	defer s.c.leave()
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
	return s.c.query(context.Background(), s.q, args)
}

type tx struct{ c *conn }

func (t tx) Commit() error {
	t.c.enter()
	defer t.c.leave()
	if f := t.c.d.opts.Fail; f != nil {
		// Options.Fail sees a commit as the statement COMMIT.
		if err := f(t.c.dsn, "COMMIT"); err != nil {
			t.c.bad = true
			t.c.endTx(false)
			return err
		}
	}
	t.c.readOnly.Store(false)
	t.c.record("COMMIT", nil)
	t.c.endTx(true)
	return nil
}

func (t tx) Rollback() error {
	t.c.enter()
	defer t.c.leave()
	t.c.readOnly.Store(false)
	t.c.record("ROLLBACK", nil)
	t.c.endTx(false)
	return nil
}

// rows is a result of one row; with err set, the row is followed by err
// instead of the end of the result.
type rows struct {
	c      *conn // the connection that answered it
	cols   []string
	row    []driver.Value
	err    error
	done   bool
	closed bool
	close  func() // run at the first Close
}

func (r *rows) Columns() []string { return r.cols }

func (r *rows) Close() error {
	r.c.enter()
	defer r.c.leave()
	if !r.closed {
		r.closed = true
		r.c.n.openRows.Add(-1)
		if f := r.close; f != nil {
			r.close = nil
			f()
		}
	}
	return nil
}

func (r *rows) Next(dest []driver.Value) error {
	r.c.enter()
	defer r.c.leave()
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
