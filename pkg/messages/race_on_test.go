//go:build race

package messages

// raceBuild: the race detector's sync.Pool drops some of its puts, so
// allocation bounds of pooled paths allow for it.
const raceBuild = true
