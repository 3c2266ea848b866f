// Package simcluster is a simulated replicated database cluster behind a
// database/sql driver: the ground truth of rwpool's randomized fault
// simulation (TestSimulation in the root package, see the README's
// "Simulation" section).
//
// A Cluster has servers and endpoints. Each server keeps a write-ahead log
// of records; a commit record carries one committed transaction (its row
// ids). The designated primary accepts writes; replicas replay their
// upstream's log after a delay of their own, record by record, so a
// replica's position can sit between a transaction's statements and its
// commit as a real standby's does. Promotions start a new history (a new
// GTID server id on MariaDB); a server that comes back after a crash keeps
// the records nobody else has. Endpoints map a node DSN to one server or
// to several (a balancing proxy) and can be re-pointed.
//
// The servers answer rwpool's status, position, identity and version
// queries the way PostgreSQL and MariaDB do (package
// internal/replication), refuse writes on a read-only server with the real
// error codes, lose connections before or after a statement reached them,
// hang (ignoring the statement's context, as lib/pq does) and slow down.
//
// The cluster also watches its clients: a connection used by two callers
// at once, a statement sent on a connection whose rows are still open, a
// write applied by a server that was not the designated primary when it
// arrived: each is recorded as a Violation, the simulation's invariants
// that only the server side can see.
//
// Everything that decides (which server a balancing endpoint picks, which
// statement loses its connection) draws from the cluster's seeded source,
// so a run is reproducible up to the goroutines' interleaving.
package simcluster

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Flavor is the kind of database a cluster plays.
type Flavor int

// The flavors.
const (
	Postgres Flavor = iota
	MariaDB
)

func (f Flavor) String() string {
	if f == MariaDB {
		return "mariadb"
	}
	return "postgres"
}

// record is one record of a server's write-ahead log. Records are shared
// between a server and the replicas that replayed them: the same pointer
// on two servers means the same history.
type record struct {
	lsn    uint64    // position after the record (PostgreSQL LSN)
	tli    uint32    // the PostgreSQL timeline it was written on
	at     time.Time // when it was written on its origin
	commit *commit   // nil for a statement's record inside a transaction
}

// commit is a committed transaction: the row ids it inserted.
type commit struct {
	ids  []int64
	gtid gtid // MariaDB's GTID of the transaction
}

type gtid struct {
	server int   // server_id of the origin
	seq    int64 // sequence number in domain 0
}

func (g gtid) String() string {
	if g.seq == 0 {
		return ""
	}
	return fmt.Sprintf("0-%d-%d", g.server, g.seq)
}

// Server is one simulated database server.
type Server struct {
	c    *Cluster
	Name string
	sid  int    // server_id: MariaDB's identity and GTID origin
	tli  uint32 // the PostgreSQL timeline it writes on (its last promotion's)
	gen  int    // start generation: PostgreSQL's start time; bumped by Restart

	wal      []*record
	ids      map[int64]int // row ids in wal's commit records, and how often
	lastGTID gtid          // last committed GTID in the log (gtid_binlog_pos)
	slavePos gtid          // last replicated GTID (gtid_slave_pos)
	readOnly bool
	upstream *Server
	delay    time.Duration // replay delay behind upstream

	down    bool
	hang    chan struct{}
	slow    time.Duration // every statement takes this much longer
	posSlow time.Duration // position and status queries take this much longer
	lossP   float64       // probability a statement loses its connection
	poolP   float64       // probability a pooler refuses a statement outside a transaction (Pooled)

	probesStuck int // rwpool's own status/probe queries blocked on this server now
}

type endpoint struct {
	servers []*Server
	moves   int
}

