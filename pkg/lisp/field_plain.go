//go:build go1.27

package lisp

// On a Go release whose map layout field_swiss.go has not been checked
// against, every field read is a plain map read.

const slotReads = false

func slotHit(map[string]any, string, *fieldHint) (any, bool) { return nil, false }

func slotScan(map[string]any, string, *fieldHint) (any, bool, bool) { return nil, false, false }
