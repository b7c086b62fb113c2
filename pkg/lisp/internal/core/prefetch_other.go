//go:build ptc_swissmaps && !go1.27 && !amd64

package core

import "unsafe"

// prefetchLines does nothing where the package has no prefetch
// instruction to use.
func prefetchLines(line, group unsafe.Pointer) {}