// Cluster is a simulated cluster; see the package documentation.
type Cluster struct {
	Name   string
	Flavor Flavor

	mu         sync.Mutex
	rng        *rand.Rand
	servers    []*Server
	endpoints  map[string]*endpoint
	primary    *Server                 // the designated primary, nil while none is
	last       *Server                 // the designated primary before the current one (or none)
	lost       map[int64]time.Duration // rows lost by a failover, and when
	truth      map[int64]*Write
	violations []Violation
	conns      map[*conn]struct{}
	openRows   int
	nextSID    int
	maxTLI     uint32 // the newest PostgreSQL timeline: a promotion starts the next
	start      time.Time
	maxStuck   int    // the stuck-probe bound of Violations; 0: unchecked
	systemID   string // PostgreSQL's system identifier: the cluster's, on every server
}

// Write is the ground truth of one row id.
type Write struct {
	ID      int64
	Applied int      // times a server applied it from a client (not by replication)
	On      []string // servers that applied it from a client
	At      string   // the position of its first commit, as the server names it (an LSN, a GTID)
}

// Violation is an invariant the cluster saw broken.
type Violation struct {
	At   time.Duration // since the cluster was made
	Kind string        // which invariant: write-off-primary, conn-shared, rows-open, stuck-probes
	What string
}

func (v Violation) String() string {
	return fmt.Sprintf("%8.3fs [%s] %s", v.At.Seconds(), v.Kind, v.What)
}

// New makes a cluster of n servers named s0…s(n-1), s0 the primary and the
// others its replicas with no delay, each behind an endpoint of its own
// name. seed seeds every decision the cluster draws.
func New(name string, f Flavor, n int, seed uint64) *Cluster {
	c := &Cluster{
		Name: name, Flavor: f,
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		endpoints: map[string]*endpoint{},
		truth:     map[int64]*Write{},
		lost:      map[int64]time.Duration{},
		conns:     map[*conn]struct{}{},
		maxTLI:    1, // every server starts on timeline 1
		start:     time.Now(),
		systemID:  fmt.Sprint(7_000_000_000_000_000_000 + seed%1_000_000_000_000_000),
	}
	for i := range n {
		c.nextSID++
		s := &Server{c: c, Name: fmt.Sprintf("s%d", i), sid: c.nextSID, tli: 1, gen: 1, ids: map[int64]int{}}
		c.servers = append(c.servers, s)
		c.endpoints[s.Name] = &endpoint{servers: []*Server{s}}
	}
	c.primary = c.servers[0]
	for _, s := range c.servers[1:] {
		s.readOnly, s.upstream = true, c.primary
	}
	registry.add(c)
	return c
}

// Close removes the cluster from the driver's registry.
func (c *Cluster) Close() { registry.remove(c) }

// DSN returns the node DSN that reaches endpoint ep.
func (c *Cluster) DSN(ep string) string { return c.Name + "/" + ep }

// Server returns the server called name.
func (c *Cluster) Server(name string) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serverLocked(name)
}

func (c *Cluster) serverLocked(name string) *Server {
	for _, s := range c.servers {
		if s.Name == name {
			return s
		}
	}
	panic("simcluster: no server " + name)
}

// Servers returns the servers' names.
func (c *Cluster) Servers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ns []string
	for _, s := range c.servers {
		ns = append(ns, s.Name)
	}
	return ns
}

func (c *Cluster) since() time.Duration { return time.Since(c.start) }

func (c *Cluster) violate(kind, format string, args ...any) {
	c.violations = append(c.violations, Violation{At: c.since(), Kind: kind, What: fmt.Sprintf(format, args...)})
}

// Violations returns what the cluster saw broken so far.
func (c *Cluster) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.violations)
}

// SetStuckProbeBound makes it a violation for more than n of rwpool's own
// probe and status queries to be blocked on one server at once (0: no
// bound). A hung server must cost bounded resources.
func (c *Cluster) SetStuckProbeBound(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxStuck = n
}

// ---------------------------------------------------------------------------
// Faults and topology changes
// ---------------------------------------------------------------------------

// AddEndpoint adds an endpoint called name balancing at random over the
// servers named.
func (c *Cluster) AddEndpoint(name string, servers ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ep := &endpoint{}
	for _, s := range servers {
		ep.servers = append(ep.servers, c.serverLocked(s))
	}
	c.endpoints[name] = ep
}

