package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/rwpool/rwpool/routing"
)

const routeUsage = `Usage: rwpool route [--dialect postgres|mysql|generic] SQL

Shows where rwpool would send the statement SQL (primary, replica, or
previous: the connection that ran the previous statement, whose diagnostics
it reads), which rule of the classifier decided it, and whether it pins the
connection: a statement that pins makes every later statement of the same
lease (one *sql.Conn, one transaction, one db.Exec) run on the same
connection.
Nothing is connected to: this is rwpool's classifier (package routing) alone.
Context options (rwpool.WithPrimary) and transactions are not part of the
statement text and are not shown.

Several arguments are joined with spaces. Put -- before SQL that starts
with "-" (a "-- comment").

Flags:
  --dialect NAME   lexical rules of the SQL: postgres (lib/pq, pgx), mysql
                   (MySQL, MariaDB) or generic (unknown driver: the more
                   conservative verdict of both) (default generic)

Examples:
  rwpool route "SELECT * FROM orders WHERE id = 1"
  rwpool route --dialect mysql "SELECT * FROM orders WHERE id = 1 FOR UPDATE"
  rwpool route --dialect postgres "SELECT nextval('orders_id_seq')"
  rwpool route "/*rwpool:primary*/ SELECT balance FROM accounts WHERE id = 7"
  rwpool route -- "-- nightly report
  SELECT count(*) FROM orders"
`

// dialects maps --dialect values to routing dialects.
var dialects = map[string]routing.Dialect{
	"generic":  routing.DialectGeneric,
	"postgres": routing.DialectPostgres,
	"mysql":    routing.DialectMySQL,
}

func runRoute(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("route")
	dialect := fs.String("dialect", "generic", "")
	pos, status, done := parseFlags(fs, routeUsage, args, stdout, stderr)
	if done {
		return status
	}
	d, ok := dialects[strings.ToLower(*dialect)]
	if !ok {
		return usageErr(stderr, "rwpool route", "unknown dialect %q: want postgres, mysql or generic", *dialect)
	}
	if len(pos) == 0 {
		return usageErr(stderr, "rwpool route", "no SQL statement given")
	}
	query := strings.Join(pos, " ")
	fmt.Fprint(stdout, describeRoute(routing.Classify(query, d), d))
	return exitOK
}

// describeRoute formats a decision for people.
func describeRoute(dec routing.Decision, d routing.Dialect) string {
	var b strings.Builder
	fmt.Fprintf(&b, "target:   %s\n", dec.Target)
	switch {
	case dec.Target == routing.Previous:
		b.WriteString("pins:     no: it reads the previous statement's diagnostics, so it runs on the real connection that ran that statement (the lease's pin, or the connection its last read used)\n")
	case dec.Pins() && dec.Target == routing.Replica:
		// A replica hint on a session statement: rwpool pins anyway.
		b.WriteString("pins:     yes: it touches session state, so it runs on the lease's primary connection despite the replica hint, and so do the lease's later statements\n")
	case dec.Pins():
		b.WriteString("pins:     yes: later statements of the same lease (*sql.Conn, transaction, db.Exec) run on this primary connection\n")
	default:
		b.WriteString("pins:     no\n")
	}
	if dec.Session {
		b.WriteString("session:  yes: it changes per-connection state; the real connection is closed (or reset with reset_query), not reused as it is, when the lease ends\n")
	} else {
		b.WriteString("session:  no\n")
	}
	fmt.Fprintf(&b, "rule:     %s\n", dec.Rule)
	fmt.Fprintf(&b, "dialect:  %s\n", d)
	return b.String()
}
