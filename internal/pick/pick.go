// Package pick chooses the replica that serves a read: weighted random
// among the replicas available at the moment of the pick.
package pick

import "math/rand/v2"

// Node is what a Picker needs to know of a replica: whether it may serve a
// read now. It is asked at every pick, so the Picker keeps no copy of a
// state that could drift from the node's own.
type Node interface {
	Available() bool
}

// Candidate is one replica that may serve a read.
type Candidate struct {
	Weight int // share of reads; 0 is a spare, used only when no weighted replica is available
	Node   Node
}

// Picker chooses a replica by weighted random among the available ones.
// Its candidate list is fixed. A Picker is safe for concurrent use.
type Picker struct {
	cs []Candidate
}

// New returns a Picker over a copy of cs. Negative weights count as 0.
func New(cs []Candidate) *Picker {
	p := &Picker{cs: make([]Candidate, len(cs))}
	copy(p.cs, cs)
	for i := range p.cs {
		p.cs[i].Weight = max(p.cs[i].Weight, 0)
	}
	return p
}

// Pick returns the index of an available candidate chosen with probability
// proportional to its weight, or -1 when none is available. Spares are
// chosen, uniformly, only when no weighted candidate is available. skip,
// when non-nil, excludes candidates (for example those already tried).
func (p *Picker) Pick(skip func(i int) bool) int {
	total, spares := 0, 0
	for i, c := range p.cs {
		if !c.Node.Available() || (skip != nil && skip(i)) {
			continue
		}
		if c.Weight == 0 {
			spares++
		}
		total += c.Weight
	}
	switch {
	case total > 0:
		x := rand.IntN(total)
		for i, c := range p.cs {
			if c.Weight == 0 || !c.Node.Available() || (skip != nil && skip(i)) {
				continue
			}
			if x < c.Weight {
				return i
			}
			x -= c.Weight
		}
	case spares > 0:
		x := rand.IntN(spares)
		for i, c := range p.cs {
			if c.Weight != 0 || !c.Node.Available() || (skip != nil && skip(i)) {
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
