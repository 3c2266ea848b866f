// Package testcluster describes the real replicated test clusters that
// scripts/cluster.sh starts on loopback and writes down as RWPOOL_*
// variables in its env file (scripts/test.sh sources it): a PostgreSQL
// primary with its standbys and a MariaDB primary with its replicas. It is
// the one place the root module's integration tests, the examples' tests
// and the rwpool command (check tests, bench) learn how to reach them: the
// backends (PostgreSQL through lib/pq and through pgx, MariaDB through
// go-sql-driver/mysql), their node DSNs, composite rwpool DSNs and port
// queries, and the rule that a test without clusters skips, except under
// CI=true, where it fails.
//
// The package imports no SQL driver: the tests that open a backend import
// its driver. Nor does it import package testing, which would be linked
// into the rwpool command (its bench uses the package): it takes a T.
package testcluster

import (
	"bufio"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/rwpool/rwpool/internal/driverinfo"
)

// Env is what an env file of scripts/cluster.sh describes. Addresses are
// host:port.
type Env struct {
	User, Password, Database string
	PGPrimary                string
	PGReplicas               []string
	MyPrimary                string
	MyReplicas               []string

	// PgBouncers in front of the PostgreSQL nodes (scripts/pgbouncer.sh),
	// in the order of PGPrimary then PGReplicas; nil when none run.
	PGBouncerTx      []string // transaction mode
	PGBouncerSession []string // session mode
}