// Move points endpoint ep at the servers named.
func (c *Cluster) Move(ep string, servers ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.endpoints[ep]
	var to []*Server
	for _, s := range servers {
		to = append(to, c.serverLocked(s))
	}
	if !sameServers(e.servers, to) {
		e.moves++
	}
	e.servers = to
}

func sameServers(a, b []*Server) bool {
	if len(a) != len(b) {
		return false
	}
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

// Moves returns how many times endpoint ep was moved.
func (c *Cluster) Moves(ep string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endpoints[ep].moves
}

// EndpointServers returns the servers endpoint ep leads to.
func (c *Cluster) EndpointServers(ep string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ns []string
	for _, s := range c.endpoints[ep].servers {
		ns = append(ns, s.Name)
	}
	return ns
}

// Kill takes a server down: open connections are lost, dials refused.
func (c *Cluster) Kill(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.serverLocked(name)
	s.down = true
	s.gen++
	s.release()
}

// Start brings a killed server back, with the log it had and a new start
// time. A MariaDB server forgets read_only (it is not persisted): it comes
// back writable unless readOnly says otherwise; a PostgreSQL server comes
// back as it was configured.
func (c *Cluster) Start(name string, readOnly bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.serverLocked(name)
	if !s.down {
		return
	}
	s.catchUp(time.Now())
	s.down, s.readOnly = false, readOnly
}

// Restart kills and starts a server at once, keeping its role.
func (c *Cluster) Restart(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.serverLocked(name)
	s.gen++
	s.release()
}

// Hang makes a server's statements block (ignoring their contexts) until
// Resume.
func (c *Cluster) Hang(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.serverLocked(name)
	if s.hang == nil {
		s.hang = make(chan struct{})
	}
}

// Resume releases a hung server.
func (c *Cluster) Resume(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serverLocked(name).release()
}

func (s *Server) release() {
	if s.hang != nil {
		close(s.hang)
		s.hang = nil
	}
}

// Slow makes every statement on a server take d longer (0 ends it).
func (c *Cluster) Slow(name string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serverLocked(name).slow = d
}

// SlowPositions makes a server's position and status queries take d longer.
func (c *Cluster) SlowPositions(name string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serverLocked(name).posSlow = d
}

// Lossy makes a fraction p of a server's statements lose their connection,
// half before the statement reached the server and half after.
func (c *Cluster) Lossy(name string, p float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serverLocked(name).lossP = p
}

// Pooled puts a failing pooler in front of a server: a fraction p of the
// statements that start outside a transaction are refused, before any
// server got them, the way PgBouncer refuses a client while it cannot log
// in to its server (SQLSTATE 08P01, "server login has been failing"), and
// the client connection ends. Statements inside a transaction already
// hold their server connection and run.
func (c *Cluster) Pooled(name string, p float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serverLocked(name).poolP = p
}

// Delay sets a replica's replay delay.
func (c *Cluster) Delay(name string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.serverLocked(name)
	s.catchUp(time.Now())
	s.delay = d
}

// SetReadOnly toggles a server's read_only (default_transaction_read_only)
// without changing who the designated primary is.
func (c *Cluster) SetReadOnly(name string, ro bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serverLocked(name).readOnly = ro
}

// Promote makes a server the designated primary: it stops replaying,
// becomes writable and starts a new history. The old primary keeps
// whatever state it has: demote or kill it first for a clean failover.
func (c *Cluster) Promote(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.serverLocked(name)
	s.catchUp(time.Now())
	s.upstream, s.readOnly = nil, false // its GTIDs name its own server_id from now on
	// A new timeline, as a promoted PostgreSQL standby picks (the newest
	// one plus one), beginning with its timeline switch record: a standby
	// that follows it switches timeline when it replays that record.
	c.maxTLI++
	s.tli = c.maxTLI
	s.appendStatement()
	old := c.primary
	if old == nil {
		old = c.last
	}
	if old != nil && old != s {
		old.catchUp(time.Now())
		c.loseAllBut(old.wal, s)
	}
	c.last, c.primary = old, s
}

// loseAllBut records as lost the rows of recs that s does not have: a
// failover to s abandoned them.
func (c *Cluster) loseAllBut(recs []*record, s *Server) {
	for _, r := range recs {
		if r.commit == nil {
			continue
		}
		for _, id := range r.commit.ids {
			if _, ok := c.lost[id]; !ok && !s.has(id) {
				c.lost[id] = c.since()
			}
		}
	}
}

// Lost reports whether row id was lost by a failover (its history was
// abandoned), and when.
func (c *Cluster) Lost(id int64) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.lost[id]
	return at, ok
}

