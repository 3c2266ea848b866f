package simcluster

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rwpool/rwpool/internal/fakedriver"
)

// The drivers' names, as a node's driver= DSN key names them. rwpool reads
// the flavor from them; it knows neither, so it treats both as it treats
// lib/pq: contexts are not honoured, driver.ErrBadConn may follow a
// statement that reached the server.
const (
	PostgresDriver = "rwpool-sim-postgres"
	MariaDBDriver  = "rwpool-sim-mariadb"
)

func init() {
	sql.Register(PostgresDriver, &drv{f: Postgres})
	sql.Register(MariaDBDriver, &drv{f: MariaDB})
}

// DriverName returns the name of f's driver.
func DriverName(f Flavor) string {
	if f == MariaDB {
		return MariaDBDriver
	}
	return PostgresDriver
}

// registry maps a cluster's name to it: a node DSN is "<cluster>/<endpoint>".
var registry = clusters{m: map[string]*Cluster{}}

type clusters struct {
	mu sync.Mutex
	m  map[string]*Cluster
}

func (r *clusters) add(c *Cluster) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[c.Name] = c
}

func (r *clusters) remove(c *Cluster) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, c.Name)
}

func (r *clusters) get(name string) *Cluster {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[name]
}

type drv struct{ f Flavor }

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// Open dials the endpoint a node DSN names: CLUSTER/ENDPOINT, or, as
// rwpool's discovery writes a replica's DSN from the primary's
// (dsn.Node.WithAddress), CLUSTER/ENDPOINT host=OTHER, which dials OTHER.
func (d *drv) Open(dsn string) (driver.Conn, error) {
	if base, host, ok := strings.Cut(dsn, " host="); ok {
		j := strings.LastIndexByte(base, '/')
		if j < 0 {
			return nil, fmt.Errorf("simcluster: no cluster for %q", dsn)
		}
		dsn = base[:j+1] + host
	}
	i := strings.LastIndexByte(dsn, '/') // endpoint names have none
	if i < 0 {
		return nil, fmt.Errorf("simcluster: no cluster for %q", dsn)
	}
	c := registry.get(dsn[:i])
	ep := dsn[i+1:]
	if c == nil {
		return nil, fmt.Errorf("simcluster: no cluster for %q", dsn)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.endpoints[ep]
	if e == nil || len(e.servers) == 0 {
		return nil, errRefused
	}
	s := e.servers[c.rng.IntN(len(e.servers))]
	if s.down {
		return nil, errRefused
	}
	cn := &conn{c: c, s: s, gen: s.gen}
	// Who dialled it, and what it last ran: a connection left open after
	// Close (the simulation's close-leak) is named by them.
	cn.dialler = make([]uintptr, 24)
	cn.dialler = cn.dialler[:runtime.Callers(2, cn.dialler)]
	c.conns[cn] = struct{}{}
	return cn, nil
}

// ErrLostAfter is what a statement that reached the server and was applied
// returns when its connection is lost before the answer: driver.ErrBadConn,
// as lib/pq reports it, so only the caller's knowledge of the driver tells
// it from a loss before the statement was sent.
var ErrLostAfter = fmt.Errorf("simcluster: connection lost after the statement reached the server: %w", driver.ErrBadConn)

// errLostBefore: nothing reached the server.
var errLostBefore = fmt.Errorf("simcluster: connection lost before the statement was sent: %w", driver.ErrBadConn)

// errPoolerRefused is what a pooler in front of a server (Cluster.Pooled)
// answers a statement it gives to no server, as pgx reports PgBouncer's.
var errPoolerRefused = &fakedriver.PostgresError{Code: "08P01",
	Message: "server login has been failing, try again later (server_login_retry)"}

// conn is one connection to one server.
type conn struct {
	c    *Cluster
	s    *Server
	gen  int // the server's generation when dialled: a restart breaks it
	busy atomic.Bool

	// c.mu guards the rest.
	closed   bool
	broken   bool
	rows     int      // rows open on it
	tx       *txState // driver-level or SQL-level transaction
	lastGTID gtid
	last     string    // the last statement sent on it
	dialler  []uintptr // the stack that dialled it (OpenDetail)
}

type txState struct {
	readOnly bool
	sql      bool // begun by a statement (BEGIN, SET autocommit=0)
	ids      []int64
}

var _ interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Validator
	driver.SessionResetter
} = (*conn)(nil)

func (cn *conn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }

func (cn *conn) Close() error {
	c := cn.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !cn.closed {
		cn.closed = true
		delete(c.conns, cn)
		// Its rows end with it: a driver's rows need no Close of their
		// own once their connection is closed.
		c.openRows -= cn.rows
		cn.rows = 0
	}
	return nil
}

