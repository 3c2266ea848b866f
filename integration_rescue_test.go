package rwpool_test

import (
	"fmt"
	"strings"
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
		warmUp(t, cl, seen)

		hang := time.Now()
		cl.fault(t, "hang-node", r1)
		hung := time.Now()
		var oldest time.Duration
		poll(6*time.Second, func() bool {
			oldest = maxDur(oldest, l.oldestInflight())
			return false
		})
		resume := time.Now()
		stuck := l.stuck(longest)
		cl.fault(t, "resume-node", r1)
		res := l.stop()

		var zero time.Time
		t.Logf("%s: whole run: %s", cl.Name, res.summary(zero, zero))
		t.Logf("%s: hang..hang+3s: %s", cl.Name, res.summary(hung, hung.Add(3*time.Second)))
		t.Logf("%s: hang+3s..resume: %s", cl.Name, res.summary(hung.Add(3*time.Second), resume))
		t.Logf("%s: longest in flight while hung %s; stats at stop:\n%s", cl.Name, oldest.Round(time.Millisecond), res.stats)
		if errs := res.failures(zero, zero); len(errs) > 0 {
			t.Errorf("%d reads failed, want 0: %s", len(errs), errSummary(errs, 3))
		}
		if stuck > 0 {
			t.Errorf("%d reads were still running after more than %s when the node was resumed", stuck, longest)
		}
		if m := maxDur(res.max(zero, zero), oldest); m > longest {
			var slow []string
			for _, c := range res.calls {
				if c.dur > longest && len(slow) < 8 {
					slow = append(slow, fmt.Sprintf("\n    %s at hang%+.2fs: %v", c.dur.Round(time.Millisecond), c.start.Sub(hang).Seconds(), c.err))
				}
			}
			t.Errorf("slowest read took %s, want at most %s; reads over it:%s", m.Round(time.Millisecond), longest, strings.Join(slow, ""))
		}
		fastWindow(t, "from 3s after the hang to the resume", res, hung.Add(3*time.Second), resume)
	})
}