// Demote makes the designated primary read-only; the cluster has no
// designated primary until Promote.
func (c *Cluster) Demote() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.primary != nil {
		c.primary.readOnly = true
		c.last, c.primary = c.primary, nil
	}
}

// Repoint makes a server a read-only replica of the designated primary.
// A server whose log has records the primary lacks is rewound first, as
// pg_rewind or a re-clone would: those records are dropped.
func (c *Cluster) Repoint(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.serverLocked(name)
	p := c.primary
	if p == nil || p == s {
		return
	}
	p.catchUp(time.Now())
	s.catchUp(time.Now())
	common := 0
	for common < len(s.wal) && common < len(p.wal) && s.wal[common] == p.wal[common] {
		common++
	}
	c.loseAllBut(s.wal[common:], p)
	s.wal = s.wal[:common:common]
	s.ids = map[int64]int{}
	for _, r := range s.wal {
		s.index(r)
	}
	s.lastGTID, s.slavePos = s.lastCommitGTID(), s.lastCommitGTID()
	s.upstream, s.readOnly = p, true
}

// Primary returns the designated primary's name, "" when there is none.
func (c *Cluster) Primary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.primary == nil {
		return ""
	}
	return c.primary.Name
}

// WritablePrimary reports whether a designated primary exists now that
// accepts writes: up, not hung, not read-only.
func (c *Cluster) WritablePrimary() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.primary
	return p != nil && !p.down && p.hang == nil && !p.readOnly
}

// Heal ends every fault: hung servers resume, killed ones start (read-only
// unless designated), slowness, loss and delays end, every server but the
// designated primary (which is made writable; s0 is promoted if there is
// none) replicates from it, and each server's own endpoint leads to it
// again. Balancing endpoints keep their servers.
func (c *Cluster) Heal() {
	c.mu.Lock()
	for _, s := range c.servers {
		s.release()
		s.slow, s.posSlow, s.lossP, s.poolP = 0, 0, 0, 0
		if s.down {
			s.down = false
			s.readOnly = s != c.primary
		}
		s.catchUp(time.Now())
		s.delay = 0
	}
	if c.primary == nil {
		c.mu.Unlock()
		c.Promote("s0")
		c.mu.Lock()
	}
	c.primary.readOnly = false
	var others []string
	for _, s := range c.servers {
		if s != c.primary {
			others = append(others, s.Name)
		}
		e := c.endpoints[s.Name]
		if !sameServers(e.servers, []*Server{s}) {
			e.moves++
			e.servers = []*Server{s}
		}
	}
	c.mu.Unlock()
	for _, n := range others {
		c.Repoint(n)
	}
}

// ---------------------------------------------------------------------------
// Ground truth
// ---------------------------------------------------------------------------

// Truth returns the ground truth of row id: nil if no server applied it
// from a client.
func (c *Cluster) Truth(id int64) *Write {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.truth[id]
	if w == nil {
		return nil
	}
	cp := *w
	cp.On = slices.Clone(w.On)
	return &cp
}

// Has reports whether server name's log holds row id now.
func (c *Cluster) Has(name string, id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.serverLocked(name)
	s.catchUp(time.Now())
	return s.has(id)
}

