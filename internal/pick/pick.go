// Package pick chooses the replica that serves a read: weighted random
// among the replicas available at the moment of the pick (balance=weighted),
// or, with Adaptive, the cheaper of two weighted-random candidates by what
// they are measured to deliver (balance=adaptive; see internal/balance).
package pick

import (
	"math/rand/v2"
	"slices"

	"github.com/rwpool/rwpool/internal/balance"
)

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
	ad *Adaptive // nil: weighted

	// A pick first draws from all the candidates of a kind as if all were
	// available, by binary search in cum (O(log n)), and keeps the draw if
	// it is available (and not skipped): a draw rejected that way and
	// made again is still exactly a weighted draw among the candidates
	// that pass. After fastDraws rejections it falls back to the exact
	// scan of every candidate (O(n)), whose result has the same
	// distribution, so the mixture has it too. With all replicas up, which
	// is nearly always, a pick asks one node instead of all of them twice
	// (BenchmarkReadReplicas: 64 replicas cost a read ~300 ns more than
	// one did, most of it the scan).
	weighted []int // the indices of the weighted candidates
	cum      []int // cum[k]: the sum of the weights of weighted[:k+1]
	spares   []int // the indices of the spares
	pos      []int // pos[i]: candidate i's position in weighted or spares
}

// fastDraws is how many draws a pick makes by weight alone before it scans
// every candidate. Each is rejected with the share of the weight that is
// unavailable: with half of it down, 1 pick in 8 scans.
const fastDraws = 3

// Adaptive makes a Picker latency-aware (balance=adaptive). It draws two
// distinct candidates by weight (of the same kind: weighted, or spares)
// and returns the second only when it costs less than the first by
// Margin (balance.Meter.Cost); a stale candidate (balance.Meter.Claim) is
// returned whatever its cost, once per balance.ProbeEvery, to measure it.
//
// Why a margin rather than the plain cheaper of the two: replicas that
// deliver alike differ in cost by noise, and always taking the cheaper
// would turn that noise into shares
// (two equal replicas, one a few percent faster, would not get half each).
// Within the margin the weighted draw stands, so shares follow the weights
// while nothing is wrong; a replica several times slower than another
// loses every comparison and keeps only its probes.
type Adaptive struct {
	Meters []*balance.Meter // one per candidate, in the candidates' order
	Now    func() int64     // the meters' clock (balance.Clock)
	IntN   func(n int) int  // random source; nil: math/rand/v2's
	Margin float64          // 0: DefaultMargin
}

// DefaultMargin is the cost ratio beyond which the second candidate is
// preferred to the first.
const DefaultMargin = 3

// New returns a Picker over a copy of cs. Negative weights count as 0.
func New(cs []Candidate) *Picker {
	p := &Picker{cs: make([]Candidate, len(cs)), pos: make([]int, len(cs))}
	copy(p.cs, cs)
	total := 0
	for i := range p.cs {
		w := max(p.cs[i].Weight, 0)
		p.cs[i].Weight = w
		if w == 0 {
			p.pos[i] = len(p.spares)
			p.spares = append(p.spares, i)
			continue
		}
		total += w
		p.pos[i] = len(p.weighted)
		p.weighted = append(p.weighted, i)
		p.cum = append(p.cum, total)
	}
	return p
}

// NewAdaptive returns a latency-aware Picker (see Adaptive) over a copy of
// cs; ad.Meters must have one meter per candidate.
func NewAdaptive(cs []Candidate, ad Adaptive) *Picker {
	if len(ad.Meters) != len(cs) {
		panic("pick: one meter per candidate")
	}
	if ad.IntN == nil {
		ad.IntN = rand.IntN
	}
	if ad.Margin <= 0 {
		ad.Margin = DefaultMargin
	}
	p := New(cs)
	p.ad = &ad
	return p
}

