package rwpool

import "database/sql"

// ProcessCPU is processCPU for the external tests' benchmarks.
var ProcessCPU = processCPU

// EndpointBalancing reports whether replica i of db's Connector was seen
// to balance over several servers, for tests that must wait for the
// health checker to learn it.
func EndpointBalancing(db *sql.DB, i int) bool {
	return connectorOf(db).replicas[i].endpoint.balancing()
}