// Read reads the clusters' description through getenv (os.Getenv, or a
// lookup in the map of ParseEnvFile). ok is false when the clusters are
// not described.
func Read(getenv func(string) string) (e Env, ok bool) {
	e = Env{
		User: getenv("RWPOOL_DB_USER"), Password: getenv("RWPOOL_DB_PASSWORD"), Database: getenv("RWPOOL_DB_NAME"),
		PGPrimary: getenv("RWPOOL_PG_PRIMARY"), PGReplicas: splitList(getenv("RWPOOL_PG_REPLICAS")),
		MyPrimary: getenv("RWPOOL_MY_PRIMARY"), MyReplicas: splitList(getenv("RWPOOL_MY_REPLICAS")),
		PGBouncerTx: splitList(getenv("RWPOOL_PGBOUNCER_TX")), PGBouncerSession: splitList(getenv("RWPOOL_PGBOUNCER_SESSION")),
	}
	return e, e.PGPrimary != "" && e.MyPrimary != "" && e.User != ""
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// ParseEnvFile reads the `export K=V` lines of an env file of cluster.sh,
// with V bare or quoted.
func ParseEnvFile(text string) map[string]string {
	env := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		line, ok := strings.CutPrefix(line, "export ")
		if !ok {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || k == "" {
			continue
		}
		if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[k] = v
	}
	return env
}

// The names of the backends.
const (
	Postgres = "postgres" // PostgreSQL through lib/pq
	Pgx      = "pgx"      // PostgreSQL through pgx's stdlib driver, the same servers
	MariaDB  = "mariadb"  // MariaDB through go-sql-driver/mysql

	// PostgreSQL through a PgBouncer in front of each node. lib/pq sends
	// its parameters in one round trip (binary_parameters=yes) and pgx
	// without prepared statements (default_query_exec_mode=exec): PgBouncer
	// 1.18 in transaction mode may hand each round trip outside a
	// transaction to another server connection, where a statement prepared
	// in the first does not exist.
	PgBouncerTx      = "pgbouncer_tx"      // lib/pq, transaction mode
	PgBouncerTxPgx   = "pgbouncer_tx_pgx"  // pgx, transaction mode
	PgBouncerSession = "pgbouncer_session" // lib/pq, session mode
)

// Backend is one database/sql driver over one of the clusters.
type Backend struct {
	Name      string   // Postgres, Pgx or MariaDB
	Driver    string   // the database/sql driver rwpool routes to
	Primary   string   // host:port
	Replicas  []string // host:port
	PortQuery string   // answers the port of the server that runs it

	// The account and database of every node DSN.
	User, Password, Database string
	// Params are appended to every node DSN, in the driver's syntax:
	// "key=value key=value" for PostgreSQL, "key=value&key=value" for
	// MySQL.
	Params string

	// TransactionPooled: the backend reaches the servers through a
	// transaction pooler, where session state (SET, temporary tables)
	// belongs to a server connection that any client's next transaction
	// may get.
	TransactionPooled bool

	// Via maps the address of a pooler in Primary or Replicas to the
	// server behind it; nil when the backend dials the servers. Faults
	// and port queries concern the server (Server).
	Via map[string]string
}

// Server returns the address of the server that addr (the primary's or a
// replica's address) reaches: addr itself, or the server behind a pooler.
func (b *Backend) Server(addr string) string {
	if s, ok := b.Via[addr]; ok {
		return s
	}
	return addr
}

// Backends returns the backends over the clusters e describes: PostgreSQL
// through lib/pq and through pgx, then MariaDB.
func (e Env) Backends() []*Backend {
	pg := func(name, driver string) *Backend {
		return &Backend{Name: name, Driver: driver, Primary: e.PGPrimary, Replicas: e.PGReplicas,
			PortQuery: "SELECT inet_server_port()", User: e.User, Password: e.Password, Database: e.Database}
	}
	return []*Backend{
		pg(Postgres, driverinfo.DriverLibPQ),
		pg(Pgx, driverinfo.DriverPgx),
		{Name: MariaDB, Driver: driverinfo.DriverMySQL, Primary: e.MyPrimary, Replicas: e.MyReplicas,
			PortQuery: "SELECT @@port", User: e.User, Password: e.Password, Database: e.Database},
	}
}

// Poolers returns the backends through PgBouncer (PgBouncerTx,
// PgBouncerTxPgx, PgBouncerSession), when the environment describes
// PgBouncers.
func (e Env) Poolers() []*Backend {
	if len(e.PGBouncerTx) != 1+len(e.PGReplicas) || len(e.PGBouncerSession) != 1+len(e.PGReplicas) {
		return nil
	}
	pooled := func(name, driver, params string, via []string) *Backend {
		b := &Backend{Name: name, Driver: driver, Primary: via[0], Replicas: via[1:], Params: params,
			TransactionPooled: name != PgBouncerSession,
			PortQuery:         "SELECT inet_server_port()", User: e.User, Password: e.Password, Database: e.Database,
			Via: map[string]string{}}
		for i, s := range append([]string{e.PGPrimary}, e.PGReplicas...) {
			b.Via[via[i]] = s
		}
		return b
	}
	return []*Backend{
		pooled(PgBouncerTx, driverinfo.DriverLibPQ, "binary_parameters=yes", e.PGBouncerTx),
		pooled(PgBouncerTxPgx, driverinfo.DriverPgx, "default_query_exec_mode=exec", e.PGBouncerTx),
		pooled(PgBouncerSession, driverinfo.DriverLibPQ, "", e.PGBouncerSession),
	}
}

// Server returns the address of the server that addr reaches: the server
// behind it when addr is one of the environment's PgBouncers, else addr.
func (e Env) Server(addr string) string {
	for _, b := range e.Poolers() {
		if s, ok := b.Via[addr]; ok {
			return s
		}
	}
	return addr
}

// Backend returns the backend called name, or the one whose driver is
// name: "mysql" is MariaDB. It returns nil for none.
func (e Env) Backend(name string) *Backend {
	for _, b := range append(e.Backends(), e.Poolers()...) {
		if b.Name == name || b.Driver == name {
			return b
		}
	}
	return nil
}

// T is what the package needs of a *testing.T or *testing.B.
type T interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// short reports whether the test binary runs with -short: testing.Short,
// read from the flag package testing registers.
func short() bool {
	f := flag.Lookup("test.short")
	return f != nil && f.Value.String() == "true"
}

// Backends returns the backends of the environment's clusters. Without
// them the test skips, except under CI=true, where it fails: CI must never
// pass by not testing. With -short it skips.
//
// RWPOOL_BACKENDS, a comma-separated list of names, picks the backends
// instead: scripts/test.sh runs the fault, consistency and failover tests
// a second time with the PgBouncer backends so.
func Backends(t T) []*Backend {
	t.Helper()
	if short() {
		t.Skip("integration test: skipped with -short")
	}
	e, ok := Read(os.Getenv)
	if !ok {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but the test clusters are not described (RWPOOL_PG_PRIMARY, RWPOOL_MY_PRIMARY); run ./scripts/test.sh")
		}
		t.Skip("no test clusters: run ./scripts/test.sh (or scripts/cluster.sh up and source its env file)")
	}
	names := os.Getenv("RWPOOL_BACKENDS")
	if names == "" {
		return e.Backends()
	}
	var bs []*Backend
	for _, name := range splitList(names) {
		b := e.Backend(name)
		if b == nil {
			t.Fatalf("RWPOOL_BACKENDS names %q: not a backend of the environment (are the PgBouncers up? scripts/pgbouncer.sh)", name)
		}
		bs = append(bs, b)
	}
	return bs
}

