// Package rwpool is a database/sql driver that makes one primary and any
// number of weighted replicas of a real driver look like one database.
//
// Import the real driver as usual and open rwpool with a composite DSN:
//
//	import (
//		"database/sql"
//
//		_ "github.com/lib/pq"
//		_ "github.com/rwpool/rwpool"
//	)
//
//	db, err := sql.Open("rwpool", "driver=postgres;"+
//		"primary='host=db1 user=app dbname=shop';"+
//		"replica='host=db2 user=app dbname=shop' weight=3;"+
//		"replica='host=db3 user=app dbname=shop' weight=1")
//
// Every statement is routed by its SQL and the state of its connection:
// reads go to a replica chosen by weighted random, everything else, and every
// transaction, to the primary. rwpool keeps its own pool of real connections
// per node (see package pool); a database/sql connection to rwpool is a cheap
// virtual connection that borrows a real one per statement. See the dsn
// package for the DSN grammar and the routing package for the classifier.
//
// Errors returned by the real driver pass through unchanged, so code that
// inspects *pq.Error or *mysql.MySQLError keeps working; errors made by
// rwpool itself wrap their cause with %w and name the node, never its
// password.
package rwpool
