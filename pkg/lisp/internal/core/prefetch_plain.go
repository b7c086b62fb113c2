//go:build !ptc_swissmaps || go1.27

package core

// The default build asks for nothing ahead of time (prefetch.go is the
// build that prefetches, with the tag ptc_swissmaps).

// prefetch does nothing: see prefetch.go for the build that prefetches.
func (s ItemsOf) prefetch(int) {}
