package rwpool

import "database/sql"

// ProcessCPU is processCPU for the external tests' benchmarks.
var ProcessCPU = processCPU

// EndpointBalancing reports whether replica i of db's Connector was seen
// to balance over several servers, for tests that must wait for the
// health checker to learn it.
func EndpointBalancing(db *sql.DB, i int) bool {
	return connectorOf(db).topo().replicas[i].endpoint.balancing()
}

// LearnEndpoints has the replicas of db's Connector learn where their
// endpoints lead (learnEndpoint) by identity reads alone, as their first
// probe would, for tests whose health checker never runs: their session
// reads then take the node of their last read as proof, as they would
// after the first probe.
func LearnEndpoints(db *sql.DB) {
	for _, n := range connectorOf(db).topo().replicas {
		if ident, err := n.freshIdentity(); err == nil && ident != "" {
			n.sameServer(ident, true)
			n.learnEndpoint()
		}
	}
}
