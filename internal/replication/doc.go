// Package replication reads what a database node says about its
// replication, and reasons about it: the node's role (a PostgreSQL standby
// in recovery, a MySQL or MariaDB server with read_only), the position in
// its primary's commit history it has written or applied (an LSN, a GTID
// position, a GTID set), and from a history of the primary's positions,
// how far a replica lags behind.
//
// It builds the SQL rwpool sends for this and parses the answers; it does
// no I/O itself. Every query text it returns is built from parsed
// positions, never from unchecked input.
package replication
