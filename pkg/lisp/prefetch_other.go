//go:build !amd64

package lisp

import "unsafe"

// prefetchLines does nothing where the package has no prefetch
// instruction to use.
func prefetchLines(line, group unsafe.Pointer) {}
