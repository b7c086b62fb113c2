//go:build go1.27

package lisp

// On a Go release whose map layout readSlot has not been checked against,
// every field read is a plain map read.

const slotReads = false

func readSlot(map[string]any, string, *fieldHint) (any, bool) { return nil, false }
