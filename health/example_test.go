package health_test

import (
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/rwpool/rwpool/health"
)

// A statement's error says whether the node is broken or the statement is.
func ExampleIsConnError() {
	fmt.Println(health.IsConnError(fmt.Errorf("query: %w", driver.ErrBadConn)))
	fmt.Println(health.IsConnError(errors.New(`pq: syntax error at or near "SELEC"`)))
	// Output:
	// true
	// false
}

// An event handler tells transitions from role changes by Kind.
func ExampleEvent() {
	handle := func(e health.Event) {
		switch {
		case e.Kind == health.RoleChanged && e.Cause != nil:
			fmt.Printf("%s: %v\n", e.Node, e.Cause)
		case e.Kind == health.StateChanged && e.To == health.Unavailable:
			fmt.Printf("%s %s -> %s\n", e.Node, e.From, e.To)
		}
	}
	handle(health.Event{Kind: health.StateChanged, Node: "replica1", Role: "replica",
		From: health.Available, To: health.Unavailable, Cause: driver.ErrBadConn})
	// Output:
	// replica1 available -> unavailable
}
