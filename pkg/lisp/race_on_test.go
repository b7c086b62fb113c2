//go:build race

package lisp

// raceBuild: the race detector multiplies resident memory (shadow
// memory), so memory tests measure the Go heap instead of RSS.
const raceBuild = true
