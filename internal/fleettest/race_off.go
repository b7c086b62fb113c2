//go:build !race

package fleettest

// Race reports whether the race detector is on. It multiplies resident
// memory (shadow memory) and slows encoding and decoding many times, so
// tests of large data and of memory use less of one and bound the other
// more loosely.
const Race = false
