package rwpool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwpool/rwpool/dsn"
	"github.com/rwpool/rwpool/internal/balance"
	"github.com/rwpool/rwpool/internal/breaker"
	"github.com/rwpool/rwpool/internal/driverinfo"
	"github.com/rwpool/rwpool/internal/replication"
	"github.com/rwpool/rwpool/internal/routecache"
	"github.com/rwpool/rwpool/pool"
	"github.com/rwpool/rwpool/routing"
)

// Connector is a driver.Connector over one primary and its replicas. It owns
// one pool of real connections per node. Close it (sql.DB.Close does) to
// close every real connection and stop every background goroutine.
type Connector struct {
	cfg         dsn.Config // private copy; never changed after NewConnector
	dialect     routing.Dialect
	watch       bool                     // the driver may block past a context's end (needsWatch)
	cheapCtx    bool                     // the driver ties a statement to a context without a goroutine hand-off (driverinfo.TiesContextCheaply)
	safeBadConn bool                     // the driver's driver.ErrBadConn means nothing was sent (driverinfo.SafeBadConn)
	parks       bool                     // leases park their last connection for diagnostics statements (lease.park)
	drv         *Driver                  // returned by Driver, so Stats can find us from a *sql.DB
	prim        atomic.Pointer[node]     // the node writes go to (primaryNode)
	top         atomic.Pointer[topology] // the nodes now (topology.go)
	topoMu      sync.Mutex               // serialises changes of top, draining and closing (discover.go)
	draining    []*node                  // nodes that left top and still run statements (drain)
	discoverers []*discoverer            // one per discover item
	adaptive    bool                     // balance=adaptive: reads are measured (balance.go)
	clock       func() int64             // balance=adaptive's monotonic clock, ns
	follow      follower                 // the roles the servers report, with follow_promotion (promote.go)
	cache       *routecache.Cache        // the classifier's decisions for repeated statements
	hedges      hedgeBudget              // hedge_budget's accounting (hedge.go)
	sweep       sweeper                  // watches reads in flight (sweep.go)
	flav        atomic.Uint32            // replication.Flavor, once known
	noTimeline  atomic.Bool              // the PostgreSQL status query without timelines (readStatus)
	history     replication.History      // the primary's recent positions, for replica lag
	fresh       freshPrimary             // the primary's newest position and when it was asked (staleness.go)
	clusterID   atomic.Pointer[uint32]   // the cluster's token tag, once read (token.go)
	barGone     time.Duration            // barGoneAfter; shorter in tests (balancerbar.go)

	logger    atomic.Pointer[slog.Logger]
	handler   atomic.Pointer[func(Event)]
	observers atomic.Pointer[[]func(context.Context, StatementInfo)] // WithStatementObserver's, copied on write
	observeMu sync.Mutex                                             // serialises WithStatementObserver

	primaryWatch primaryWatch // wakes writes waiting for the primary (failover_wait)
	writeWaiters atomic.Int64 // writes waiting for the primary now

	stop      chan struct{}   // closed by Close: stops the health checkers
	bgCtx     context.Context // cancelled by Close, with stop: the discover sources' questions
	bgCancel  context.CancelFunc
	bg        background  // every background goroutine
	workers   callWorkers // idle goroutines for watched queries and execs (watchcall.go)
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ interface {
	driver.Connector
	io.Closer
} = (*Connector)(nil)

// NewConnector returns a Connector for cfg, for use with sql.OpenDB:
//
//	cfg := dsn.NewConfig()
//	cfg.Driver = "postgres"
//	cfg.Primary.DSN = "host=db1 user=app dbname=shop"
//	cfg.Replicas = []dsn.Node{{DSN: "host=db2 user=app dbname=shop", Weight: 1}}
//	c, err := rwpool.NewConnector(cfg)
//	if err != nil { ... }
//	db := sql.OpenDB(c)
//
// cfg must come from dsn.NewConfig or dsn.Parse (a dsn.Config literal is
// rejected: its zero values would silently turn off the breaker and
// waiting). It is validated with the same rules as a parsed DSN and copied,
// with default node names filled in (cfg.Nodes()); later changes to cfg
// have no effect. The underlying driver must be registered with
// database/sql, usually by a blank import.
func NewConnector(cfg *dsn.Config, opts ...Option) (*Connector, error) {
	if cfg == nil {
		return nil, errors.New("rwpool: nil config")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cp := *cfg
	cp.Discover = slices.Clone(cfg.Discover) // not shared with cfg
	nodes := cfg.Nodes()                     // a fresh slice, not shared with cfg
	cp.Primary, cp.Replicas = nodes[0], nil
	if len(nodes) > 1 {
		cp.Replicas = nodes[1:]
	}
	real, err := lookupDriver(&cp)
	if err != nil {
		return nil, err
	}
	c := &Connector{cfg: cp, dialect: routing.DialectOf(cp.Driver), stop: make(chan struct{}),
		watch: needsWatch(cp.Driver), cheapCtx: driverinfo.TiesContextCheaply(cp.Driver),
		safeBadConn: driverinfo.SafeBadConn(cp.Driver), barGone: barGoneAfter}
	c.drv = &Driver{c: c}
	c.bgCtx, c.bgCancel = context.WithCancel(context.Background())
	// Only MySQL and MariaDB have statements that read the previous
	// statement's diagnostics (routing.Previous); PostgreSQL has none at
	// the top level, so its leases need not keep a connection back.
	c.parks = c.dialect != routing.DialectPostgres
	c.cache = routecache.New(c.dialect, classifyCacheSize)
	c.hedges.share = cp.HedgeBudget / 100
	c.sweep.init(cp.HedgeAfter, cp.ProbeTimeout)
	// As many idle workers as calls can run at once: one per pooled
	// connection.
	c.workers.max, c.workers.closed = cp.PoolSize*len(nodes), &c.closed
	if c.dialect == routing.DialectPostgres {
		c.flav.Store(uint32(replication.Postgres))
	}
	for _, o := range opts {
		o(c)
	}

	all := make([]*node, 0, len(nodes))
	for _, nc := range nodes {
		n, err := c.newNode(real, nc)
		if err != nil {
			for _, n := range all {
				n.pool.Close()
				closeConnector(n.conn.Connector)
			}
			c.Close()
			return nil, err
		}
		all = append(all, n)
		if nc.Role == dsn.RolePrimary {
			c.prim.Store(n)
		}
	}
	c.adaptive = cp.Balance == dsn.BalanceAdaptive
	if c.adaptive {
		c.clock = balance.Clock(time.Now())
	}
	c.top.Store(c.newTopology(all))
	if cp.Breaker {
		for _, n := range c.topo().nodes {
			c.startChecker(n)
		}
	}
	if err := c.startDiscovery(real); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// startChecker runs the node's health checker until Close. It owns the
// node's dedicated probe connection.
func (c *Connector) startChecker(n *node) {
	c.bg.Go(func() {
		var conn driver.Conn
		hc := breaker.Checker{
			Node:     n.health,
			Interval: c.cfg.CheckInterval,
			// An unavailable node is probed twice as often, but never
			// more often than probe_timeout (a hung node's probes must
			// not overlap): with the defaults, a restarted node serves
			// again within about a second of accepting connections
			// instead of two.
			DownInterval: max(c.cfg.CheckInterval/2, c.cfg.ProbeTimeout),
			Probe:        func(fresh bool) (time.Duration, error) { return n.probe(&conn, fresh) },
			// Connections from before the outage are suspect: drop the idle
			// ones and let the pool refill gradually (MaxConcurrentDials).
			OnRecover: n.pool.DiscardIdle,
		}
		stop := c.stop
		if n.stop != nil {
			stop = n.stop // a discovered node's: closed when it leaves, or by Close
		}
		hc.Run(stop)
		if conn != nil {
			conn.Close()
		}
	})
}

// newNode builds the real connector and the pool of one node.
func (c *Connector) newNode(real driver.Driver, nc dsn.Node) (*node, error) {
	var rc driver.Connector = dsnConnector{drv: real, dsn: nc.DSN}
	if dc, ok := real.(driver.DriverContext); ok {
		var err error
		if rc, err = dc.OpenConnector(nc.DSN); err != nil {
			return nil, &nodeError{node: nc.Name, op: "open connector", err: redactErr(err, nc.DSN)}
		}
	}
	n := &node{c: c, cfg: nc, conn: nodeConnector{Connector: rc, dsn: nc.DSN, c: c}}
	n.conn.probeOf = n
	n.addrHost, n.addrPort = nc.Address()
	n.newTrip()
	n.health = breaker.NewNode(nc.Name, nc.Role.String(), func(e Event) {
		n.onEvent(e)
		c.notify(e)
	})
	p, err := pool.New(pool.Config{
		Name:           nc.Name,
		Connector:      nodeConnector{Connector: rc, dsn: nc.DSN, c: c, pool: n},
		MaxOpen:        c.cfg.PoolSize,
		MinIdle:        c.cfg.MinIdle,
		AcquireTimeout: c.cfg.AcquireTimeout,
		IdleTimeout:    c.cfg.IdleTimeout,
		MaxLifetime:    c.cfg.MaxLifetime,
		MaxWaiters:     c.cfg.MaxWaiters,
		// A cap on dials in flight: after an outage, or on a cold start
		// under load, the pool refills gradually instead of storming the
		// server with pool_size connection attempts at once.
		MaxConcurrentDials: min(c.cfg.PoolSize, maxConcurrentDials),
	})
	if err != nil {
		closeConnector(rc)
		return nil, err // names the node
	}
	n.pool = p
	return n, nil
}

// lookupDriver finds the registered driver cfg names. database/sql offers no
// lookup by name, so it opens (without connecting) a throwaway *sql.DB.
func lookupDriver(cfg *dsn.Config) (driver.Driver, error) {
	if cfg.Driver == DriverName {
		return nil, errors.New("rwpool: dsn: driver: rwpool cannot route to itself")
	}
	if !slices.Contains(sql.Drivers(), cfg.Driver) {
		return nil, fmt.Errorf("rwpool: dsn: driver: %q is not registered with database/sql (forgotten import?)", cfg.Driver)
	}
	db, err := sql.Open(cfg.Driver, cfg.Primary.DSN)
	if err != nil {
		return nil, &nodeError{node: cfg.Primary.Name, op: "open", err: redactErr(err, cfg.Primary.DSN)}
	}
	d := db.Driver()
	db.Close()
	return d, nil
}

// Connect returns a virtual connection. It does no I/O: real connections are
// borrowed from the node pools per statement.
func (c *Connector) Connect(context.Context) (driver.Conn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	return &conn{c: c}, nil
}

// Driver returns a driver whose Open parses DSNs as the registered rwpool
// driver does, and through which Stats finds this Connector.
func (c *Connector) Driver() driver.Driver { return c.drv }

// Config returns a copy of the Connector's configuration.
func (c *Connector) Config() *dsn.Config {
	cp := c.cfg
	cp.Replicas = slices.Clone(c.cfg.Replicas)
	cp.Discover = slices.Clone(c.cfg.Discover)
	return &cp
}

// Close stops the health checkers, closes every node pool and the real
// connectors. Real connections in use are closed as they are returned.
// Close is idempotent.
//
// A probe abandoned on a hung server (see probe) ends only when the
// driver lets go; Close waits for such stragglers at most twice
// probe_timeout, so closing a *sql.DB never hangs on a dead node.
func (c *Connector) Close() error {
	c.closeOnce.Do(func() {
		c.topoMu.Lock()
		c.closed.Store(true)
		var nodes []*node
		if t := c.topo(); t != nil {
			nodes = slices.Clone(t.nodes)
			for _, n := range nodes {
				if n.stop != nil {
					close(n.stop) // its checker; a draining node's is closed already
				}
			}
		}
		nodes = append(nodes, c.draining...)
		c.topoMu.Unlock()
		close(c.stop)
		c.bgCancel()
		c.primaryWatch.signal()
		var errs []error
		for _, n := range nodes {
			errs = append(errs, n.pool.Close())
		}
		c.bg.close(2 * c.cfg.ProbeTimeout)
		for _, n := range nodes {
			errs = append(errs, closeConnector(n.conn.Connector))
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// classifyCacheSize is how many statements a Connector remembers the
// routing of: 16 KiB of slots, and at most 1024 statements of up to
// routecache.MaxLen bytes (2 MiB in the worst case, far less for
// typical statements).
const classifyCacheSize = 1024

// maxConcurrentDials caps dials in flight per node.
const maxConcurrentDials = 8

// waitBounded waits for wg, at most d.
func waitBounded(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

func closeConnector(rc driver.Connector) error {
	if cl, ok := rc.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// dsnConnector adapts a driver without driver.DriverContext.
type dsnConnector struct {
	drv driver.Driver
	dsn string
}

func (d dsnConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.drv.Open(d.dsn)
}

func (d dsnConnector) Driver() driver.Driver { return d.drv }

// Option sets how a Connector reports what happens to its nodes. The same
// options serve both ways of opening rwpool: pass them to NewConnector, or,
// for a *sql.DB opened with sql.Open("rwpool", …), which takes no options,
// to Configure. Either may be called again later; the last setting wins.
type Option func(*Connector)

// WithLogger logs every node transition, once, through l: a warning when a
// node becomes unavailable or lagging, or reports an unexpected role (with
// the cause), an info line when it comes back (with how long it was out).
// rwpool logs nothing else, and only through log/slog. A nil l, the
// default, logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(c *Connector) { c.logger.Store(l) }
}

// WithEventHandler calls f for every node transition (see Event),
// synchronously and in order for each node, from the goroutine that
// noticed it: f must not block for long. A nil f, the default, calls
// nothing.
func WithEventHandler(f func(Event)) Option {
	return func(c *Connector) { c.handler.Store(&f) }
}

// Configure applies opts to the Connector behind db, a *sql.DB opened with
// rwpool (by sql.Open("rwpool", …) or sql.OpenDB with a *Connector):
//
//	db, err := sql.Open("rwpool", dsn)
//	if err != nil { … }
//	err = rwpool.Configure(db,
//		rwpool.WithLogger(slog.Default()),
//		rwpool.WithEventHandler(func(e rwpool.Event) { … }))
//
// It returns ErrNotRWPool for any other *sql.DB. Health checks start when
// the Connector is made, so an event may precede Configure; pass the
// options to NewConnector to see every one.
func Configure(db *sql.DB, opts ...Option) error {
	c := connectorOf(db)
	if c == nil {
		return ErrNotRWPool
	}
	for _, o := range opts {
		o(c)
	}
	return nil
}

// primaryNode returns the node writes go to: the DSN's primary, or, with
// follow_promotion, the node promoted since (promote.go).
func (c *Connector) primaryNode() *node { return c.prim.Load() }
