package main

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"time"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/dsn"
)

// memoryResult holds the memory figures: bytes (heap plus goroutine
// stacks, after a GC) per open *sql.Conn and per node.
type memoryResult struct {
	driver       string
	conns        int
	bareConn     float64 // per *sql.Conn of the bare driver: one real connection each
	rwpoolConn   float64 // per *sql.Conn of rwpool: virtual, no I/O
	rwpoolStmt   float64 // per rwpool *sql.Conn after one SELECT 1 on each, held open
	nodes        int
	perNode      float64 // per replica of a DSN, pools not dialled
	perNodeHeap  float64
	perNodeStack float64
}

// memNow is the heap in use plus goroutine stacks, after two GCs.
func memNow() (heap, stack uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, m.StackInuse
}

// connCost opens n *sql.Conns from db, runs SELECT 1 on each if stmt, and
// returns the bytes per connection while they are all held open.
func connCost(ctx context.Context, db *sql.DB, n int, stmt bool) (float64, error) {
	h0, s0 := memNow()
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			return 0, err
		}
		conns = append(conns, c)
		if stmt {
			var one int
			if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
				return 0, err
			}
		}
	}
	h1, s1 := memNow()
	runtime.KeepAlive(conns)
	return (float64(h1) + float64(s1) - float64(h0) - float64(s0)) / float64(n), nil
}

// measureMemory measures bytes per connection and per node on driver d.
func measureMemory(ctx context.Context, d benchDriver) (memoryResult, error) {
	res := memoryResult{driver: d.Driver, conns: 50, nodes: 64}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	bare, err := sql.Open(d.Driver, d.NodeDSN(d.Replicas[0]))
	if err != nil {
		return res, err
	}
	bare.SetMaxIdleConns(maxIdle)
	res.bareConn, err = connCost(ctx, bare, res.conns, false)
	bare.Close()
	if err != nil {
		return res, fmt.Errorf("memory, bare: %w", err)
	}
	for _, stmt := range []bool{false, true} {
		rw, err := sql.Open("rwpool", rwpoolDSN(d, 1))
		if err != nil {
			return res, err
		}
		rw.SetMaxIdleConns(maxIdle)
		cost, err := connCost(ctx, rw, res.conns, stmt)
		rw.Close()
		if err != nil {
			return res, fmt.Errorf("memory, rwpool: %w", err)
		}
		if stmt {
			res.rwpoolStmt = cost
		} else {
			res.rwpoolConn = cost
		}
	}

	// Per node: a Connector with 1 replica against one with 1+nodes, all
	// the same server under different names. Measured right after
	// NewConnector returns: the pools dial nothing until a statement
	// needs them, and the health checkers' first probe is 1.6-2s away.
	connector := func(replicas int) (heap, stack int64, err error) {
		cfg, err := dsn.Parse(rwpoolDSN(d, 1))
		if err != nil {
			return 0, 0, err
		}
		r := cfg.Replicas[0]
		cfg.Replicas = nil
		for i := range replicas {
			r.Name = fmt.Sprintf("r%d", i+1)
			cfg.Replicas = append(cfg.Replicas, r)
		}
		h0, s0 := memNow()
		c, err := rwpool.NewConnector(cfg)
		if err != nil {
			return 0, 0, err
		}
		h1, s1 := memNow()
		runtime.KeepAlive(c)
		c.Close()
		return int64(h1) - int64(h0), int64(s1) - int64(s0), nil
	}
	h1, s1, err := connector(1)
	if err != nil {
		return res, err
	}
	hn, sn, err := connector(1 + res.nodes)
	if err != nil {
		return res, err
	}
	res.perNodeHeap = (float64(hn) - float64(h1)) / float64(res.nodes)
	res.perNodeStack = (float64(sn) - float64(s1)) / float64(res.nodes)
	res.perNode = res.perNodeHeap + res.perNodeStack
	return res, nil
}