func (cn *conn) IsValid() bool {
	cn.c.mu.Lock()
	defer cn.c.mu.Unlock()
	return !cn.broken && cn.gen == cn.s.gen && !cn.s.down
}

func (cn *conn) ResetSession(context.Context) error {
	if !cn.IsValid() {
		return driver.ErrBadConn
	}
	return nil
}

func (cn *conn) Begin() (driver.Tx, error) {
	return cn.BeginTx(context.Background(), driver.TxOptions{})
}

func (cn *conn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	if err := cn.enter("BEGIN"); err != nil {
		return nil, err
	}
	defer cn.leave()
	c := cn.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := cn.aliveLocked(); err != nil {
		return nil, err
	}
	cn.tx = &txState{readOnly: o.ReadOnly}
	return tx{cn}, nil
}

type tx struct{ cn *conn }

func (t tx) Commit() error { return t.cn.call("COMMIT", t.cn.commitLocked) }

// call runs f, a statement q of the driver's own API (not SQL), as run
// runs SQL: marked busy, held while the server hangs, under the cluster's
// lock.
func (cn *conn) call(q string, f func() error) error {
	if err := cn.enter(q); err != nil {
		return err
	}
	defer cn.leave()
	if err := cn.wait(false, false); err != nil {
		return err
	}
	cn.c.mu.Lock()
	defer cn.c.mu.Unlock()
	return f()
}

func (t tx) Rollback() error {
	cn := t.cn
	if err := cn.enter("ROLLBACK"); err != nil {
		return err
	}
	defer cn.leave()
	c := cn.c
	c.mu.Lock()
	defer c.mu.Unlock()
	cn.tx = nil
	return nil
}

// enter marks the connection busy; a second caller at once is a violation
// (database/sql never does it, and a real driver does not survive it).
// A statement on a connection whose rows are open is one too.
func (cn *conn) enter(q string) error {
	if !cn.busy.CompareAndSwap(false, true) {
		cn.c.mu.Lock()
		cn.c.violate("conn-shared", "connection to %s used by two callers at once (%.40q)", cn.s.Name, q)
		cn.c.mu.Unlock()
		return errors.New("simcluster: connection busy")
	}
	cn.c.mu.Lock()
	defer cn.c.mu.Unlock()
	cn.last = q
	if cn.rows > 0 && q != "COMMIT" && q != "ROLLBACK" {
		// database/sql itself commits a transaction on the connection its
		// rows came from; anything else there is another caller's.
		cn.c.violate("rows-open", "statement %.40q sent to %s on a connection whose rows are still open", q, cn.s.Name)
	}
	if cn.closed {
		cn.busy.Store(false)
		return driver.ErrBadConn
	}
	return nil
}

func (cn *conn) leave() { cn.busy.Store(false) }

func (cn *conn) aliveLocked() error {
	if cn.broken || cn.gen != cn.s.gen || cn.s.down {
		cn.broken = true
		return errLostBefore
	}
	return nil
}

