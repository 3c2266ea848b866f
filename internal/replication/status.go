package replication

import (
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// VersionQuery tells a MySQL server from a MariaDB one (FlavorOf); both
// answer to the mysql driver.
const VersionQuery = "SELECT @@version"

// FlavorOf returns MariaDB or MySQL from the answer to VersionQuery.
func FlavorOf(version string) Flavor {
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return MariaDB
	}
	return MySQL
}

// Status is what a node says about itself in answer to StatusQuery.
type Status struct {
	// ReadOnly: a PostgreSQL server in recovery or with
	// default_transaction_read_only, or a MySQL/MariaDB server with
	// read_only (or super_read_only) set.
	ReadOnly bool
	// Pos is, for a primary, the position it has written; for a replica,
	// the position it has applied. Zero when the server has none (a
	// standby that has replayed nothing, binary logging off).
	Pos Position
	// ReplayAge is, for a PostgreSQL standby, how old the last commit it
	// replayed is by its own clock; -1 when unknown or not a standby.
	ReplayAge time.Duration
	// Received is, for a PostgreSQL standby, the last position it received
	// by streaming: what it may still apply whatever happens to the server
	// it streamed from. Zero elsewhere, and on a standby that never
	// streamed.
	Received Position
}

// StatusQuery returns the query that reads a node's Status: its role, its
// position and, on PostgreSQL, its replay timestamp, and with timeline its
// timeline (see pgTimeline). primary says which position to read: written
// for the primary, applied for a replica.
func StatusQuery(f Flavor, primary, timeline bool) string {
	switch f {
	case Postgres:
		// transaction_read_only follows default_transaction_read_only,
		// the way to make a PostgreSQL primary refuse writes.
		q := "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on', " +
			"(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text, " +
			"CASE WHEN pg_is_in_recovery() THEN COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::float8, -1) ELSE -1 END, " +
			"(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_receive_lsn() END)::text"
		if timeline {
			q += ", " + pgTimeline
		}
		return q
	case MariaDB:
		if primary {
			return "SELECT @@read_only, @@gtid_binlog_pos"
		}
		return "SELECT @@read_only, @@gtid_slave_pos"
	case MySQL:
		return "SELECT @@read_only OR @@super_read_only, @@global.gtid_executed"
	}
	return ""
}

// pgTimeline is the status query's fifth column: the timeline of the
// node's position, 0 if unknown.
//   - A primary's is its WAL insert timeline, the first eight hex digits
//     of its current WAL file's name (pg_walfile_name: any role may call
//     it; it refuses to run during recovery, hence the CASE). The
//     checkpoint's timeline would not do: after a promotion it stays the
//     old one until the next checkpoint, minutes later.
//   - A standby's, while its WAL receiver streams, is the timeline of
//     what it received (received_tli); without the pg_read_all_stats
//     privilege that column reads NULL, and the timeline is unknown (0).
//     A standby with no WAL receiver (none is running: it cannot stream,
//     or was never told to) is on its last checkpoint's timeline, as it
//     can replay nothing newer: a crashed primary restarted as a standby
//     on its old timeline, which cannot stream from the new primary
//     until it is rewound, reads as on that old timeline.
//
// A role that may not call pg_control_checkpoint() (it is granted to
// PUBLIC by default) makes the whole query fail: the caller then asks
// without a timeline.
const pgTimeline = "CASE WHEN pg_is_in_recovery() THEN COALESCE(" +
	"(SELECT COALESCE(received_tli, 0) FROM pg_stat_wal_receiver LIMIT 1), " +
	"(SELECT timeline_id FROM pg_control_checkpoint())) " +
	"ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint END"

// pgCurrent reads a PostgreSQL primary's current WAL position with its
// timeline (as pgTimeline reads a primary's), "LSN TLI", on the connection
// that asks: the timeline of the server that took the session's write,
// not the one its node's last status saw. Right after a switchover behind
// the primary's address, that status is the old server's, on the old
// timeline, and a write labelled with it would pass for applied on a
// replica still on that timeline, past the same LSN (TestSimulation, seed
// 493538501747620341).
const pgCurrent = "SELECT pg_current_wal_lsn()::text || ' ' || " +
	"('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint"