// Poolers returns the PgBouncer backends of the environment (Env.Poolers).
// Without them the test skips, except under CI=true, where it fails, as
// Backends does.
func Poolers(t T) []*Backend {
	t.Helper()
	Backends(t) // the clusters themselves: skip or fail as it does
	e, _ := Read(os.Getenv)
	bs := e.Poolers()
	if len(bs) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but no PgBouncers are described (RWPOOL_PGBOUNCER_TX, RWPOOL_PGBOUNCER_SESSION); run ./scripts/test.sh")
		}
		t.Skip("no PgBouncers: run ./scripts/test.sh (or scripts/pgbouncer.sh up and source its env file)")
	}
	return bs
}

// Get returns the backend called name (see Env.Backend) of the
// environment's clusters, skipping or failing the test as Backends does.
func Get(t T, name string) *Backend {
	t.Helper()
	for _, b := range Backends(t) {
		if b.Name == name || b.Driver == name {
			return b
		}
	}
	t.Fatalf("no test backend %q", name)
	return nil
}

// IsPostgres reports whether the backend is PostgreSQL, through either
// driver: SQL dialect, placeholders ($1) and server behaviour are the same
// for lib/pq and pgx.
// A Backend with no Driver (a literal naming only Postgres or Pgx) is
// one too.
func (b *Backend) IsPostgres() bool {
	return b.Driver == driverinfo.DriverLibPQ || b.Driver == driverinfo.DriverPgx ||
		b.Driver == "" && (b.Name == Postgres || b.Name == Pgx)
}

// NodeDSN returns the driver's DSN of the node at addr (host:port). lib/pq
// and pgx both take PostgreSQL's keyword/value connection strings;
// connect_timeout is in seconds for both.
func (b *Backend) NodeDSN(addr string) string {
	if b.IsPostgres() {
		host, port, _ := strings.Cut(addr, ":")
		s := fmt.Sprintf("host=%s port=%s user=%s", host, port, b.User)
		if b.Password != "" {
			s += " password=" + b.Password
		}
		s += " dbname=" + b.Database + " sslmode=disable connect_timeout=5"
		if b.Params != "" {
			s += " " + b.Params
		}
		return s
	}
	account := b.User
	if b.Password != "" {
		account += ":" + b.Password
	}
	s := fmt.Sprintf("%s@tcp(%s)/%s?timeout=5s", account, addr, b.Database)
	if b.Params != "" {
		s += "&" + b.Params
	}
	return s
}

// DSN returns the composite rwpool DSN of the primary and every replica,
// then the items of extra ("key=value;key=value"). weights apply to the
// replicas in order; a replica without one has rwpool's default.
func (b *Backend) DSN(extra string, weights ...int) string {
	return b.DSNOver(b.Primary, b.Replicas, extra, weights...)
}

