package health

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/rwpool/rwpool/internal/driverinfo"
)

// IsConnError reports whether err is a connection-level failure: one that
// says the node (or the way to it) is broken, as opposed to an SQL error
// about the statement. Only these count towards tripping a node's breaker:
//
//   - driver.ErrBadConn, io.EOF, io.ErrUnexpectedEOF, net.Error and
//     connection syscall errors (refused, reset, broken pipe, unreachable);
//   - PostgreSQL SQLSTATE class 08 (connection exception) and 57P01
//     (admin shutdown), 57P02 (crash shutdown), 57P03 (cannot connect now),
//     read through a SQLState() string method (lib/pq, pgx);
//   - MySQL/MariaDB server shutdown (1053), connection killed (1927) and
//     lost-connection client errors (2006, 2013), read from a MySQLError's
//     Number, and go-sql-driver/mysql's "invalid connection".
//
// SQL errors (syntax, constraint, permission, serialization failure,
// deadlock) never count, and neither does a context the caller cancelled or
// let expire: a statement timeout the user set says nothing about the node.
// IsConnError never imports a driver: it reads errors by their methods and
// fields. The codes it knows are kept with the rest of rwpool's driver
// knowledge, in one internal package.
func IsConnError(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	for _, e := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EPIPE, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ETIMEDOUT} {
		if errors.Is(err, e) {
			return true
		}
	}
	return driverinfo.ConnFailure(err)
}

// ErrRoleMismatch is wrapped by the cause of a RoleChanged event: the server
// reports a role its configuration does not expect.
var ErrRoleMismatch = errors.New("reported role differs from the configured one")

// ErrProbeTimeout is wrapped by the error of a health probe that got no
// answer within probe_timeout: the sign of a hung node. A node tripped by
// such a probe has it in its Event's Cause.
var ErrProbeTimeout = errors.New("probe timed out")
