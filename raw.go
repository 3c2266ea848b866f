package rwpool

import (
	"context"
	"database/sql"
	"time"
)

// Raw calls f with the real driver connection behind c, for what only the
// real driver can do: pgx's CopyFrom, LISTEN and WaitForNotification, or
// pgx-only types through (*stdlib.Conn).Conn(); lib/pq's and
// go-sql-driver/mysql's own connection methods. driverConn is the real
// driver's driver.Conn (for pgx's stdlib a *stdlib.Conn).
//
// Raw pins c's lease to a primary connection (or keeps the one it is
// pinned to, such as a transaction's, which may be a replica's for a
// read-only transaction): whatever f did to it stays with c until c is
// closed, and it is then closed, never reset (reset_query) nor handed to
// another lease, since the driver's own state (pgx's type map and
// statement cache, a LISTEN) may have changed too. Later statements on c
// run on it.
//
// Inside f rwpool does nothing: no routing, no replay, no deadline watch
// and no breaker; f must not keep driverConn after it returns. An error f
// returns counts against the connection's node like a failed statement's.
//
//	err := rwpool.Raw(ctx, c, func(dc any) error {
//		pgxConn := dc.(*stdlib.Conn).Conn()
//		_, err := pgxConn.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"id"}, src)
//		return err
//	})
func Raw(ctx context.Context, c *sql.Conn, f func(driverConn any) error) error {
	return c.Raw(func(dc any) error {
		vc, ok := dc.(*conn)
		if !ok {
			return ErrNotRWPool
		}
		return vc.raw(ctx, f)
	})
}

func (vc *conn) raw(ctx context.Context, f func(any) error) error {
	if err := vc.usable(); err != nil {
		return err
	}
	l := &vc.lease
	fresh := !l.pinned()
	if fresh {
		l.unpark()
		var until time.Time
		if err := vc.c.writable(ctx, &until); err != nil {
			return err
		}
		n := vc.c.primaryNode()
		pc, err := n.acquire(ctx)
		if err != nil {
			return err
		}
		l.pin(pc, n, true)
	}
	l.dirty, l.raw = true, true
	_, err := l.settle(ctx, f(l.pc.Raw()), fresh)
	return err
}