// Rows returns the row ids in server name's log, each with the index of
// the transaction (commit record) that holds it.
func (c *Cluster) Rows(name string) map[int64]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.serverLocked(name)
	s.catchUp(time.Now())
	m := map[int64]int{}
	i := 0
	for _, r := range s.wal {
		if r.commit == nil {
			continue
		}
		i++
		for _, id := range r.commit.ids {
			if _, dup := m[id]; dup {
				m[id] = -1 // applied twice on this history
				continue
			}
			m[id] = i
		}
	}
	return m
}

// OpenConns returns how many connections to the cluster are open, and how
// many driver rows.
func (c *Cluster) OpenConns() (conns, rows int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.conns), c.openRows
}

// OpenDetail describes the connections still open: each one's server,
// whether a statement runs on it, and its open rows.
func (c *Cluster) OpenDetail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ds []string
	for cn := range c.conns {
		ds = append(ds, fmt.Sprintf("%s(busy=%v rows=%d tx=%v broken=%v last=%.60q dialled by %s)",
			cn.s.Name, cn.busy.Load(), cn.rows, cn.tx != nil, cn.broken, cn.last, callers(cn.dialler)))
	}
	sort.Strings(ds)
	return strings.Join(ds, " ")
}

// Describe returns a one-line summary of every server, for failure reports.
func (c *Cluster) Describe() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, s := range c.servers {
		s.catchUp(time.Now())
		up := "-"
		if s.upstream != nil {
			up = s.upstream.Name
		}
		fmt.Fprintf(&b, "%s(sid=%d ro=%v down=%v hung=%v up=%s commits=%d lsn=%X) ", s.Name, s.sid, s.readOnly, s.down, s.hang != nil, up, s.commits(), s.lsn())
	}
	var eps []string
	for n, e := range c.endpoints {
		var ss []string
		for _, s := range e.servers {
			ss = append(ss, s.Name)
		}
		eps = append(eps, n+"->"+strings.Join(ss, ","))
	}
	sort.Strings(eps)
	fmt.Fprintf(&b, "endpoints %s; primary %v", strings.Join(eps, " "), c.primary != nil)
	return b.String()
}

// ---------------------------------------------------------------------------
// Server internals (c.mu held)
// ---------------------------------------------------------------------------

// catchUp replays what the upstream wrote at least delay ago, provided the
// server's log is a prefix of the upstream's (the same history).
func (s *Server) catchUp(now time.Time) {
	up := s.upstream
	if up == nil || s.down {
		return
	}
	up.catchUp(now)
	if s.diverged() {
		return // replication is broken until a rewind
	}
	for _, r := range up.wal[len(s.wal):] {
		if now.Sub(r.at) < s.delay {
			break
		}
		s.wal = append(s.wal, r)
		s.index(r)
		if r.commit != nil {
			s.lastGTID, s.slavePos = r.commit.gtid, r.commit.gtid
		}
	}
}

// received is a replica's pg_last_wal_receive_lsn(): a replica receives
// at once all its upstream has written (its delay is one of replay), dead
// or hung as that upstream may be now, as long as its own log is of the
// same history; a diverged one receives nothing more.
func (s *Server) received() uint64 {
	if s.upstream == nil || s.diverged() {
		return s.lsn()
	}
	return s.upstream.lsn()
}

// diverged reports whether the log of s, a replica, is not a prefix of
// its upstream's: another history, from which it can replay nothing more.
func (s *Server) diverged() bool {
	up, n := s.upstream, len(s.wal)
	return n > len(up.wal) || n > 0 && up.wal[n-1] != s.wal[n-1]
}

