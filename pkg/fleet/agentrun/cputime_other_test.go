//go:build !unix

package agentrun_test

import "time"

// processCPU is not available here: ok is false.
func processCPU() (d time.Duration, ok bool) { return 0, false }
