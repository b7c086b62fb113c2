//go:build go1.27 || ptc_plainmaps

package lisp

import "unsafe"

// On a Go release whose map layout field_swiss.go has not been checked
// against (or with the build tag ptc_plainmaps, which CI uses to test this
// path), every field read is a plain map read.

const slotReads = false

func slotHit(map[string]any, string, *fieldHint) (any, bool) { return nil, false }

func slotScan(map[string]any, string, *fieldHint) (any, bool, bool) { return nil, false, false }

func recordGroup(map[string]any) unsafe.Pointer { return nil }
