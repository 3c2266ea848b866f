package simcluster

import (
	"database/sql/driver"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The statements a simulated server understands: the simulation's
// workload (inserts of row ids, point reads by id, transactions as
// statements) and rwpool's own queries.
type kind int

const (
	kindUnknown  kind = iota
	kindInsert        // INSERT INTO t VALUES (id)[, (id)…] [RETURNING id]
	kindSelectID      // SELECT id FROM t WHERE id = N
	kindBegin         // BEGIN, START TRANSACTION, SET autocommit=0
	kindCommit        // COMMIT, SET autocommit=1
	kindRollback      // ROLLBACK
	kindOne           // SELECT 1, the probe
	kindNode          // SELECT node: the server's name
	kindStatus        // status, identity and version queries (probes)
	kindPosition      // a session's position queries, the cluster's identity
	kindWaitGTID      // MASTER_GTID_WAIT
)

type statement struct {
	q         string
	kind      kind
	ids       []int64
	returning bool
	what      string        // kindStatus, kindPosition: which answer
	timeline  bool          // pg_status: the timeline is asked too
	seq       int64         // kindWaitGTID: the sequence number awaited
	wait      time.Duration // kindWaitGTID: the longest wait
	withPos   bool          // kindWaitGTID: followed by ',' and @@gtid_current_pos
}

var (
	reInsert   = regexp.MustCompile(`(?i)^INSERT INTO t VALUES (.*?)( RETURNING id)?$`)
	reValue    = regexp.MustCompile(`\(\s*([^)]*)\)`)
	reSelectID = regexp.MustCompile(`(?i)^SELECT id FROM t WHERE id = (\S+)$`)
	reWaitGTID = regexp.MustCompile(`MASTER_GTID_WAIT\('0-\d+-(\d+)', ([0-9.]+)\)`)
)

func parse(q string, args []driver.NamedValue) (statement, error) {
	st := statement{q: q}
	t := strings.TrimSpace(q)
	u := strings.ToUpper(t)
	arg := func(s string) (int64, error) {
		s = strings.TrimSpace(s)
		if s == "?" || strings.HasPrefix(s, "$") {
			i := 0
			if s != "?" {
				n, err := strconv.Atoi(s[1:])
				if err != nil {
					return 0, err
				}
				i = n - 1
			}
			if i < 0 || i >= len(args) {
				return 0, fmt.Errorf("simcluster: missing argument %s in %q", s, q)
			}
			switch v := args[i].Value.(type) {
			case int64:
				return v, nil
			default:
				return 0, fmt.Errorf("simcluster: argument %s is %T", s, v)
			}
		}
		return strconv.ParseInt(s, 10, 64)
	}
	switch {
	case reInsert.MatchString(t):
		m := reInsert.FindStringSubmatch(t)
		st.kind, st.returning = kindInsert, m[2] != ""
		for _, v := range reValue.FindAllStringSubmatch(m[1], -1) {
			id, err := arg(v[1])
			if err != nil {
				return st, err
			}
			st.ids = append(st.ids, id)
		}
	case reSelectID.MatchString(t):
		id, err := arg(reSelectID.FindStringSubmatch(t)[1])
		if err != nil {
			return st, err
		}
		st.kind, st.ids = kindSelectID, []int64{id}
	case u == "BEGIN" || u == "START TRANSACTION" || u == "SET AUTOCOMMIT=0":
		st.kind = kindBegin
	case u == "COMMIT" || u == "SET AUTOCOMMIT=1":
		st.kind = kindCommit
	case u == "ROLLBACK":
		st.kind = kindRollback
	case u == "SELECT 1" || u == "DISCARD ALL":
		st.kind = kindOne
	case u == "SELECT NODE":
		st.kind = kindNode
	case strings.Contains(t, "MASTER_GTID_WAIT"):
		m := reWaitGTID.FindStringSubmatch(t)
		if m == nil {
			return st, fmt.Errorf("simcluster: cannot parse %q", q)
		}
		st.kind = kindWaitGTID
		st.withPos = strings.Contains(t, "@@gtid_current_pos")
		st.seq, _ = strconv.ParseInt(m[1], 10, 64)
		f, _ := strconv.ParseFloat(m[2], 64)
		st.wait = time.Duration(f * float64(time.Second))
	default:
		st.kind, st.what = statusKind(t)
		st.timeline = st.what == "pg_status" && strings.Contains(t, "received_tli")
	}
	return st, nil
}

// statusKind recognises rwpool's queries by what they ask for.
func statusKind(t string) (kind, string) {
	has := func(s string) bool { return strings.Contains(t, s) }
	switch {
	case has("pg_is_in_recovery()"):
		return kindStatus, "pg_status"
	case has("pg_postmaster_start_time()"):
		return kindStatus, "pg_identity"
	case has("@@server_id"):
		return kindStatus, "my_identity"
	case has("@@version"):
		return kindStatus, "my_version"
	case has("@@read_only") && has("@@gtid_binlog_pos"):
		return kindStatus, "my_status_primary"
	case has("@@read_only") && has("@@gtid_slave_pos"):
		return kindStatus, "my_status_replica"
	case has("pg_control_system()"):
		return kindPosition, "pg_system" // asked by a caller (a session token), not a probe
	case has("pg_current_wal_lsn()"):
		return kindPosition, "pg_current"
	case has("pg_last_wal_replay_lsn()"):
		return kindPosition, "pg_replay"
	case has("@@last_gtid"):
		return kindPosition, "my_written"
	case has("@@gtid_binlog_pos"):
		return kindPosition, "my_binlog"
	}
	return kindUnknown, ""
}
