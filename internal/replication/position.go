package replication

import (
	"fmt"
	"strconv"
	"strings"
)

// Flavor is the kind of replication a server speaks.
type Flavor uint8

// The flavors rwpool knows. Unknown servers have no positions: sessions
// fall back to the time window or the primary, and lag is not measured.
const (
	Unknown  Flavor = iota
	Postgres        // WAL LSNs
	MariaDB         // domain-server-sequence GTIDs
	MySQL           // server-UUID GTID sets
)

// String returns the flavor's name.
func (f Flavor) String() string {
	switch f {
	case Postgres:
		return "postgres"
	case MariaDB:
		return "mariadb"
	case MySQL:
		return "mysql"
	}
	return "unknown"
}

// Position is a point in a primary's commit history, as one flavor names
// it: a PostgreSQL LSN, a MariaDB GTID position (one sequence number per
// replication domain) or a MySQL GTID set. The zero Position is before
// everything. Positions are immutable values.
type Position struct {
	flavor Flavor
	tli    uint32      // Postgres: the timeline the LSN is on; 0 if unknown
	lsn    uint64      // Postgres
	seqs   []domainSeq // MariaDB, sorted by domain
	sets   []uuidSet   // MySQL, sorted by source
}

// domainSeq is MariaDB's last sequence number in one replication domain;
// the server id is kept only to print the GTID back.
type domainSeq struct {
	domain, server uint32
	seq            uint64
}

// uuidSet is MySQL's executed transactions of one source (a server UUID,
// with its tag if any), as sorted, disjoint, inclusive intervals.
type uuidSet struct {
	source    string
	intervals []interval
}

type interval struct{ lo, hi uint64 }

// Flavor returns the position's flavor; Unknown for the zero Position.
func (p Position) Flavor() Flavor { return p.flavor }

// Timeline returns a PostgreSQL position's timeline, 0 if unknown.
func (p Position) Timeline() uint32 { return p.tli }

// OnTimeline returns p on PostgreSQL timeline tli (0: unknown). Other
// flavors, and the zero Position, have no timeline: p itself.
func (p Position) OnTimeline(tli uint32) Position {
	if p.flavor == Postgres && !p.IsZero() {
		p.tli = tli
	}
	return p
}

// IsZero reports whether p is the zero Position.
func (p Position) IsZero() bool {
	return p.lsn == 0 && len(p.seqs) == 0 && len(p.sets) == 0
}

// Covers reports whether a node at p has applied everything up to q. A
// zero q is covered by everything; positions of different flavors cover
// nothing (the node is not what the caller thinks). PostgreSQL positions
// whose timelines are both known and differ cover nothing either: an LSN
// names a point of one history, and a node on another timeline holds
// other WAL at that LSN (a crashed primary back on its old timeline, past
// the fork) or reached it by a path the caller cannot check (the fork
// point is in the timeline's history file, which rwpool does not read).
// Where a timeline is unknown, LSNs alone decide, as before timelines.
func (p Position) Covers(q Position) bool {
	if q.IsZero() {
		return true
	}
	if p.flavor != q.flavor {
		return false
	}
	switch q.flavor {
	case Postgres:
		if p.tli != 0 && q.tli != 0 && p.tli != q.tli {
			return false
		}
		return p.lsn >= q.lsn
	case MariaDB:
		for _, d := range q.seqs {
			if p.seqOf(d.domain) < d.seq {
				return false
			}
		}
		return true
	case MySQL:
		for _, s := range q.sets {
			if !p.setOf(s.source).contains(s.intervals) {
				return false
			}
		}
		return true
	}
	return false
}

// Holds reports whether a node at p holds q's transactions themselves:
// it Covers q and, on MariaDB, its newest transactions came from q's
// servers (SameSources). A MariaDB replica left on a replaced primary's
// history (it applied transactions the new primary never had, and cannot
// follow it) may show as high a sequence number as a new write's without
// having it; Covers alone, and MASTER_GTID_WAIT, which compares sequence
// numbers the same way, take it for caught up. A read that must see a
// write asks Holds. What it costs: across a change of primary, a position
// written by the old one is not held by replicas of the new one, even
// where they have it (a switchover loses nothing), until the caller moves
// its target to the new primary's position (rwpool's rebase).
func (p Position) Holds(q Position) bool {
	return q.IsZero() || p.Covers(q) && p.SameSources(q)
}