// DSNOver is DSN with the given primary and replicas (host:port), which
// need not be the backend's own roles: a test can list a replica as the
// primary.
func (b *Backend) DSNOver(primary string, replicas []string, extra string, weights ...int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "driver=%s;primary='%s'", b.Driver, b.NodeDSN(primary))
	for i, r := range replicas {
		fmt.Fprintf(&s, ";replica='%s'", b.NodeDSN(r))
		if i < len(weights) {
			fmt.Fprintf(&s, " weight=%d", weights[i])
		}
	}
	if extra != "" {
		s.WriteString(";" + extra)
	}
	return s.String()
}

// Port returns the port of addr (host:port).
func Port(addr string) string {
	_, p, _ := strings.Cut(addr, ":")
	return p
}

// PrimaryPort is the primary's port, as the port query answers it.
func (b *Backend) PrimaryPort() string { return Port(b.Server(b.Primary)) }

// ReplicaIndex returns the index in Replicas of the replica whose port is
// port.
func (b *Backend) ReplicaIndex(port string) (int, bool) {
	i := slices.IndexFunc(b.Replicas, func(a string) bool { return Port(b.Server(a)) == port })
	return i, i >= 0
}

// IsReplicaPort reports whether port is the port of one of the replicas.
func (b *Backend) IsReplicaPort(port string) bool {
	_, ok := b.ReplicaIndex(port)
	return ok
}

// ServerPort runs the port query through q (a *sql.DB, *sql.Conn or
// *sql.Tx) and returns the port of the server that answered it.
func (b *Backend) ServerPort(t T, q interface {
	QueryRow(string, ...any) *sql.Row
}) string {
	t.Helper()
	var port string
	if err := q.QueryRow(b.PortQuery).Scan(&port); err != nil {
		t.Fatalf("%s: %s: %v", b.Name, b.PortQuery, err)
	}
	return port
}

// Patroni describes the Patroni-managed PostgreSQL cluster that
// scripts/patroni.sh starts: three members, one of which leads; which one
// changes with every failover, so a Backend over it is made for the
// leader of the moment (Backend).
type Patroni struct {
	Nodes []string // the members' PostgreSQL host:port, in member order
	REST  []string // the members' Patroni REST API host:port, same order

	User, Password, Database string
}

// ReadPatroni reads the Patroni cluster's description from the
// environment (scripts/patroni.sh's env file).
func ReadPatroni(getenv func(string) string) (p Patroni, ok bool) {
	p = Patroni{
		Nodes: splitList(getenv("RWPOOL_PATRONI_PG")), REST: splitList(getenv("RWPOOL_PATRONI_REST")),
		User: getenv("RWPOOL_PATRONI_USER"), Password: getenv("RWPOOL_PATRONI_PASSWORD"), Database: getenv("RWPOOL_PATRONI_DB"),
	}
	return p, len(p.Nodes) == 3 && len(p.REST) == 3 && p.User != ""
}

// PatroniCluster returns the Patroni cluster the environment describes;
// without it the test skips, or fails under CI=true (scripts/test.sh starts
// it for the Patroni pass).
func PatroniCluster(t T) *Patroni {
	t.Helper()
	if short() {
		t.Skip("integration test: skipped with -short")
	}
	p, ok := ReadPatroni(os.Getenv)
	if !ok {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but no Patroni cluster is described (RWPOOL_PATRONI_PG, RWPOOL_PATRONI_REST); run ./scripts/test.sh")
		}
		t.Skip("no Patroni cluster: run ./scripts/test.sh (or scripts/patroni.sh up and source its env file)")
	}
	return &p
}

// Backend returns a lib/pq Backend over the members with primary (one of
// Nodes) as the primary and the others, in member order, as replicas.
func (p *Patroni) Backend(primary string) *Backend {
	b := &Backend{Name: "patroni", Driver: driverinfo.DriverLibPQ, Primary: primary,
		PortQuery: "SELECT inet_server_port()", User: p.User, Password: p.Password, Database: p.Database}
	for _, n := range p.Nodes {
		if n != primary {
			b.Replicas = append(b.Replicas, n)
		}
	}
	return b
}
