package main

import (
	"strings"
	"testing"
)

func TestRoute(t *testing.T) {
	for _, tc := range []struct {
		dialect string // "" for the default
		sql     string
		target  string
		pins    string // "yes" or "no"
		session string
		rule    string
	}{
		{"", "SELECT * FROM orders WHERE id = 1", "replica", "no", "no", "read: SELECT/WITH/SHOW/VALUES/TABLE"},
		{"postgres", "  /* report */ (SELECT 1)", "replica", "no", "no", "read: SELECT/WITH/SHOW/VALUES/TABLE"},
		{"", "WITH x AS (SELECT 1) SELECT * FROM x", "replica", "no", "no", "read: SELECT/WITH/SHOW/VALUES/TABLE"},
		{"mysql", "SHOW TABLES", "replica", "no", "no", "read: SELECT/WITH/SHOW/VALUES/TABLE"},
		{"", "EXPLAIN SELECT * FROM t", "replica", "no", "no", "read: EXPLAIN/DESCRIBE without ANALYZE"},
		{"postgres", "EXPLAIN ANALYZE SELECT * FROM t", "primary", "yes", "no", "write: EXPLAIN ANALYZE"},
		{"", "INSERT INTO t VALUES (1)", "primary", "yes", "no", "write: not a read statement"},
		{"", "update t set v = 2", "primary", "yes", "no", "write: not a read statement"},
		{"", "CREATE TABLE t (id int)", "primary", "yes", "no", "write: not a read statement"},
		{"mysql", "SELECT * FROM t WHERE id = 1 FOR UPDATE", "primary", "yes", "no", "write: locking read (FOR UPDATE/SHARE)"},
		{"postgres", "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "primary", "yes", "no", "write: data-modifying WITH"},
		{"postgres", "SELECT nextval('s')", "primary", "yes", "no", "session: session function"},
		{"mysql", "SELECT LAST_INSERT_ID()", "primary", "yes", "no", "session: session function"},
		{"postgres", "SELECT set_config('a.b', 'c', false)", "primary", "yes", "yes", "session: session function"},
		{"mysql", "SELECT GET_LOCK('x', 1)", "primary", "yes", "yes", "session: lock function"},
		{"postgres", "SELECT pg_notify('c', 'x')", "primary", "yes", "no", "write: function a standby refuses"},
		{"postgres", "SELECT pg_switch_wal()", "primary", "yes", "no", "write: function a standby refuses"},
		{"postgres", "SELECT query_to_xml('SELECT 1', true, false, '')", "primary", "yes", "no", "write: function that runs SQL text"},
		{"mysql", "SHOW WARNINGS", "previous", "no: it reads the previous statement's diagnostics", "no", "previous: diagnostics of the previous statement"},
		{"mysql", "SELECT ROW_COUNT()", "previous", "no", "no", "previous: diagnostics of the previous statement"},
		{"mysql", "SELECT @n := 1", "primary", "yes", "yes", "session: user variable @x"},
		{"", "SET search_path = app", "primary", "yes", "yes", "session: session statement"},
		{"", "BEGIN", "primary", "yes", "yes", "session: session statement"},
		{"postgres", "CREATE TEMP TABLE x (id int)", "primary", "yes", "yes", "session: session statement"},
		{"", "SELECT 1; DELETE FROM t", "primary", "yes", "no", "write: multi-statement with a non-read"},
		{"", "/*rwpool:primary*/ SELECT balance FROM accounts", "primary", "yes", "no", "hint: /*rwpool:primary*/"},
		{"", "/*rwpool:replica*/ SELECT * FROM t FOR UPDATE", "replica", "no", "no", "hint: /*rwpool:replica*/"},
		{"", "/*rwpool:replica*/ SET x = 1", "replica", "yes", "yes", "hint: /*rwpool:replica*/"},
		{"", "SELECT 'unterminated", "primary", "yes", "no", "primary: unterminated quote or comment"},
		{"", "  ;  ", "primary", "yes", "no", "primary: empty query"},
		{"mysql", "# comment\nSELECT 1", "replica", "no", "no", "read: SELECT/WITH/SHOW/VALUES/TABLE"},
	} {
		args := []string{"route"}
		if tc.dialect != "" {
			args = append(args, "--dialect", tc.dialect)
		}
		args = append(args, "--", tc.sql)
		st, out, errb := runCmd(t, args...)
		if st != exitOK || errb != "" {
			t.Errorf("%q: status %d, stderr %q", tc.sql, st, errb)
			continue
		}
		dialect := tc.dialect
		if dialect == "" {
			dialect = "generic"
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 5 {
			t.Errorf("%q: %d lines:\n%s", tc.sql, len(lines), out)
			continue
		}
		for i, want := range []string{
			"target:   " + tc.target,
			"pins:     " + tc.pins,
			"session:  " + tc.session,
			"rule:     " + tc.rule,
			"dialect:  " + dialect,
		} {
			if !strings.HasPrefix(lines[i], want) {
				t.Errorf("%q (%s): line %d is %q, want it to start with %q", tc.sql, dialect, i+1, lines[i], want)
			}
		}
	}
}

func TestRouteJoinsArguments(t *testing.T) {
	st, out, _ := runCmd(t, "route", "SELECT", "*", "FROM", "t", "FOR", "UPDATE")
	if st != exitOK || !strings.Contains(out, "locking read") {
		t.Errorf("status %d, output %q", st, out)
	}
}
