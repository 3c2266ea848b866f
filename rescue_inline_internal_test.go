package rwpool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// honourDriver's connections honour contexts as mysql and pgx do: a
// statement on a hung node blocks until its context ends, and the
// connection is bad afterwards. Rows are read one Next at a time, also
// blocking while the node hangs (a result stalled mid-stream).
type honourDriver struct {
	mu   sync.Mutex
	hang map[string]chan struct{}
}

var honour = &honourDriver{hang: map[string]chan struct{}{}}

func init() { sql.Register("rwpool-test-honour", honour) }

func (d *honourDriver) setHang(dsn string, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ch, ok := d.hang[dsn]; ok && !on {
		close(ch)
		delete(d.hang, dsn)
	} else if !ok && on {
		d.hang[dsn] = make(chan struct{})
	}
}

func (d *honourDriver) wait(ctx context.Context, dsn string) error {
	d.mu.Lock()
	ch := d.hang[dsn]
	d.mu.Unlock()
	if ch == nil {
		return ctx.Err()
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *honourDriver) Open(name string) (driver.Conn, error) {
	return &honourConn{d: d, dsn: name}, nil
}

type honourConn struct {
	d   *honourDriver
	dsn string
	bad bool
}

func (c *honourConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (c *honourConn) Close() error                        { return nil }
func (c *honourConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }
func (c *honourConn) IsValid() bool                       { return !c.bad }
func (c *honourConn) QueryContext(ctx context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	if s, ok := ctx.Value(ctxSeenKey{}).(*ctxSeen); ok {
		s.called, s.done, s.ctx = true, ctx.Done() != nil, ctx
	}
	if c.bad {
		return nil, driver.ErrBadConn
	}
	if err := c.d.wait(ctx, c.dsn); err != nil {
		c.bad = true
		return nil, err
	}
	return &honourRows{c: c, ctx: ctx, n: 3}, nil
}
func (c *honourConn) ExecContext(ctx context.Context, q string, _ []driver.NamedValue) (driver.Result, error) {
	if err := c.d.wait(ctx, c.dsn); err != nil {
		c.bad = true
		return nil, err
	}
	return driver.RowsAffected(1), nil
}

type honourRows struct {
	c   *honourConn
	ctx context.Context
	n   int
}

func (r *honourRows) Columns() []string { return []string{"node"} }
func (r *honourRows) Close() error      { return nil }
func (r *honourRows) Next(dest []driver.Value) error {
	if r.n == 0 {
		return io.EOF
	}
	if err := r.c.d.wait(r.ctx, r.c.dsn); err != nil {
		r.c.bad = true
		return err
	}
	r.n--
	dest[0] = r.c.dsn
	return nil
}

func openHonour(t *testing.T, extra string) (*sql.DB, string) {
	db, _, name := openHonourC(t, extra)
	return db, name
}

func openHonourC(t *testing.T, extra string) (*sql.DB, *Connector, string) {
	t.Helper()
	p, r1, r2 := t.Name()+"-p", t.Name()+"-r1", t.Name()+"-r2"
	base := "driver=rwpool-test-honour;probe_timeout=100ms;primary=" + p + ";replica=" + r1 + ";replica=" + r2
	if !strings.Contains(extra, "check_interval") {
		base += ";check_interval=50ms"
	}
	db := openHonouring(t, base+extra)
	c := connectorOf(db)
	t.Cleanup(func() {
		for _, n := range []string{p, r1, r2} {
			honour.setHang(n, false)
		}
		db.Close()
	})
	return db, c, t.Name()
}

// Stress of the inline path: readers with and without deadlines, hedges
// and rescues, replicas hanging on and off.
func TestInlineStress(t *testing.T) {
	db, name := openHonour(t, ";hedge_after=1ms;hedge_budget=100%")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(20+(g*7+i)%80)*time.Millisecond)
				if g%2 == 0 {
					cancel()
					ctx, cancel = context.WithTimeout(context.Background(), time.Second)
				}
				rows, err := db.QueryContext(ctx, "SELECT node")
				if err == nil {
					for rows.Next() {
					}
					rows.Close()
				}
				cancel()
			}
		}()
	}
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		honour.setHang(name+"-r"+string(rune('1'+i%2)), i%3 != 0)
		time.Sleep(37 * time.Millisecond)
	}
	honour.setHang(name+"-r1", false)
	honour.setHang(name+"-r2", false)
	close(stop)
	wg.Wait()
}

