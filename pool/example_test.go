package pool_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/rwpool/rwpool/pool"
)

// Borrow a connection, use it, give it back; destroy it instead when the
// driver says it is broken.
func Example() {
	p, err := pool.New(pool.Config{
		Name:           "replica1",  // named in errors
		Connector:      connector{}, // the real driver's connector
		MaxOpen:        10,
		AcquireTimeout: time.Second,
		MaxWaiters:     100,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	c, err := p.Acquire(context.Background())
	if err != nil {
		fmt.Println(err) // wraps ErrAcquireTimeout, ErrTooManyWaiters, ErrClosed, ...
		return
	}
	if err := ping(c.Raw()); errors.Is(err, driver.ErrBadConn) {
		c.Destroy()
	} else {
		c.Release()
	}
	s := p.Stat()
	fmt.Printf("open %d, idle %d, in use %d\n", s.Open, s.Idle, s.InUse)
	// Output:
	// open 1, idle 1, in use 0
}

// A full pool with no room to wait fails Acquire at once.
func ExamplePool_Acquire() {
	p, _ := pool.New(pool.Config{Name: "primary", Connector: connector{}, MaxOpen: 1})
	defer p.Close()
	c, _ := p.Acquire(context.Background())
	_, err := p.Acquire(context.Background())
	fmt.Println(errors.Is(err, pool.ErrTooManyWaiters))
	fmt.Println(err)
	c.Release()
	// Output:
	// true
	// rwpool: node primary: too many waiters (limit 0; in use 1/1, waiting 0)
}

func ping(c driver.Conn) error {
	if p, ok := c.(driver.Pinger); ok {
		return p.Ping(context.Background())
	}
	return nil
}

// connector stands for a real driver's driver.Connector.
type connector struct{}

func (connector) Connect(context.Context) (driver.Conn, error) { return conn{}, nil }
func (connector) Driver() driver.Driver                        { return nil }

type conn struct{}

func (conn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (conn) Close() error                        { return nil }
func (conn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }
