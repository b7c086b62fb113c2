//go:build race

package fleet

// raceOn reports whether the race detector is on (it makes sync.Pool drop
// some of what is put back, so pooled objects are allocated again).
const raceOn = true
