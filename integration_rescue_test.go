package rwpool_test

import (
	"testing"
	"time"
)

// TestFaultHangReplicaRescue is issue #16's first target, with the default
// DSN: replica1 hangs (SIGSTOP) under 8 readers whose reads carry 5 s
// deadlines. The reads in flight on it are rescued (cancelled and
// replayed elsewhere) once a read running past probe_timeout has had the
// node probed and found hung: no read fails, none takes more than 2.5 s,
// and from 3 s after the hang the p99 is under 100 ms.
func TestFaultHangReplicaRescue(t *testing.T) {
	const (
		deadline = 5 * time.Second
		longest  = 2500 * time.Millisecond
	)
	forEachCluster(t, func(t *testing.T, cl *cluster) {
		db := cl.open(t, faultDSN)
		r1 := cl.Replicas[0]
		seen := newSightings()
		l := startLoadTimeout(t, db, 8, deadline, cl.readFn(db, seen))
		warmUp(t, cl, db, seen)

		w := cl.hangNode(t, l, r1, 6*time.Second, longest)
		res := l.stop()

		var zero time.Time
		t.Logf("%s: whole run: %s", cl.Name, res.summary(zero, zero))
		t.Logf("%s: hang..hang+3s: %s", cl.Name, res.summary(w.hung, w.hung.Add(3*time.Second)))
		t.Logf("%s: hang+3s..resume: %s", cl.Name, res.summary(w.hung.Add(3*time.Second), w.resume))
		t.Logf("%s: longest in flight while hung %s; stats at stop:\n%s", cl.Name, w.oldest.Round(time.Millisecond), res.stats)
		if errs := res.failures(zero, zero); len(errs) > 0 {
			t.Errorf("%d reads failed, want 0: %s", len(errs), errSummary(errs, 3))
		}
		noCallOver(t, res, w, longest)
		fastWindow(t, "from 3s after the hang to the resume", res, w.hung.Add(3*time.Second), w.resume)
	})
}
