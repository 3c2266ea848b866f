package rwotel

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/rwpool/rwpool/pool"
)

type refusingConnector struct{}

func (refusingConnector) Connect(context.Context) (driver.Conn, error) {
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
}
func (refusingConnector) Driver() driver.Driver { return nil }

// error.type names the driver's error, never rwpool's own wrapping: the
// pool's (github.com/rwpool/rwpool/pool) included.
func TestErrorTypeSkipsPoolWrapper(t *testing.T) {
	p, err := pool.New(pool.Config{Name: "primary", Connector: refusingConnector{}, MaxOpen: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, aerr := p.Acquire(context.Background())
	if aerr == nil {
		t.Fatal("no error")
	}
	for _, e := range []error{aerr, fmt.Errorf("x: %w", aerr)} {
		if got := errorType(e); got != "*net.OpError" {
			t.Errorf("errorType(%T %q) = %q, want *net.OpError", e, e, got)
		}
	}
}
