package driverinfo

import (
	"errors"
	"strings"
)

// SQLStateProtocolViolation is protocol_violation, the SQLSTATE PgBouncer
// gives every error of its own (its "pooler error"s), since it is not the
// server and has no better code.
const SQLStateProtocolViolation = "08P01"

// poolerNeverSent are the messages of PgBouncer's errors that end a client
// connection before the statement it waits with was given to any server:
// the pooler could not get a server connection for it. PgBouncer's
// "server conn crashed?" (the server died while running the statement) and
// "query_timeout" (it ran too long) are not among them: those statements
// reached a server. The messages are PgBouncer 1.x's (src/janitor.c,
// src/objects.c), unchanged since 1.7.
var poolerNeverSent = [...]string{
	"server login has been failing", // server_login_retry after a failed login
	"query_wait_timeout",            // waited for a server connection that never came free
	"pgbouncer cannot connect to server",
	"no more connections allowed", // max_client_conn, max_db_connections
}

// PoolerNeverSent reports whether err is a pooler's refusal of a statement
// that it never gave to a server: PgBouncer's FATAL errors for a client
// whose server connection could not be had (see poolerNeverSent), which
// carry SQLSTATE 08P01. A write refused so was certainly not applied.
//
// Only drivers that keep the server's message can tell: pgx returns
// PgBouncer's error as a *pgconn.PgError; lib/pq turns every FATAL error
// into driver.ErrBadConn and loses it.
func PoolerNeverSent(err error) bool {
	var st interface{ SQLState() string }
	if !errors.As(err, &st) || st.SQLState() != SQLStateProtocolViolation {
		return false
	}
	msg := err.Error()
	if e, ok := st.(error); ok {
		msg = e.Error() // the driver's own error, not what wraps it
	}
	for _, m := range poolerNeverSent {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}