// SameSources reports whether p's newest transactions came from the
// servers that wrote q's: in every MariaDB replication domain of q, p's
// last GTID names q's server. A MariaDB sequence number alone does not
// tell histories apart: a replica of a primary that was replaced may hold
// as high a number in a domain, written by the old primary, without
// having any transaction of the new one. PostgreSQL LSNs and MySQL GTID
// sets carry nothing more to compare (a GTID set names its sources in
// Covers already): true for them.
func (p Position) SameSources(q Position) bool {
	if p.flavor != q.flavor {
		return false
	}
	if q.flavor != MariaDB {
		return true
	}
	for _, d := range q.seqs {
		i := p.domainIndex(d.domain)
		if i < 0 || p.seqs[i].server != d.server {
			return false
		}
	}
	return true
}

// Merge returns a position covering both p and q: where a session has
// written, after two writes. Positions of different flavors do not merge:
// the newer one, q, wins; nor do PostgreSQL positions on two known
// timelines: the later timeline's wins.
func (p Position) Merge(q Position) Position {
	switch {
	case q.IsZero():
		return p
	case p.IsZero() || p.flavor != q.flavor:
		return q
	}
	switch p.flavor {
	case Postgres:
		if p.tli != 0 && q.tli != 0 && p.tli != q.tli {
			if p.tli > q.tli {
				return p
			}
			return q
		}
		return Position{flavor: Postgres, tli: max(p.tli, q.tli), lsn: max(p.lsn, q.lsn)}
	case MariaDB:
		out := Position{flavor: MariaDB, seqs: append([]domainSeq(nil), p.seqs...)}
		for _, d := range q.seqs {
			i := out.domainIndex(d.domain)
			if i < 0 {
				out.seqs = append(out.seqs, d)
				sortSeqs(out.seqs)
			} else if d.seq > out.seqs[i].seq {
				out.seqs[i] = d
			}
		}
		return out
	default:
		out := Position{flavor: MySQL}
		seen := map[string]bool{}
		for _, s := range p.sets {
			seen[s.source] = true
			out.sets = append(out.sets, uuidSet{s.source, union(s.intervals, q.setOf(s.source).intervals)})
		}
		for _, s := range q.sets {
			if !seen[s.source] {
				out.sets = append(out.sets, s)
			}
		}
		sortSets(out.sets)
		return out
	}
}

// Count returns a number that grows with every transaction p includes:
// WAL bytes for PostgreSQL, transactions for MariaDB and MySQL. Lag
// estimates interpolate between two positions with it.
func (p Position) Count() uint64 {
	switch p.flavor {
	case Postgres:
		return p.lsn
	case MariaDB:
		var n uint64
		for _, d := range p.seqs {
			n += d.seq
		}
		return n
	case MySQL:
		var n uint64
		for _, s := range p.sets {
			for _, iv := range s.intervals {
				n += iv.hi - iv.lo + 1
			}
		}
		return n
	}
	return 0
}

// String prints p as its server would: "16/B374D848", "0-1-42,1-2-7",
// "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7". The result contains only
// hex digits, digits and the separators -/:, and, so it is safe to put
// between quotes in SQL.
func (p Position) String() string {
	var b strings.Builder
	switch p.flavor {
	case Postgres:
		fmt.Fprintf(&b, "%X/%X", p.lsn>>32, uint32(p.lsn))
	case MariaDB:
		for i, d := range p.seqs {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%d-%d-%d", d.domain, d.server, d.seq)
		}
	case MySQL:
		for i, s := range p.sets {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(s.source)
			for _, iv := range s.intervals {
				b.WriteByte(':')
				b.WriteString(strconv.FormatUint(iv.lo, 10))
				if iv.hi != iv.lo {
					b.WriteByte('-')
					b.WriteString(strconv.FormatUint(iv.hi, 10))
				}
			}
		}
	}
	return b.String()
}

func (p Position) domainIndex(domain uint32) int {
	for i, d := range p.seqs {
		if d.domain == domain {
			return i
		}
	}
	return -1
}

func (p Position) seqOf(domain uint32) uint64 {
	if i := p.domainIndex(domain); i >= 0 {
		return p.seqs[i].seq
	}
	return 0
}

func (p Position) setOf(source string) uuidSet {
	for _, s := range p.sets {
		if s.source == source {
			return s
		}
	}
	return uuidSet{source: source}
}

// contains reports whether s includes every transaction of ivs.
func (s uuidSet) contains(ivs []interval) bool {
	for _, want := range ivs {
		ok := false
		for _, have := range s.intervals {
			if have.lo <= want.lo && want.hi <= have.hi {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
