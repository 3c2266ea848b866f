// Package health holds what rwpool says about the health of the nodes it
// routes to: the State of a node (Available, Unavailable or Lagging), the
// Events a change of state, of a node's reported role or of the server
// behind its endpoint produces, and the
// classification of errors into those that say a node is broken and those
// that say a statement is.
//
// Each node has a circuit breaker. Only a connection-level failure
// (IsConnError), confirmed by a probe on a fresh connection, opens it: the
// node becomes Unavailable, receives no statements and fails borrows at
// once, until a periodic health probe succeeds. A replica measured further
// behind its primary than max_lag becomes Lagging and serves no reads until
// it catches up. Routing reads every node's state when it picks one, so no
// separately kept count of healthy replicas can drift from the truth, and
// however many statements report the same failure at once, the transition
// and its Event happen once.
//
// rwpool re-exports State, Event and EventKind with their constants, so
// most programs never import this package; it is useful to code that
// classifies errors the way rwpool's breaker does.
package health