// Pick returns the index of an available candidate chosen with probability
// proportional to its weight, or -1 when none is available. Spares are
// chosen, uniformly, only when no weighted candidate is available. skip,
// when non-nil, excludes candidates (for example those already tried).
func (p *Picker) Pick(skip func(i int) bool) int {
	if p.ad != nil {
		return p.pickAdaptive(skip)
	}
	if i := p.fastDraw(rand.IntN, skip, -1, false); i >= 0 {
		return i
	}
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

// pickAdaptive is Pick with Adaptive: see there.
func (p *Picker) pickAdaptive(skip func(i int) bool) int {
	a := p.draw(skip, -1, false)
	spare := false
	if a < 0 {
		if a = p.draw(skip, -1, true); a < 0 {
			return -1
		}
		spare = true
	}
	b := p.draw(skip, a, spare)
	if b < 0 {
		return a
	}
	ad := p.ad
	now := ad.Now()
	ma, mb := ad.Meters[a], ad.Meters[b]
	switch {
	case ma.Claim(now):
		return a
	case mb.Claim(now):
		return b
	}
	ca, cb := ma.Cost(now), mb.Cost(now)
	if ma.Estimate() > 0 && mb.Estimate() > 0 {
		if cb*ad.Margin < ca {
			return b
		}
		return a
	}
	// A node not yet measured (reads that fail fast measure nothing) is
	// not thereby cheap: the draw stands, unless one of the two has
	// stalled (silent past its estimate while it owes answers).
	if stalled(ma, ca) && !stalled(mb, cb) {
		return b
	}
	return a
}

// draw returns an available candidate other than not, by weight among the
// weighted ones, or uniformly among the spares; -1 if there is none.
func (p *Picker) draw(skip func(i int) bool, not int, spares bool) int {
	if i := p.fastDraw(p.ad.IntN, skip, not, spares); i >= 0 {
		return i
	}
	ok := func(i int, c Candidate) bool {
		return i != not && (c.Weight == 0) == spares && c.Node.Available() && (skip == nil || !skip(i))
	}
	total := 0
	for i, c := range p.cs {
		if ok(i, c) {
			total += max(c.Weight, 1)
		}
	}
	if total == 0 {
		return -1
	}
	x := p.ad.IntN(total)
	for i, c := range p.cs {
		if !ok(i, c) {
			continue
		}
		w := max(c.Weight, 1)
		if x < w {
			return i
		}
		x -= w
	}
	return -1 // a node changed state between the two passes
}

// stalled reports whether m's cost c comes from its silence rather than
// its estimate (see balance.Meter.Cost).
func stalled(m *balance.Meter, c float64) bool {
	return c > float64(m.Estimate()+balance.Floor)
}

// fastDraw draws a candidate other than not among the spares (uniformly)
// or the weighted ones (by weight), as if every one were available, at
// most fastDraws times, and returns the first draw that is available and
// not skipped, or -1 (the caller then scans: see Picker). not is left out
// of the draw itself (the second candidate of an adaptive pick), not
// rejected: it is known before, and rejecting it would make a pick among
// two replicas scan once in eight.
func (p *Picker) fastDraw(intN func(int) int, skip func(i int) bool, not int, spares bool) int {
	kind := p.weighted
	if spares {
		kind = p.spares
	}
	// The part of the draw's range that is not's, moved past (gap at base).
	base, gap := 0, 0
	if not >= 0 && (p.cs[not].Weight == 0) == spares {
		if spares {
			base, gap = p.pos[not], 1
		} else {
			k := p.pos[not]
			gap = p.cs[not].Weight
			base = p.cum[k] - gap
		}
	}
	n := len(kind)
	if !spares && n > 0 {
		n = p.cum[n-1]
	}
	if n -= gap; n <= 0 {
		return -1
	}
	for range fastDraws {
		x := intN(n)
		if x >= base {
			x += gap
		}
		i := 0
		if spares {
			i = kind[x]
		} else {
			k, _ := slices.BinarySearch(p.cum, x+1)
			i = kind[k]
		}
		if p.cs[i].Node.Available() && (skip == nil || !skip(i)) {
			return i
		}
	}
	return -1
}
