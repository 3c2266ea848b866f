package rwpool

import (
	"github.com/rwpool/rwpool/internal/pick"
)

// topology is the set of nodes at one moment: the DSN's, and the replicas
// discovery found (discover.go). It is never changed once published: a
// change makes a new one, swapped in whole (Connector.top), so that a read
// picks among one consistent set of readers and its picker without a
// lock, and a node leaving the set cannot shift another's index under a
// pick in flight.
type topology struct {
	nodes    []*node // the DSN's primary first, then the DSN's replicas in order, then discovered ones
	replicas []*node // nodes[1:]
	readers  []*node // the picker's candidates, in its order: the replicas, or every node with follow_promotion
	picker   *pick.Picker
}

// topo returns the current topology: one atomic load.
func (c *Connector) topo() *topology { return c.top.Load() }

// newTopology returns the topology of nodes, the DSN's primary first.
func (c *Connector) newTopology(nodes []*node) *topology {
	t := &topology{nodes: nodes, replicas: nodes[1:]}
	picks := make([]pick.Candidate, 0, len(nodes))
	t.readers = t.replicas
	if c.cfg.FollowPromotion {
		// Any node may serve reads as a replica: the primary of the DSN
		// once demoted, and no node while it is the primary (readNode).
		t.readers = nodes
		for _, n := range nodes {
			picks = append(picks, pick.Candidate{Weight: n.cfg.Weight, Node: readNode{n}})
		}
	} else {
		for _, n := range t.replicas {
			picks = append(picks, pick.Candidate{Weight: n.cfg.Weight, Node: n.health})
		}
	}
	t.picker = c.newPicker(picks, t.readers)
	return t
}