// timeline is the timeline the server reports (rwpool's status query): a
// primary's is its own; a standby streaming from its upstream (its log of
// the same history, the upstream up and answering) has received all of
// it, and reports the upstream's (received_tli). One that streams nothing
// (diverged, or its upstream is down or hung: no WAL receiver runs)
// reports its last restartpoint's (pg_control_checkpoint()), which is
// older than its last record's after a timeline switch: PostgreSQL makes
// a restartpoint only every so often (here, every restartpointEvery
// records), so two standbys on one timeline can report different, older
// ones (seen under Patroni: 37 and 38 while both replayed 39).
func (s *Server) timeline() uint32 {
	up := s.upstream
	switch {
	case up == nil:
		return s.tli
	case !s.diverged() && !up.down && up.hang == nil:
		return up.timeline()
	case len(s.wal) == 0:
		return up.tli
	}
	return s.wal[(len(s.wal)-1)&^(restartpointEvery-1)].tli
}

// restartpointEvery is how often, in records, a standby makes a
// restartpoint (a power of two).
const restartpointEvery = 32

func (s *Server) lsn() uint64 {
	if len(s.wal) == 0 {
		return 0x3000000
	}
	return s.wal[len(s.wal)-1].lsn
}

func (s *Server) commits() int {
	n := 0
	for _, r := range s.wal {
		if r.commit != nil {
			n++
		}
	}
	return n
}

func (s *Server) lastCommitGTID() gtid {
	for i := len(s.wal) - 1; i >= 0; i-- {
		if r := s.wal[i]; r.commit != nil {
			return r.commit.gtid
		}
	}
	return gtid{}
}

func (s *Server) has(id int64) bool { return s.ids[id] > 0 }

// index adds a record's rows to the server's index.
func (s *Server) index(r *record) {
	if r.commit == nil {
		return
	}
	for _, id := range r.commit.ids {
		s.ids[id]++
	}
}

// appendStatement writes a statement's record inside a transaction: the
// position moves, nothing becomes visible.
func (s *Server) appendStatement() {
	s.wal = append(s.wal, &record{lsn: s.lsn() + 0x40, tli: s.tli, at: time.Now()})
}

// appendCommit commits ids, recording the ground truth: a server that is
// not the designated primary applying a client's write breaks the first
// invariant.
func (s *Server) appendCommit(ids []int64) gtid {
	c := s.c
	g := gtid{server: s.sid, seq: s.lastGTID.seq + 1}
	r := &record{lsn: s.lsn() + 0x40, tli: s.tli, at: time.Now(), commit: &commit{ids: slices.Clone(ids), gtid: g}}
	s.wal = append(s.wal, r)
	s.index(r)
	s.lastGTID = g
	for _, id := range ids {
		w := c.truth[id]
		if w == nil {
			w = &Write{ID: id, At: g.String()}
			if c.Flavor == Postgres {
				w.At = lsnText(r.lsn)
			}
			c.truth[id] = w
		}
		w.Applied++
		w.On = append(w.On, s.Name)
		if c.primary != s {
			c.violate("write-off-primary", "write %d applied by %s, which was not the primary (%s)", id, s.Name, c.primaryName())
		}
	}
	return g
}

func (c *Cluster) primaryName() string {
	if c.primary == nil {
		return "none designated"
	}
	return "the primary is " + c.primary.Name
}

// Live reports whether server name is up (it may still hang).
func (c *Cluster) Live(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.serverLocked(name).down
}

// Replicating reports whether server name is up, answers, and replays
// from another: a server a failover may promote (a crashed primary back on
// its own history is not, nor a hung server nobody could see promoted, nor
// one whose status queries, or all statements, are slowed, which no
// client whose probes time out could see report itself writable either:
// a crash failover onto a replica slowed past the probe timeout, whose
// crashed primary came back on its own history, is a write-off-primary
// no client can avoid).
func (c *Cluster) Replicating(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.serverLocked(name)
	return !s.down && s.hang == nil && s.posSlow == 0 && s.slow == 0 && s.upstream != nil
}

// callers names the functions of a stack, innermost first, less the
// runtime's and database/sql's plumbing.
func callers(pcs []uintptr) string {
	var names []string
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Function != "" && !strings.HasPrefix(f.Function, "runtime.") {
			names = append(names, f.Function[strings.LastIndexByte(f.Function, '/')+1:])
		}
		if !more {
			return strings.Join(names, " < ")
		}
	}
}
