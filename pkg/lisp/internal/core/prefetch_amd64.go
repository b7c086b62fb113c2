//go:build ptc_swissmaps && !go1.27

package core

import "unsafe"

// prefetchLines is in prefetch_amd64.s.
//
//go:noescape
func prefetchLines(line, group unsafe.Pointer)
