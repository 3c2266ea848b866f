package rwpool_test

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// legacyDriver is a database/sql driver with only the mandatory
// interfaces: no DriverContext, no ExecerContext or QueryerContext, no
// NamedValueChecker, no column-type interfaces. It answers every query with
// one row holding the node's name, and records what each node ran.
type legacyDriver struct {
	mu     sync.Mutex
	ran    map[string][]string // node name → statements
	args   map[string][]driver.Value
	opened map[string]int
	closed map[string]int
}

var legacy = &legacyDriver{
	ran:    map[string][]string{},
	args:   map[string][]driver.Value{},
	opened: map[string]int{},
	closed: map[string]int{},
}

func init() { sql.Register("rwpool-test-legacy", legacy) }

func (d *legacyDriver) Open(name string) (driver.Conn, error) {
	if strings.HasPrefix(name, "fail") {
		return nil, fmt.Errorf("legacy: cannot connect to %s", name)
	}
	d.mu.Lock()
	d.opened[name]++
	d.mu.Unlock()
	return &legacyConn{d: d, name: name}, nil
}

func (d *legacyDriver) record(node, q string, args []driver.Value) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ran[node] = append(d.ran[node], q)
	d.args[node] = append(d.args[node], args...)
}

func (d *legacyDriver) statements(node string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.ran[node]...)
}

type legacyConn struct {
	d    *legacyDriver
	name string
}

func (c *legacyConn) Prepare(q string) (driver.Stmt, error) { return &legacyStmt{c: c, q: q}, nil }
func (c *legacyConn) Close() error {
	c.d.mu.Lock()
	c.d.closed[c.name]++
	c.d.mu.Unlock()
	return nil
}
func (c *legacyConn) Begin() (driver.Tx, error) {
	c.d.record(c.name, "BEGIN", nil)
	return legacyTx{c}, nil
}

type legacyTx struct{ c *legacyConn }

func (t legacyTx) Commit() error   { t.c.d.record(t.c.name, "COMMIT", nil); return nil }
func (t legacyTx) Rollback() error { t.c.d.record(t.c.name, "ROLLBACK", nil); return nil }

type legacyStmt struct {
	c *legacyConn
	q string
}

func (s *legacyStmt) Close() error  { return nil }
func (s *legacyStmt) NumInput() int { return -1 }
func (s *legacyStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.c.d.record(s.c.name, s.q, args)
	return driver.RowsAffected(1), nil
}
func (s *legacyStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.c.d.record(s.c.name, s.q, args)
	return &legacyRows{node: s.c.name}, nil
}

type legacyRows struct {
	node string
	done bool
}

func (r *legacyRows) Columns() []string { return []string{"node"} }
func (r *legacyRows) Close() error      { return nil }
func (r *legacyRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = r.node
	return nil
}

var errNope = errors.New("nope")
