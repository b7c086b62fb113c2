//go:build !race

package agentrun_test

// raceBuild: the race detector slows encoding and decoding many times, so
// tests of large data use less of it.
const raceBuild = false
