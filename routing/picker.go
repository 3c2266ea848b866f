package routing

import (
	"math/rand/v2"

	"github.com/rwpool/rwpool/internal/breaker"
)

// Candidate is one replica that may serve a read: its weight and its live
// health state.
type Candidate struct {
	Weight int
	Node   *breaker.Node
}

// Picker chooses a replica by weighted random among the available ones.
// It keeps no state of its own beyond the fixed candidate list: availability
// is read from each node at every pick, so it cannot drift.
// A Picker is safe for concurrent use.
type Picker struct {
	replicas []Candidate
}

// NewPicker returns a Picker over replicas. Negative weights count as 0.
func NewPicker(replicas []Candidate) *Picker {
	rs := make([]Candidate, len(replicas))
	copy(rs, replicas)
	for i := range rs {
		rs[i].Weight = max(rs[i].Weight, 0)
	}
	return &Picker{replicas: rs}
}

// Len returns the number of candidates.
func (p *Picker) Len() int { return len(p.replicas) }

// Pick returns the index of an available replica chosen with probability
// proportional to its weight, or -1 when none is available. Weight-0 replicas
// (spares) are chosen, uniformly, only when no weighted replica is available.
// skip, when non-nil, excludes candidates (for example those already tried).
func (p *Picker) Pick(skip func(i int) bool) int {
	total, spares := 0, 0
	for i, r := range p.replicas {
		if !r.Node.Available() || (skip != nil && skip(i)) {
			continue
		}
		if r.Weight == 0 {
			spares++
		}
		total += r.Weight
	}
	switch {
	case total > 0:
		x := rand.IntN(total)
		for i, r := range p.replicas {
			if r.Weight == 0 || !r.Node.Available() || (skip != nil && skip(i)) {
				continue
			}
			if x < r.Weight {
				return i
			}
			x -= r.Weight
		}
	case spares > 0:
		x := rand.IntN(spares)
		for i, r := range p.replicas {
			if r.Weight != 0 || !r.Node.Available() || (skip != nil && skip(i)) {
				continue
			}
			if x == 0 {
				return i
			}
			x--
		}
	}
	// A node changed state between the two passes and nothing matched.
	return -1
}