// PostgresLSNQuery is WrittenQuery's and CurrentQuery's PostgreSQL query
// without the timeline, for a server that refuses pg_walfile_name (a
// role without it, a server that only speaks PostgreSQL's protocol): the
// caller then labels the LSN with the timeline its status read, as before.
const PostgresLSNQuery = "SELECT pg_current_wal_lsn()::text"

// IdentityQuery returns a query whose one value tells servers apart, even
// behind one address (a DNS name, a virtual IP, a proxy): PostgreSQL's
// server address, port and start time, MySQL's and MariaDB's host name,
// port and server_id. Replicas of one PostgreSQL cluster share its
// system_identifier, so that alone would not do.
func IdentityQuery(f Flavor) string {
	switch f {
	case Postgres:
		return "SELECT COALESCE(host(inet_server_addr()), '') || ':' || COALESCE(inet_server_port()::text, '') || '/' || pg_postmaster_start_time()::text"
	case MariaDB, MySQL:
		return "SELECT CONCAT(@@hostname, ':', @@port, '/', @@server_id)"
	}
	return ""
}

// ClusterQuery returns a query whose one value names the cluster, the same
// on its primary and every replica: PostgreSQL's system identifier. ""
// where the server has none (MariaDB and MySQL replicas each have their
// own server ids and UUIDs).
func ClusterQuery(f Flavor) string {
	if f == Postgres {
		return "SELECT system_identifier::text FROM pg_control_system()"
	}
	return ""
}

// IdentityServer returns the part of identity, an answer to
// IdentityQuery(f), that names the server whatever its restarts: all of
// MySQL's and MariaDB's, PostgreSQL's address and port without the start
// time. Two answers with the same server part and different start times
// come from one server restarted in between, or from two servers taking
// turns on one address (a virtual IP): either way no connection opened
// before the change still reaches the server that was there then. (Over
// a Unix socket, PostgreSQL has no address: every server there is ":",
// one local server.)
func IdentityServer(f Flavor, identity string) string {
	if f == Postgres {
		server, _, _ := strings.Cut(identity, "/") // neither an address nor a port holds a "/"
		return server
	}
	return identity
}

// ParseStatus parses one row answering StatusQuery(f, ...).
func ParseStatus(f Flavor, row []driver.Value) (Status, error) {
	st := Status{ReplayAge: -1}
	want := 2
	if f == Postgres {
		want = 5
		if len(row) == 3 || len(row) == 4 {
			// Servers that answer like PostgreSQL without the received
			// position or the timeline (the query before they were
			// asked, or asked without timeline): nothing received, no
			// timeline known.
			want = len(row)
		}
	}
	if len(row) != want {
		return st, fmt.Errorf("replication: status: %d columns, want %d", len(row), want)
	}
	var err error
	if st.ReadOnly, err = asBool(row[0]); err != nil {
		return st, fmt.Errorf("replication: status: read-only: %w", err)
	}
	if st.Pos, err = Parse(f, asString(row[1])); err != nil {
		return st, err
	}
	if f == Postgres {
		if age, err := strconv.ParseFloat(asString(row[2]), 64); err == nil && age >= 0 {
			st.ReplayAge = time.Duration(age * float64(time.Second))
		}
		if want >= 4 && row[3] != nil {
			if st.Received, err = Parse(f, asString(row[3])); err != nil {
				return st, fmt.Errorf("replication: status: received: %w", err)
			}
		}
		if want == 5 && row[4] != nil {
			tli, err := strconv.ParseUint(asString(row[4]), 10, 32)
			if err != nil {
				return st, fmt.Errorf("replication: status: timeline: %q is not a timeline", short(asString(row[4])))
			}
			st.Pos, st.Received = st.Pos.OnTimeline(uint32(tli)), st.Received.OnTimeline(uint32(tli))
		}
	}
	return st, nil
}

// Parse parses a position in f's notation.
func Parse(f Flavor, s string) (Position, error) {
	switch f {
	case Postgres:
		// pgCurrent's answer, "LSN TLI", or an LSN alone.
		lsn, tli, withTLI := strings.Cut(strings.TrimSpace(s), " ")
		p, err := ParseLSN(lsn)
		if err != nil || !withTLI {
			return p, err
		}
		t, err := strconv.ParseUint(tli, 10, 32)
		if err != nil {
			return Position{}, fmt.Errorf("replication: invalid PostgreSQL timeline %q", short(s))
		}
		return p.OnTimeline(uint32(t)), nil
	case MariaDB:
		return ParseMariaDBGTID(s)
	case MySQL:
		return ParseMySQLGTIDSet(s)
	}
	return Position{}, fmt.Errorf("replication: %s servers have no positions", f)
}

