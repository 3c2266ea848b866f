// Package health holds the state of each node rwpool routes to.
//
// A Node is either Available or Unavailable. Routing reads the state of
// every node directly (an atomic load) whenever it picks one, so there is no
// separately kept count of healthy replicas that could drift from the truth.
// Transitions are made with compare-and-swap, so however many callers report
// the same failure at once, exactly one of them performs the transition.
package health
