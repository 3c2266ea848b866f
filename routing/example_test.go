package routing_test

import (
	"fmt"

	"github.com/rwpool/rwpool/routing"
)

// A plain read goes to a replica.
func ExampleClassify() {
	d := routing.Classify(`SELECT id, name FROM users WHERE org_id = $1`, routing.DialectPostgres)
	fmt.Println(d.Target, d.Pins())
	fmt.Println(d.Rule)
	// Output:
	// replica false
	// read: SELECT/WITH/SHOW/VALUES/TABLE
}

// A write goes to the primary, and pins the lease there so that what
// follows it on the same connection sees it.
func ExampleClassify_write() {
	d := routing.Classify(`UPDATE users SET name = ? WHERE id = ?`, routing.DialectMySQL)
	fmt.Println(d.Target, d.Pins())
	fmt.Println(d.Rule)
	// Output:
	// primary true
	// write: not a read statement
}

// A locking read is a read by its first word, but its locks only protect
// rows on the primary, and a PostgreSQL standby refuses it.
func ExampleClassify_lockingRead() {
	d := routing.Classify(`SELECT balance FROM accounts WHERE id = 7 FOR UPDATE`, routing.DialectGeneric)
	fmt.Println(d)
	// Output:
	// primary (write: locking read (FOR UPDATE/SHARE))
}

// SHOW WARNINGS answers about the statement before it, so it must run on
// the connection that ran that one.
func ExampleClassify_diagnostics() {
	d := routing.Classify(`SHOW WARNINGS`, routing.DialectMySQL)
	fmt.Println(d)
	// Output:
	// previous (previous: diagnostics of the previous statement (SHOW WARNINGS, ROW_COUNT()...))
}

// DialectOf picks the lexical rules from the name a driver is registered
// under.
func ExampleDialectOf() {
	fmt.Println(routing.DialectOf("pgx"), routing.DialectOf("mysql"), routing.DialectOf("sqlite3"))
	// Output:
	// postgres mysql generic
}

// A replica hint decides the target, but a statement that changes the
// session still pins: the rest of the lease must see the change.
func ExampleDecision_Pins() {
	for _, q := range []string{`/*rwpool:replica*/ SELECT 1`, `/*rwpool:replica*/ SET search_path = app`} {
		d := routing.Classify(q, routing.DialectPostgres)
		fmt.Println(d.Target, d.Session, d.Pins())
	}
	// Output:
	// replica false false
	// replica true true
}
