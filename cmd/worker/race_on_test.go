//go:build race

package main

// raceBuild: the race detector multiplies resident memory (shadow
// memory), so memory tests bound RSS more loosely.
const raceBuild = true
