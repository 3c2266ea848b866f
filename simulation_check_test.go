package rwpool_test

// The simulation's invariants, checked on every run's history against the
// simulated cluster's ground truth. The cluster checks the ones only a
// server sees (internal/simcluster: no write applied by a server that was
// not the primary when it arrived, no connection used by two callers at
// once or sent a statement while its rows are open, a bounded number of
// rwpool's probes stuck on a hung server); these are the others. Each has
// a name a failure reports and shrinking keeps.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/goleak"

	"github.com/rwpool/rwpool"
	"github.com/rwpool/rwpool/internal/replication"
	"github.com/rwpool/rwpool/internal/simcluster"
	"github.com/rwpool/rwpool/internal/token"
)

// simWriteKinds are the operations whose failure with failover_wait is
// judged: a single write, whatever way it is sent, or a transaction.
// A transaction's statements are never moved to another node (what it
// did before is on its connection), so a refusal inside one is the
// caller's to retry: transactions are not judged.
var simWriteKinds = map[string]bool{
	"write": true, "session-write": true, "write-returning": true, "session-returning": true,
	"prepared": true,
}

// checkRotation: once the faults stop, every node is back in rotation
// (Available, and not Rejoining after a followed promotion) within
// simRotation of the heal, and a write succeeds. It writes a row every
// round until both hold: a replica rejoins after a promotion only once it
// has replayed something the new primary wrote, which a read-only
// workload would never give it.
func (r *simRun) checkRotation(healed time.Duration) {
	end := r.start.Add(healed + simRotation)
	var (
		last  rwpool.Snapshot
		wrote bool
		werr  error
	)
	for {
		snap, err := rwpool.Stats(r.db)
		if err != nil {
			r.violate("rotation", "Stats: %v", err)
			return
		}
		last = snap
		all := true
		for _, n := range snap.Nodes {
			all = all && (n.State == rwpool.Available && !n.Rejoining || r.leadsToPrimary(n))
		}
		if all && wrote {
			return
		}
		if !all || !wrote {
			ids := r.newIDs(1)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			start := r.since()
			_, werr = r.db.ExecContext(ctx, "INSERT INTO t VALUES ("+(&simWorker{r: r}).placeholder()+")", ids[0])
			cancel()
			if werr == nil {
				r.record(&simOp{Kind: "write-after-heal", Write: true, IDs: ids, Start: start, End: r.since()})
				if !wrote {
					r.logf("a write after the heal succeeded")
				}
				wrote = true
			}
		}
		if time.Now().After(end) {
			if !wrote {
				r.violate("rotation", "no write succeeded within %s of the heal: %v", simRotation, werr)
			} else {
				r.violate("rotation", "%s after the heal a node is still out of rotation:\n%s", simRotation, last)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leadsToPrimary reports whether n is a replica node out of reads because
// it reports itself writable (writable.go) and rightly so: its endpoint
// leads to the primary's server, the failover having promoted that one
// behind the primary's endpoint (without follow_promotion). Its reads go
// to the primary node, the same server; it stays out until the server is
// a replica again.
func (r *simRun) leadsToPrimary(n rwpool.NodeStats) bool {
	if r.p.Follow || n.Role != "replica" || n.State != rwpool.Lagging || n.Reports != "writable" {
		return false
	}
	eps := r.cl.EndpointServers(r.nodeEP[n.Name])
	return len(eps) == 1 && eps[0] == r.cl.Primary()
}

// checkClose: after Close, no connection, driver rows or goroutine of the
// run is left.
func (r *simRun) checkClose(leaks goleak.Option) {
	end := time.Now().Add(3 * time.Second)
	for {
		conns, rows := r.cl.OpenConns()
		if conns == 0 && rows == 0 {
			break
		}
		if time.Now().After(end) {
			r.violate("close-leak", "3s after Close %d connections and %d driver rows are still open: %s\n%s", conns, rows, r.cl.OpenDetail(), stacks())
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := goleak.Find(leaks); err != nil {
		msg := err.Error()
		if len(msg) > 3000 {
			msg = msg[:3000] + "…"
		}
		r.violate("goroutine-leak", "after Close: %s", msg)
	}
}

// simWindow is a stretch of the run during which it changed the cluster
// (a fault, its undo, the heal), and whether that may have promoted a
// server.
type simWindow struct {
	start, end time.Duration
	promotes   bool
}

// changing runs change, which changes the cluster, and records when.
func (r *simRun) changing(promotes bool, change func()) {
	start := r.since()
	change()
	r.mu.Lock()
	r.windows = append(r.windows, simWindow{start, r.since(), promotes})
	r.mu.Unlock()
}

// knowable returns when a client could first know that a row abandoned at
// at is lost: not before the change that abandoned it is over (the
// simulation re-points and rewinds the other servers within it), and,
// after a promotion with follow_promotion, not before every database of
// the run has followed it (until then, a replica still holding the old
// history is one more replica of the primary rwpool knows). Without a
// followed promotion to wait for, simDetect after the change.
func (r *simRun) knowable(at time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	known, promoted := at, false
	for _, w := range r.windows {
		if w.start <= at && at <= w.end {
			known, promoted = w.end, w.promotes
			break
		}
	}
	if !promoted || !r.p.Follow {
		return known
	}
	dbs := []string{""}
	if r.db2 != nil {
		dbs = append(dbs, "db2 ")
	}
	for _, db := range dbs {
		i := slices.IndexFunc(r.followed[db], func(t time.Duration) bool { return t >= at })
		if i < 0 {
			return max(known, at+simDetect)
		}
		known = max(known, r.followed[db][i])
	}
	return known
}

// checkHistory checks every operation against the ground truth.
func (r *simRun) checkHistory() {
	cl := r.cl
	final := cl.Primary()
	rows := cl.Rows(final)
	lostBy := func(id int64, t time.Duration) bool {
		at, ok := cl.Lost(id)
		return ok && at <= t
	}
	for _, op := range r.ops {
		r.count(op)
		took := op.End - op.Start
		if op.Deadline > 0 && took > op.Deadline+simDeadlineSlack {
			r.violate("deadline", "took %s, deadline %s + %s: %s", took, op.Deadline, simDeadlineSlack, op)
		}
		if op.Write {
			r.checkWrite(op, rows, lostBy)
		}
		if op.Read && op.Must == "token-read" && errors.Is(op.Err, rwpool.ErrInvalidToken) {
			r.violate("token-read", "a read resumed from a token of this very cluster failed as if it were another's: %s", op)
		}
		// ErrClosed counts here: benignEnd forgives it for the Close at
		// the end, but a pool closed under a read is what a replica
		// leaving must never cause.
		if op.Read && op.Err != nil && r.onlyMembershipFaults() && !errors.Is(op.Err, context.DeadlineExceeded) &&
			!errors.Is(op.Err, context.Canceled) && !errors.Is(op.Err, rwpool.ErrTooStale) {
			r.violate("membership-read", "a read failed while the only faults were of the discover source (replicas leaving and joining, the source down): %s", op)
		}
		if !op.Read || op.Err != nil {
			// An error is no success: a read refused with ErrTooStale
			// (causal_fallback=error) found nothing, and is not judged.
			continue
		}
		if op.Found {
			if cl.Truth(op.ReadID) == nil {
				r.violate("phantom-read", "found a row no server applied: %s", op)
			} else if at, ok := cl.Lost(op.ReadID); ok && r.knowable(at) < op.Start {
				r.violate("abandoned-read", "found a row a failover at %.3fs had abandoned (knowable from %.3fs): %s",
					at.Seconds(), r.knowable(at).Seconds(), op)
			}
			continue
		}
		if lostBy(op.ReadID, op.End) {
			continue
		}
		switch {
		case op.Session:
			r.violate("session-read", "a session read missed the session's own write (on the primary: %v): %s", rows[op.ReadID] != 0, op)
		case op.Must == "token-read" && cl.Truth(op.ReadID) != nil:
			covers, at := r.tokenCovers(op.Token, op.ReadID)
			switch {
			case covers:
				r.violate("token-read", "a read resumed from a token that covers row %d (committed at %s) missed it (on the primary: %v): %s",
					op.ReadID, at, rows[op.ReadID] != 0, op)
			default:
				// SessionToken leaves nothing out: what it cannot learn
				// the position of (the primary unreachable, the DB
				// closing) it hands on as a pending write, which the
				// resumed session's first read resolves at its primary.
				r.violate("token-read", "a read resumed from a token missed row %d, which the token leaves out (committed at %s; token %s): %s",
					op.ReadID, at, r.tokenPosition(op.Token), op)
			}
		case op.Must == "staleness" && op.Acked >= op.Start-op.Bound:
			panic(fmt.Sprintf("simulation: a bounded read judged on a row acknowledged after its bound's moment: %s", op))
		case op.Must == "staleness":
			r.violate("staleness", "a read with max staleness %s missed row %d (on the primary: %v): %s", op.Bound, op.ReadID, rows[op.ReadID] != 0, op)
		}
	}
	r.checkMonotonic(rows, lostBy)
}

// simCounted are the counts the exploration sums up (checkHistory): how
// much the issue #22 invariants judged.
var simCounted = []string{
	"token reads judged", "bounded reads judged",
	"monotonic reads", "reads failed ErrTooStale",
}

// count counts what op gives the issue #22 invariants to judge.
func (r *simRun) count(op *simOp) {
	if !op.Read {
		return
	}
	switch {
	case errors.Is(op.Err, rwpool.ErrTooStale):
		r.counts["reads failed ErrTooStale"]++
	case op.Err != nil:
	case op.Must == "token-read":
		r.counts["token reads judged"]++
	case op.Must == "staleness":
		r.counts["bounded reads judged"]++
	}
	if op.Mono != 0 && op.Err == nil {
		r.counts["monotonic reads"]++
	}
}

// checkMonotonic: once a read of a session found row X, no later read of
// the session misses X, or any row committed before X (on the history
// that holds X, every server that has X has it): a session never reads an
// older state than it read before. Rows are never deleted; a row a
// failover lost by the later read's end is not judged.
func (r *simRun) checkMonotonic(rows map[int64]int, lostBy func(int64, time.Duration) bool) {
	found := map[int64][]*simOp{} // per session, the reads that found their row, in order
	for _, op := range r.ops {
		if op.Mono == 0 || !op.Read || op.Err != nil {
			continue
		}
		if op.Found {
			found[op.Mono] = append(found[op.Mono], op)
			continue
		}
		y := op.ReadID
		if lostBy(y, op.End) {
			continue
		}
		for _, f := range found[op.Mono] {
			x := f.ReadID
			if lostBy(x, op.End) {
				continue
			}
			if x == y || rows[y] > 0 && rows[x] > 0 && rows[y] <= rows[x] {
				r.violate("monotonic", "a session read missed row %d (transaction %d on the primary's history), though an earlier read of the session found row %d (transaction %d) [%s]: %s",
					y, rows[y], x, rows[x], f, op)
				break
			}
		}
	}
}

// tokenCovers reports whether session token tok's position covers row
// id's commit, and where that was.
func (r *simRun) tokenCovers(tok string, id int64) (bool, string) {
	w := r.cl.Truth(id)
	if w == nil {
		return false, "nowhere"
	}
	t, err := token.Decode(tok)
	if err != nil {
		return false, w.At
	}
	var at replication.Position
	if r.p.Flavor == simcluster.MariaDB {
		at, err = replication.ParseMariaDBGTID(w.At)
	} else {
		at, err = replication.ParseLSN(w.At)
	}
	// A pending token covers every row its session wrote or found: its
	// resumed session asks the primary first.
	return err == nil && (t.Pending || t.Pos.Covers(at)), w.At
}

// tokenPosition is token tok's position, for a report.
func (r *simRun) tokenPosition(tok string) string {
	if tok == "" {
		return "none"
	}
	t, err := token.Decode(tok)
	if err != nil {
		return err.Error()
	}
	if t.Pending {
		return t.Pos.String() + " and a pending write"
	}
	return t.Pos.String()
}

func (r *simRun) checkWrite(op *simOp, rows map[int64]int, lostBy func(int64, time.Duration) bool) {
	cl := r.cl
	applied := 0
	for _, id := range op.IDs {
		w := cl.Truth(id)
		if w == nil {
			continue
		}
		applied++
		if w.Applied > 1 && (op.Err == nil || !mayHaveApplied(op.Err)) {
			r.violate("applied-twice", "row %d applied %d times (on %v) but the caller was not told it may have been applied: %s", id, w.Applied, w.On, op)
		}
	}
	if op.Err == nil {
		tx := -2
		for _, id := range op.IDs {
			if lostBy(id, time.Duration(1<<62)) {
				continue
			}
			switch got := rows[id]; {
			case got == 0:
				r.violate("acked-lost", "row %d acknowledged but not on the primary's history: %s", id, op)
			case tx != -2 && got != tx:
				r.violate("partial-tx", "row %d committed apart from the rest of its transaction: %s", id, op)
			default:
				tx = got
			}
		}
		return
	}
	if r.p.Wait == 0 || !simWriteKinds[op.Kind] || applied > 0 || mayHaveApplied(op.Err) || benignEnd(op) {
		return
	}
	took := op.End - op.Start
	if took < r.p.Wait-50*time.Millisecond && op.Primary {
		r.violate("gave-up-early", "a write nothing applied failed after %s of failover_wait=%s while a writable primary existed: %s", took, r.p.Wait, op)
	}
	if op.Deadline == 0 && took > r.p.Wait+simProbeTimeout+simDeadlineSlack {
		r.violate("wait-too-long", "a write waited %s, failover_wait=%s: %s", took, r.p.Wait, op)
	}
}

// mayHaveApplied: the caller was told its write may have been applied.
func mayHaveApplied(err error) bool { return strings.Contains(err.Error(), "may have been applied") }

// benignEnd: the operation ended for a reason of the caller's: its
// deadline, or the database's Close.
func benignEnd(op *simOp) bool {
	err := op.Err
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, rwpool.ErrClosed) ||
		strings.Contains(err.Error(), "database is closed") {
		return true
	}
	return op.Deadline > 0 && op.End-op.Start >= op.Deadline-50*time.Millisecond
}

// onlyMembershipFaults reports whether the run's replicas come from a
// discover source and its only faults are of that source: replicas that
// leave it and come back, the source failing. Every server then answers,
// so no read may fail (issue 23: replicas added and removed under load
// with 0 failed reads).
func (r *simRun) onlyMembershipFaults() bool {
	if !r.p.Discover || r.p.CloseMid {
		return false
	}
	for _, f := range r.p.Faults {
		if !slices.Contains(simDiscoveryFaults, f.Kind) {
			return false
		}
	}
	return true
}