// A read with a deadline on a hung replica is rescued once the replica
// trips: it answers from elsewhere well before its deadline.
func TestInlineRescue(t *testing.T) {
	db, name := openHonour(t, ";check_interval=1h")
	honour.setHang(name+"-r1", true)
	honour.setHang(name+"-r2", true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	var node string
	if err := db.QueryRowContext(ctx, "SELECT node").Scan(&node); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("read took %s", took)
	}
	t.Logf("answered by %s after %s", node, time.Since(start))
}

// Rows handed over on a node that then hangs fail fast once it trips.
func TestInlineRowsRescued(t *testing.T) {
	db, _ := openHonour(t, ";check_interval=1h")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT node")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	rows.Next()
	var node string
	rows.Scan(&node)
	honour.setHang(node, true)
	start := time.Now()
	for rows.Next() {
	}
	t.Logf("rows ended after %s: %v", time.Since(start), rows.Err())
	if time.Since(start) > 2*time.Second || rows.Err() == nil {
		t.Fatalf("rows on a hung node: %v after %s", rows.Err(), time.Since(start))
	}
}

// A read without a deadline on the inline path is handed the caller's
// context, one that can never end, unless the driver ties a statement to
// a context cheaply (pgx: cheapCtx): go-sql-driver/mysql would otherwise
// watch every such statement with a goroutine of its own (see the top of
// rescue.go). With a deadline, or with hedging on, the driver gets
// rwpool's readCtx.
func TestInlineBackgroundNotWatched(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		cheap       bool
		deadline    bool
		wantDone    bool
	}{
		{"background", "", false, false, false},
		{"background-pgx", "", true, false, true},
		{"deadline", "", false, true, true},
		{"background-hedged", ";hedge_after=1h", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, c, _ := openHonourC(t, tc.extra)
			c.cheapCtx = tc.cheap // before the first read
			ctx := context.Background()
			if tc.deadline {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
			}
			var seen ctxSeen
			var node string
			if err := db.QueryRowContext(context.WithValue(ctx, ctxSeenKey{}, &seen), "SELECT node").Scan(&node); err != nil {
				t.Fatal(err)
			}
			if !seen.called || seen.done != tc.wantDone {
				t.Errorf("driver called %v, saw a context that can end: %v, want %v", seen.called, seen.done, tc.wantDone)
			}
			if _, isRead := seen.ctx.(*readCtx); isRead != tc.wantDone {
				t.Errorf("driver got a readCtx: %v, want %v", isRead, tc.wantDone)
			}
		})
	}
}

// On a driver that ties contexts cheaply (pgx), a read without a deadline
// is rescued when its node trips: its context is the connection's child of
// the node's trip context.
func TestInlineBackgroundRescue(t *testing.T) {
	db, c, name := openHonourC(t, ";check_interval=1h")
	c.cheapCtx = true // before the first read
	honour.setHang(name+"-r1", true)
	honour.setHang(name+"-r2", true)
	done := make(chan error, 1)
	go func() {
		var node string
		done <- db.QueryRowContext(context.Background(), "SELECT node").Scan(&node)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for c.topo().replicas[0].pool.Stat().InUse+c.topo().replicas[1].pool.Stat().InUse == 0 {
		if time.Now().After(deadline) {
			t.Fatal("read not in flight")
		}
		time.Sleep(time.Millisecond)
	}
	for _, n := range c.topo().replicas {
		n.health.Trip(io.ErrUnexpectedEOF)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("read not rescued")
	}
}

// ctxSeen records the context honourConn.QueryContext got, when the
// statement's context carries one under ctxSeenKey.
type (
	ctxSeenKey struct{}
	ctxSeen    struct {
		called bool
		done   bool
		ctx    context.Context
	}
)

// Inline path (mysql, pgx): a read in flight when the
// Connector closes must still end at its deadline.
func TestInlineCloseKeepsDeadline(t *testing.T) {
	db, c, name := openHonourC(t, ";check_interval=1h")
	honour.setHang(name+"-r1", true)
	honour.setHang(name+"-r2", true)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var node string
		done <- db.QueryRowContext(ctx, "SELECT node").Scan(&node)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for c.topo().replicas[0].pool.Stat().InUse+c.topo().replicas[1].pool.Stat().InUse == 0 {
		if time.Now().After(deadline) {
			t.Fatal("read not in flight")
		}
		time.Sleep(time.Millisecond)
	}
	db.Close()
	select {
	case err := <-done:
		t.Logf("read ended: %v", err)
	case <-time.After(3 * time.Second):
		honour.setHang(name+"-r1", false)
		honour.setHang(name+"-r2", false)
		<-done
		t.Fatal("a read with a 300ms deadline still ran 3s after its Connector closed")
	}
}
