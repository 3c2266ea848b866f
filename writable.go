package rwpool

import "fmt"

// A replica that reported itself read-only and then writable has left the
// primary's history, as far as rwpool can tell: it was promoted (its
// endpoint is the primary's now, or will be), or it is a primary that
// crashed and came back on its own history, with writes the new primary
// never got (MariaDB does not persist read_only; PostgreSQL starts a
// crashed primary as a primary again). Its reads may return rows every
// other server has lost: without follow_promotion (which has its own
// rule, promote.go: a demoted node serves no read until it is seen
// following), it is taken out of reads, as Lagging, until it reports
// itself read-only again. Positions cannot tell the two apart without
// their history (a PostgreSQL timeline), and the promoted one is the
// primary: reads lose nothing by going elsewhere.
//
// A replica writable from the first status read on (a MySQL or MariaDB
// replica run without read_only, a common setup) keeps serving reads:
// nothing says it left the primary. ProxySQL goes further and moves every
// writable server out of its readers; rwpool does not, as such replicas
// would all go at once. Found by TestSimulation (abandoned-read: two
// crash failovers behind a primary endpoint, the first new primary, still
// a replica node, back writable on its own history after the second).

// writableAway records the role replica n reported (ro), and reports
// whether n is out of reads for having turned writable since it was seen
// read-only (see above). It takes n out of reads, and back in, as Lagging.
func (n *node) writableAway(ro bool) bool {
	if ro {
		n.seenReadOnly.Store(true)
		if n.wentWritable.Swap(false) {
			n.health.SetLagging(false, nil) // a lag verdict, if any, follows at once (observeOn)
		}
		return false
	}
	if !n.seenReadOnly.Load() {
		return false
	}
	if !n.wentWritable.Swap(true) {
		n.health.SetLagging(true, fmt.Errorf("rwpool: replica %s: reports itself writable after read-only: promoted, "+
			"or a primary back on its own history; no reads until it is read-only again", n.cfg.Name))
	}
	return true
}