// wait holds a statement while its server hangs (whatever its context
// says, as lib/pq would) and for the server's slowness; position queries
// (pos) also for their own. probe marks rwpool's own probe and status
// queries, counted while they are stuck.
func (cn *conn) wait(pos, probe bool) error {
	c := cn.c
	c.mu.Lock()
	s := cn.s
	h, d := s.hang, s.slow
	if pos {
		d += s.posSlow
	}
	if h != nil && probe {
		s.probesStuck++
		if c.maxStuck > 0 && s.probesStuck > c.maxStuck {
			c.violate("stuck-probes", "%d of rwpool's probe or position queries stuck on hung %s at once (bound %d)", s.probesStuck, s.Name, c.maxStuck)
		}
	}
	c.mu.Unlock()
	if h != nil {
		<-h
		if probe {
			c.mu.Lock()
			s.probesStuck--
			c.mu.Unlock()
		}
	}
	if d > 0 {
		time.Sleep(d)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return cn.aliveLocked()
}

// lose decides whether this statement loses its connection: before it
// reached the server (nothing done) or after (done, answer lost).
func (cn *conn) lose() (before, after bool) {
	p := cn.s.lossP
	if p == 0 {
		return false, false
	}
	x := cn.c.rng.Float64()
	if x < p/2 {
		cn.broken = true
		return true, false
	}
	if x < p {
		return false, true
	}
	return false, false
}

// poolerRefuses decides whether the pooler in front of the server
// (Cluster.Pooled) refuses this statement; the client connection ends with
// the refusal.
func (cn *conn) poolerRefuses() bool {
	if p := cn.s.poolP; p == 0 || cn.tx != nil || cn.c.rng.Float64() >= p {
		return false
	}
	cn.broken = true
	return true
}

func (cn *conn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	r, err := cn.run(q, args)
	if err != nil {
		return nil, err
	}
	r.Close()
	return driver.RowsAffected(r.affected), nil
}

func (cn *conn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := cn.run(q, args)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Copy inserts ids in one statement, as a COPY through the driver's own API
// (rwpool.Raw) would.
func (cn *conn) Copy(ids []int64) error {
	return cn.call("COPY", func() error {
		if err := cn.aliveLocked(); err != nil {
			return err
		}
		return cn.insertLocked(ids)
	})
}

func (cn *conn) run(q string, args []driver.NamedValue) (*rows, error) {
	if err := cn.enter(q); err != nil {
		return nil, err
	}
	defer cn.leave()
	st, err := parse(q, args)
	if err != nil {
		return nil, err
	}
	if err := cn.wait(st.kind == kindStatus || st.kind == kindPosition, st.kind == kindStatus || st.kind == kindOne); err != nil {
		return nil, err
	}
	if st.kind == kindWaitGTID {
		return cn.waitGTID(st)
	}
	c := cn.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := cn.aliveLocked(); err != nil {
		return nil, err
	}
	s := cn.s
	s.catchUp(time.Now())
	before, after := cn.lose()
	if before {
		return nil, errLostBefore
	}
	if cn.poolerRefuses() {
		return nil, errPoolerRefused
	}
	r, err := cn.execLocked(st)
	if after {
		cn.broken = true
		if r != nil {
			r.closeLocked(false)
		}
		return nil, ErrLostAfter
	}
	if err != nil {
		return nil, err
	}
	cn.rows++
	c.openRows++
	return r, nil
}

func (cn *conn) readOnlyError() error {
	if cn.c.Flavor == Postgres {
		return &fakedriver.PostgresError{Code: "25006", Message: "cannot execute INSERT in a read-only transaction"}
	}
	return &fakedriver.MySQLError{Number: 1290, Message: "The MariaDB server is running with the --read-only option so it cannot execute this statement"}
}

// insertLocked runs an insert: inside a transaction it is buffered (its
// record moves the position), outside it commits at once.
func (cn *conn) insertLocked(ids []int64) error {
	s := cn.s
	if s.readOnly || cn.tx != nil && cn.tx.readOnly {
		return cn.readOnlyError()
	}
	if cn.tx != nil {
		cn.tx.ids = append(cn.tx.ids, ids...)
		s.appendStatement()
		return nil
	}
	cn.lastGTID = s.appendCommit(ids)
	return nil
}

func (cn *conn) commitLocked() error {
	t := cn.tx
	cn.tx = nil
	if t == nil || len(t.ids) == 0 {
		return nil
	}
	if err := cn.aliveLocked(); err != nil {
		return err
	}
	if cn.s.readOnly {
		return cn.readOnlyError()
	}
	cn.lastGTID = cn.s.appendCommit(t.ids)
	return nil
}

func (cn *conn) execLocked(st statement) (*rows, error) {
	s := cn.s
	r := &rows{cn: cn}
	switch st.kind {
	case kindInsert:
		if err := cn.insertLocked(st.ids); err != nil {
			return nil, err
		}
		r.affected = int64(len(st.ids))
		if st.returning {
			r.cols = []string{"id"}
			for _, id := range st.ids {
				r.data = append(r.data, []driver.Value{id})
			}
		}
	case kindSelectID:
		r.cols = []string{"id"}
		if s.has(st.ids[0]) || cn.tx != nil && containsID(cn.tx.ids, st.ids[0]) {
			r.data = [][]driver.Value{{st.ids[0]}}
		}
	case kindBegin:
		cn.tx = &txState{sql: true}
	case kindCommit:
		if err := cn.commitLocked(); err != nil {
			return nil, err
		}
	case kindRollback:
		cn.tx = nil
	case kindOne:
		r.cols, r.data = []string{"?column?"}, [][]driver.Value{{int64(1)}}
	case kindNode:
		r.cols, r.data = []string{"node"}, [][]driver.Value{{s.Name}}
	case kindStatus, kindPosition:
		r.cols, r.data = cn.statusLocked(st)
	default:
		return nil, fmt.Errorf("simcluster: unknown statement %q", st.q)
	}
	return r, nil
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func lsnText(n uint64) string { return fmt.Sprintf("%X/%X", n>>32, uint32(n)) }

// statusLocked answers rwpool's status, position, identity and version
// queries.
func (cn *conn) statusLocked(st statement) ([]string, [][]driver.Value) {
	s := cn.s
	one := func(v driver.Value) ([]string, [][]driver.Value) {
		return []string{"v"}, [][]driver.Value{{v}}
	}
	switch st.what {
	case "pg_status":
		age := -1.0
		var received driver.Value // NULL: not a standby
		if s.upstream != nil {
			received = lsnText(s.received())
		}
		if st.timeline {
			return []string{"ro", "pos", "age", "received", "tli"},
				[][]driver.Value{{s.readOnly || s.upstream != nil, lsnText(s.lsn()), age, received, int64(s.timeline())}}
		}
		return []string{"ro", "pos", "age", "received"}, [][]driver.Value{{s.readOnly || s.upstream != nil, lsnText(s.lsn()), age, received}}
	case "pg_current":
		if s.upstream != nil {
			return one(nil) // ERROR in recovery, in truth; nil parses as no position
		}
		if strings.Contains(st.q, "pg_walfile_name") {
			return one(fmt.Sprintf("%s %d", lsnText(s.lsn()), s.timeline()))
		}
		return one(lsnText(s.lsn()))
	case "pg_replay":
		if s.upstream == nil {
			return one(nil)
		}
		return one(lsnText(s.lsn()))
	case "pg_identity":
		return one(fmt.Sprintf("10.0.0.%d:5432/2026-12-01 00:00:%02d+00", s.sid, s.gen%60))
	case "pg_system":
		// The cluster's identity, the same on every server (a standby is
		// a copy of the primary), whatever its promotions.
		return one(cn.c.systemID)
	case "my_identity":
		return one(fmt.Sprintf("host%d:3306/%d", s.sid, s.sid))
	case "my_version":
		return one("10.11.6-MariaDB-sim")
	case "my_status_primary":
		return []string{"ro", "pos"}, [][]driver.Value{{boolInt(s.readOnly), s.lastGTID.String()}}
	case "my_status_replica":
		return []string{"ro", "pos"}, [][]driver.Value{{boolInt(s.readOnly), s.slavePos.String()}}
	case "my_binlog":
		return one(s.lastGTID.String())
	case "my_written":
		// rwpool asks IF(@@last_gtid = '', @@gtid_binlog_pos, @@last_gtid):
		// the session's own last GTID, else the server's.
		if cn.lastGTID.seq != 0 {
			return one(cn.lastGTID.String())
		}
		return one(s.lastGTID.String())
	}
	panic("simcluster: status " + st.what)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// waitGTID answers MASTER_GTID_WAIT: 0 once the server has replayed the
// sequence number, -1 after the timeout. Like MariaDB it compares sequence
// numbers in the domain, not the origin. Asked with @@gtid_current_pos
// (rwpool's AppliedQuery), it answers "result,position".
func (cn *conn) waitGTID(st statement) (*rows, error) {
	c := cn.c
	deadline := time.Now().Add(st.wait)
	for {
		c.mu.Lock()
		if err := cn.aliveLocked(); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		cn.s.catchUp(time.Now())
		ok := cn.s.slavePos.seq >= st.seq || cn.s.lastGTID.seq >= st.seq
		if ok || !time.Now().Before(deadline) {
			var v driver.Value = int64(-1)
			if ok {
				v = int64(0)
			}
			if st.withPos {
				// CONCAT(MASTER_GTID_WAIT(...), ',', @@gtid_current_pos):
				// per domain, the newer of the binlog's and the
				// replicated position.
				cur := cn.s.lastGTID
				if cn.s.slavePos.seq > cur.seq {
					cur = cn.s.slavePos
				}
				v = fmt.Sprintf("%d,%s", v, cur)
			}
			r := &rows{cn: cn, cols: []string{"w"}, data: [][]driver.Value{{v}}}
			cn.rows++
			c.openRows++
			c.mu.Unlock()
			return r, nil
		}
		c.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
}

// rows is a result set; Next blocks while the server hangs and fails once
// the connection is lost.
type rows struct {
	cn       *conn
	cols     []string
	data     [][]driver.Value
	affected int64
	closed   bool
}

func (r *rows) Columns() []string {
	if r.cols == nil {
		return []string{"n"}
	}
	return r.cols
}

func (r *rows) Close() error {
	c := r.cn.c
	c.mu.Lock()
	defer c.mu.Unlock()
	r.closeLocked(true)
	return nil
}

func (r *rows) closeLocked(counted bool) {
	if r.closed {
		return
	}
	r.closed = true
	if counted && !r.cn.closed {
		r.cn.rows--
		r.cn.c.openRows--
	}
}

func (r *rows) Next(dest []driver.Value) error {
	cn := r.cn
	if err := cn.wait(false, false); err != nil {
		return io.ErrUnexpectedEOF
	}
	if len(r.data) == 0 {
		return io.EOF
	}
	copy(dest, r.data[0])
	r.data = r.data[1:]
	return nil
}
