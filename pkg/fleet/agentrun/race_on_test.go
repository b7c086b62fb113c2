//go:build race

package agentrun_test

// raceEnabled reports whether the race detector is on.
const raceEnabled = true
