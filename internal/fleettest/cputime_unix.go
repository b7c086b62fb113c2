//go:build unix

package fleettest

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user + system) this process used so
// far: with the server, the workers and the client all in process, the
// CPU a benchmark's missions cost, however busy the rest of the machine
// is. ok is false where it cannot be read.
func ProcessCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
