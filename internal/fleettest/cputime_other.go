//go:build !unix

package fleettest

import "time"

// ProcessCPU is not available here: ok is false.
func ProcessCPU() (d time.Duration, ok bool) { return 0, false }
