package health

// State is where a node stands with routing. Every node starts Available;
// the circuit breaker moves it to Unavailable and back, and a replica
// measured too far behind its primary (max_lag) is Lagging until it
// catches up.
type State uint32

const (
	// Available: routing may send the node any statement it is fit for
	// (writes and reads to the primary, reads to a replica).
	Available State = iota
	// Unavailable: the breaker is open. The node failed at the connection
	// level (a statement's connection error confirmed by a probe on a fresh
	// connection, or a failed health probe); it receives nothing, and a
	// borrow from it fails at once, until a health probe succeeds.
	Unavailable
	// Lagging: a replica that answers its probes but was measured further
	// behind its primary than max_lag allows. It serves no new reads until
	// its lag is back under half of max_lag; what was already running on
	// it finishes.
	Lagging
)

// String returns "available", "unavailable" or "lagging", and "unknown"
// for any other value.
func (s State) String() string {
	switch s {
	case Available:
		return "available"
	case Unavailable:
		return "unavailable"
	case Lagging:
		return "lagging"
	}
	return "unknown"
}
