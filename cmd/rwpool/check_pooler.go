package main

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/rwpool/rwpool/routing"
)

// checkPooler tells whether something sits between the DSN and the server:
// a pooler such as PgBouncer, ProxySQL or Pgpool-II, a TCP proxy, or a
// port mapping. Two observations, neither of which needs privileges:
//
//   - The server's own port (inet_server_port(), @@port) is not the port
//     the DSN dials: whatever answered the dial is not the server.
//   - Transaction pooling: a client connection's statements run in
//     different server sessions. One connection reads its session id; a
//     second connection opens a transaction and holds it (a transaction
//     pooler must give it a server session of its own, likely the first
//     one's, now idle); the first reads its session id again. A server,
//     or a pooler in session mode, answers the same id twice and gives the
//     two connections different ones.
//
// A pooler in session mode on the server's own port (one host, another
// interface) goes unseen; that is fine, since nothing about it changes
// what rwpool does.
func checkPooler(ctx context.Context, driver string, db *sql.DB, r *nodeReport) {
	portQ, idQ := "SELECT inet_server_port()", "SELECT pg_backend_pid()"
	if routing.DialectOf(driver) == routing.DialectMySQL {
		portQ, idQ = "SELECT @@port", "SELECT CONNECTION_ID()"
	}
	n := r.node
	_, dialled := n.Address()
	var served sql.NullString
	if err := db.QueryRowContext(ctx, portQ).Scan(&served); err == nil && served.Valid &&
		dialled != "" && served.String != dialled {
		r.between = fmt.Sprintf("the DSN dials port %s, the server listens on %s", dialled, served.String)
	}
	pooled, err := transactionPooled(ctx, db, idQ)
	if err != nil {
		r.info = append(r.info, "pooling unknown: "+scrub(n, err))
	}
	switch {
	case pooled:
		r.pooler = "TRANSACTION POOLING (PgBouncer pool_mode=transaction or alike): each transaction may run in another server session"
		if r.between != "" {
			r.pooler += "; " + r.between
		}
		r.info = append(r.info, "through a transaction pooler, rwpool keeps a session only within a transaction: "+
			"SET, temporary tables, advisory locks and LISTEN on a *sql.Conn do not outlast a statement; "+
			"use lib/pq's binary_parameters=yes or pgx's default_query_exec_mode=exec (PgBouncer before 1.21 keeps no prepared statements); "+
			"read-your-writes and roles still hold (positions and roles are the server's)")
	case r.between != "":
		r.pooler = "a pooler in session mode, a proxy or a port mapping: " + r.between
		r.info = append(r.info, "between rwpool and the server: rwpool's pool sits on top of it; "+
			"a restarted server is reachable again only when the pooler reconnects (PgBouncer: server_login_retry)")
	}
}

// transactionPooled reports whether two reads of the session id on one
// client connection, around another connection's open transaction, came
// from different server sessions, or the two connections shared one.
func transactionPooled(ctx context.Context, db *sql.DB, idQ string) (bool, error) {
	db.SetMaxOpenConns(2)
	defer db.SetMaxOpenConns(1)
	c1, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer c1.Close()
	var before, after, other int64
	if err := c1.QueryRowContext(ctx, idQ).Scan(&before); err != nil {
		return false, err
	}
	c2, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer c2.Close()
	// Read-only: a standby refuses to begin a read-write one with lib/pq.
	tx, err := c2.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, idQ).Scan(&other); err != nil {
		return false, err
	}
	if err := c1.QueryRowContext(ctx, idQ).Scan(&after); err != nil {
		return false, err
	}
	return before != after || other == before, nil
}
