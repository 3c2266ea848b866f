package testcluster

import (
	"sort"
	"time"
)

// Ack is a write the primary acknowledged: its id (ids grow with time, as
// a sequence's do) and when it was acknowledged, as an offset from any
// origin the caller keeps for all its times.
type Ack struct {
	ID int64
	At time.Duration
}

// Staleness measures reads against the acknowledged writes that the
// primary kept: a read that saw ids up to max missed every one above it,
// and is as stale as the oldest of those acknowledged before it began.
// The Patroni fault tests and the bench's Patroni scenarios measure their
// stalest read so, and must agree.
type Staleness struct {
	acks   []Ack           // by ID
	oldest []time.Duration // oldest[i]: the earliest At among acks[i:]; -1 past the end
}

// NewStaleness prepares the measure over acks (the writes on the primary
// at the end; those lost in a crash were never there to read). acks is
// sorted in place.
func NewStaleness(acks []Ack) *Staleness {
	sort.Slice(acks, func(i, j int) bool { return acks[i].ID < acks[j].ID })
	oldest := make([]time.Duration, len(acks)+1)
	oldest[len(acks)] = -1
	for i := len(acks) - 1; i >= 0; i-- {
		oldest[i] = acks[i].At
		if next := oldest[i+1]; next >= 0 && next < oldest[i] {
			oldest[i] = next
		}
	}
	return &Staleness{acks: acks, oldest: oldest}
}

// Of returns how stale a read that began at start and saw ids up to max
// was: the age then of the oldest write it missed, and false when it
// missed none acknowledged before it began.
func (s *Staleness) Of(start time.Duration, max int64) (time.Duration, bool) {
	i := sort.Search(len(s.acks), func(i int) bool { return s.acks[i].ID > max })
	if o := s.oldest[i]; o >= 0 && o < start {
		return start - o, true
	}
	return 0, false
}
