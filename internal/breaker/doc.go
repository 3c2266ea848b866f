// Package breaker is the circuit breaker and health checker of one rwpool
// node: the live State the root package's routing reads (see package
// health for the states and events), with the transitions that change it
// and the measurements (probe latency, replication lag, reported role)
// that drive them.
//
// A Node is Available, Unavailable (its breaker is open) or Lagging (a
// replica behind max_lag). Routing reads the state of every node directly
// (an atomic load) whenever it picks one, so there is no separately kept
// count of healthy replicas that could drift from the truth. Transitions
// are serialised and checked, so however many callers report the same
// failure at once, exactly one of them makes the transition and one Event
// is sent.
package breaker
