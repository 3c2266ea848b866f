//go:build unix

package rwpool

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used.
// On a machine shared with other jobs it is a steadier measure of a
// benchmark's work than wall time, which also counts waiting for a core.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