// WrittenQuery returns the query that, run on the primary connection that
// has just committed a write, returns a Position covering that write:
// PostgreSQL's current WAL position, MariaDB's last GTID of the session
// (the binlog position if the session logged nothing), MySQL's executed
// GTID set.
func WrittenQuery(f Flavor) string {
	switch f {
	case Postgres:
		return pgCurrent
	case MariaDB:
		return "SELECT IF(@@last_gtid = '', @@gtid_binlog_pos, @@last_gtid)"
	case MySQL:
		return "SELECT @@global.gtid_executed"
	}
	return ""
}

// CurrentQuery returns the query that returns the primary's current
// position on any of its connections: PostgreSQL's current WAL position,
// MariaDB's binlog position (not WrittenQuery's @@last_gtid, which is the
// last of that connection's session, and so an older write's, or none, on
// another connection), MySQL's executed GTID set.
func CurrentQuery(f Flavor) string {
	switch f {
	case Postgres:
		return pgCurrent
	case MariaDB:
		return "SELECT @@gtid_binlog_pos"
	case MySQL:
		return "SELECT @@global.gtid_executed"
	}
	return ""
}

// AppliedQuery returns the query that asks a replica whether it has
// applied target, waiting up to wait where the server can wait
// (MASTER_GTID_WAIT on MariaDB; WAIT_FOR_EXECUTED_GTID_SET on MySQL,
// whose timeout has whole seconds and where 0 means forever, so a wait
// under a second becomes a check with GTID_SUBSET). PostgreSQL has no
// such wait before version 17's extensions, so the standby's replay
// position is read and compared. Read the answer with Applied.
func AppliedQuery(target Position, wait time.Duration) string {
	switch target.flavor {
	case Postgres:
		return "SELECT pg_last_wal_replay_lsn()::text"
	case MariaDB:
		// With the replica's current position: the wait compares sequence
		// numbers only (see Position.Holds).
		return "SELECT CONCAT(MASTER_GTID_WAIT('" + target.String() + "', " +
			strconv.FormatFloat(max(wait, 0).Seconds(), 'f', 3, 64) + "), ',', @@gtid_current_pos)"
	case MySQL:
		if wait >= time.Second {
			return "SELECT WAIT_FOR_EXECUTED_GTID_SET('" + target.String() + "', " +
				strconv.Itoa(int(wait/time.Second)) + ") = 0"
		}
		return "SELECT GTID_SUBSET('" + target.String() + "', @@global.gtid_executed)"
	}
	return ""
}

// Applied reads the answer to AppliedQuery(target, ...): whether the
// replica has applied target, and the position it is known to have
// applied (its replay position on PostgreSQL, target when it has).
func Applied(target Position, v driver.Value) (ok bool, at Position, err error) {
	switch target.flavor {
	case Postgres:
		at, err = ParseLSN(asString(v))
		if err != nil {
			return false, Position{}, err
		}
		return at.Covers(target), at, nil
	case MariaDB:
		// MASTER_GTID_WAIT: 0 reached, -1 timed out; then, after a comma,
		// the replica's @@gtid_current_pos, which must name target's
		// servers (Position.Holds). A bare wait result (no comma) is
		// judged by the wait alone.
		r, cur, withPos := strings.Cut(asString(v), ",")
		ok = r == "0"
		if !withPos {
			break
		}
		p, err := ParseMariaDBGTID(cur)
		if err != nil {
			return false, Position{}, err
		}
		if !ok || !p.Holds(target) {
			return false, Position{}, nil
		}
		return true, p, nil
	case MySQL:
		ok, err = asBool(v)
	}
	if ok {
		at = target
	}
	return ok, at, err
}

func asString(v driver.Value) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

func asBool(v driver.Value) (bool, error) {
	switch s := strings.ToLower(asString(v)); s {
	case "1", "t", "true", "on":
		return true, nil
	case "0", "f", "false", "off":
		return false, nil
	default:
		return false, fmt.Errorf("not a boolean: %q", short(s))
	}
}
