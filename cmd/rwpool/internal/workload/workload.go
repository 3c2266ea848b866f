// Package workload runs the rwpool demo's mixed read/write traffic against
// a *sql.DB opened with rwpool, and records, for every statement, which
// node served it (rwpool.WithRoute), how long it took and how it ended.
package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/routing"
)

// Table is the table the workload reads and updates.
const Table = "rwpool_demo"

// Kind tells reads from writes.
type Kind uint8

const (
	Read Kind = iota
	Write
)

// String returns "read" or "write".
func (k Kind) String() string {
	if k == Write {
		return "write"
	}
	return "read"
}

// Attempt is one execution of one statement.
type Attempt struct {
	Kind     Kind
	Node     string        // the node that ran it last (rwpool.Route.Node); "" if none was chosen
	Role     string        // that node's role
	Replays  int           // nodes that failed before Node (rwpool.Route.Replays)
	Start    time.Time     // when the statement was issued
	Latency  time.Duration // until it returned
	Err      error         // nil on success
	Timeout  bool          // it failed because its own deadline passed
	Retried  bool          // it timed out and the workload runs the operation again
	ServedBy string        // the server's own name, when Config.Identity is set and it succeeded
}

// Unavailable reports whether the attempt failed with rwpool.ErrUnavailable.
func (a *Attempt) Unavailable() bool { return a.Err != nil && errors.Is(a.Err, rwpool.ErrUnavailable) }

// Config describes a workload.
type Config struct {
	DB         *sql.DB
	Dialect    routing.Dialect // placeholder style: $1 for Postgres, ? otherwise
	Goroutines int             // concurrent workers (default 8)
	ReadRatio  float64         // share of reads, 0..1
	Rows       int             // rows in Table (default 100)
	// Identity adds the answering server's name to every read, from the
	// per-server table IdentityTable (the embedded demo servers have one).
	Identity      bool
	IdentityTable string
	// Timeout bounds each attempt (default 1s). A read whose attempt timed
	// out is run again, up to Retries more times: rwpool replays a read
	// that failed at the connection level, but not one whose own deadline
	// passed, as happens on a server that stopped answering.
	Timeout time.Duration
	Retries int
	// Pace is each worker's pause between operations, and Backoff its
	// pause after a failed one (defaults 2ms and 20ms), so that a fast
	// failure does not turn into a busy loop.
	Pace, Backoff time.Duration
	// Record receives every attempt, from the worker goroutines.
	Record func(Attempt)
}

func (c *Config) defaults() {
	if c.Goroutines <= 0 {
		c.Goroutines = 8
	}
	if c.Rows <= 0 {
		c.Rows = 100
	}
	if c.Timeout <= 0 {
		c.Timeout = time.Second
	}
	if c.Pace <= 0 {
		c.Pace = 2 * time.Millisecond
	}
	if c.Backoff <= 0 {
		c.Backoff = 20 * time.Millisecond
	}
}

// placeholder returns the dialect's first bind placeholder.
func placeholder(d routing.Dialect) string {
	if d == routing.DialectPostgres {
		return "$1"
	}
	return "?"
}

// Queries returns the read and the write statement of cfg.
func (c *Config) Queries() (read, write string) {
	ph := placeholder(c.Dialect)
	read = "SELECT v FROM " + Table + " WHERE id = " + ph
	if c.Identity {
		read = "SELECT (SELECT name FROM " + c.IdentityTable + "), v FROM " + Table + " WHERE id = " + ph
	}
	write = "UPDATE " + Table + " SET v = v + 1 WHERE id = " + ph
	return read, write
}

