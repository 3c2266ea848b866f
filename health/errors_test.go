package health

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/lib/pq"
)

func TestIsConnError(t *testing.T) {
	opErr := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	counts := []error{
		driver.ErrBadConn,
		fmt.Errorf("wrapped: %w", driver.ErrBadConn),
		io.EOF,
		io.ErrUnexpectedEOF,
		opErr,
		fmt.Errorf("rwpool: node primary: connect: %w", opErr),
		syscall.ECONNRESET,
		syscall.EPIPE,
		&pq.Error{Code: "08006"}, // connection_failure
		&pq.Error{Code: "08001"}, // sqlclient_unable_to_establish_sqlconnection
		&pq.Error{Code: "57P01"}, // admin_shutdown
		&pq.Error{Code: "57P02"}, // crash_shutdown
		&pq.Error{Code: "57P03"}, // cannot_connect_now
		&mysql.MySQLError{Number: 1053, Message: "Server shutdown in progress"},
		&mysql.MySQLError{Number: 1927, Message: "Connection was killed"},
		mysql.ErrInvalidConn,
		fmt.Errorf("rwpool: node replica1: connect: %w", mysql.ErrInvalidConn),
		errors.Join(errors.New("dial"), fmt.Errorf("x: %w", mysql.ErrInvalidConn)),
	}
	never := []error{
		nil,
		errors.New("boom"),
		context.Canceled,
		context.DeadlineExceeded,
		fmt.Errorf("query: %w", context.DeadlineExceeded),
		&pq.Error{Code: "42601"}, // syntax_error
		&pq.Error{Code: "23505"}, // unique_violation
		&pq.Error{Code: "42501"}, // insufficient_privilege
		&pq.Error{Code: "40001"}, // serialization_failure
		&pq.Error{Code: "40P01"}, // deadlock_detected
		&pq.Error{Code: "57014"}, // query_canceled (statement_timeout)
		&pq.Error{Code: "25006"}, // read_only_sql_transaction
		&mysql.MySQLError{Number: 1064, Message: "syntax"},
		&mysql.MySQLError{Number: 1062, Message: "duplicate"},
		&mysql.MySQLError{Number: 1213, Message: "deadlock"},
		&mysql.MySQLError{Number: 1290, Message: "read-only"},
		&mysql.MySQLError{Number: 3024, Message: "max_execution_time exceeded"},
	}
	for _, err := range counts {
		if !IsConnError(err) {
			t.Errorf("IsConnError(%#v) = false, want true", err)
		}
	}
	for _, err := range never {
		if IsConnError(err) {
			t.Errorf("IsConnError(%#v) = true, want false", err)
		}
	}
}