// Setup creates Table through db if it is missing and gives it rows rows
// (ids 1..rows), keeping rows that exist. The statements run through
// rwpool, so the DDL and inserts go to the primary.
func Setup(ctx context.Context, db *sql.DB, d routing.Dialect, rows int) error {
	if rows <= 0 {
		rows = 100
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+Table+" (id INT PRIMARY KEY, v BIGINT NOT NULL)"); err != nil {
		return fmt.Errorf("create table %s: %w", Table, err)
	}
	// Ask the primary which rows exist: a replica may lag behind the
	// CREATE TABLE.
	have := map[int]bool{}
	rs, err := db.QueryContext(rwpool.WithPrimary(ctx), "SELECT id FROM "+Table)
	if err != nil {
		return fmt.Errorf("read %s: %w", Table, err)
	}
	for rs.Next() {
		var id int
		if err := rs.Scan(&id); err != nil {
			rs.Close()
			return err
		}
		have[id] = true
	}
	if err := errors.Join(rs.Err(), rs.Close()); err != nil {
		return fmt.Errorf("read %s: %w", Table, err)
	}
	var vals []string
	for id := 1; id <= rows; id++ {
		if !have[id] {
			vals = append(vals, "("+strconv.Itoa(id)+", 0)")
		}
	}
	if len(vals) == 0 {
		return nil
	}
	// Literal values, no placeholders: the same text works everywhere. A
	// concurrent run may insert the same rows: ignore duplicates.
	ins := "INSERT INTO " + Table + " (id, v) VALUES " + strings.Join(vals, ", ")
	switch d {
	case routing.DialectPostgres:
		ins += " ON CONFLICT (id) DO NOTHING"
	case routing.DialectMySQL:
		ins = "INSERT IGNORE" + strings.TrimPrefix(ins, "INSERT")
	}
	if _, err := db.ExecContext(ctx, ins); err != nil {
		return fmt.Errorf("fill %s: %w", Table, err)
	}
	return nil
}

// Run runs the workload until ctx ends, then waits for the workers.
func Run(ctx context.Context, cfg Config) {
	cfg.defaults()
	read, write := cfg.Queries()
	var wg sync.WaitGroup
	for i := range cfg.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := worker{cfg: &cfg, read: read, write: write,
				rnd: rand.New(rand.NewPCG(uint64(i)+1, uint64(time.Now().UnixNano())))}
			w.loop(ctx)
		}()
	}
	wg.Wait()
}

type worker struct {
	cfg         *Config
	read, write string
	rnd         *rand.Rand
}

func (w *worker) loop(ctx context.Context) {
	for ctx.Err() == nil {
		id := 1 + w.rnd.IntN(w.cfg.Rows)
		var ok bool
		if w.rnd.Float64() < w.cfg.ReadRatio {
			ok = w.doRead(ctx, id)
		} else {
			ok = w.doWrite(ctx, id)
		}
		pause := w.cfg.Pace
		if !ok {
			pause = w.cfg.Backoff
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// doRead runs one read operation, retrying attempts that timed out.
func (w *worker) doRead(ctx context.Context, id int) bool {
	for try := 0; ; try++ {
		var r rwpool.Route
		a := Attempt{Kind: Read, Start: time.Now()}
		actx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
		row := w.cfg.DB.QueryRowContext(rwpool.WithRoute(actx, &r), w.read, id)
		var v int64
		if w.cfg.Identity {
			a.Err = row.Scan(&a.ServedBy, &v)
		} else {
			a.Err = row.Scan(&v)
		}
		if errors.Is(a.Err, sql.ErrNoRows) {
			a.Err = nil // a replica behind the seeding: still a served read
		}
		a.Timeout = a.Err != nil && actx.Err() != nil
		cancel()
		if ctx.Err() != nil && a.Err != nil {
			return true // the demo is over, not a failure
		}
		a.Latency = time.Since(a.Start)
		a.Node, a.Role, a.Replays = r.Node, r.Role, r.Replays
		a.Retried = a.Timeout && try < w.cfg.Retries
		w.cfg.Record(a)
		if !a.Retried {
			return a.Err == nil
		}
	}
}

// doWrite runs one write; a write is never retried (it is not idempotent).
func (w *worker) doWrite(ctx context.Context, id int) bool {
	var r rwpool.Route
	a := Attempt{Kind: Write, Start: time.Now()}
	actx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	_, a.Err = w.cfg.DB.ExecContext(rwpool.WithRoute(actx, &r), w.write, id)
	a.Timeout = a.Err != nil && actx.Err() != nil
	cancel()
	if ctx.Err() != nil && a.Err != nil {
		return true
	}
	a.Latency = time.Since(a.Start)
	a.Node, a.Role, a.Replays = r.Node, r.Role, r.Replays
	w.cfg.Record(a)
	return a.Err == nil
}
