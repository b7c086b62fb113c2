package lisp

import "sync/atomic"

// Reading a field of a host record. A program that scans records reads
// the same few fields of maps built the same way, so a keyword keeps an
// inline cache of where its name sat in the last record it read
// (Keyword.slot), much as it keeps the shape of the last interpreter map
// (Keyword.cache). Go offers no such read, so readField looks inside the
// runtime's map where it knows the layout (field_swiss.go: a map of up to
// eight entries is one group of slots read by index) and otherwise reads
// the map as any Go code does (field_plain.go). The cache is a hint: the
// slot's key is compared with the name on every read, and a miss falls
// back to the map read.

// fieldHint is an inline cache: the slot index the name was last found at.
type fieldHint = atomic.Uint32

// readField returns src[name], nil when absent, reading the slot hint
// names first (hint may be nil).
func readField(src map[string]any, name string, hint *fieldHint) any {
	if hint != nil && slotReads {
		if x, ok := readSlot(src, name, hint); ok {
			return x
		}
	}
	return src[name]
}

// lookupField is readField that also reports whether name is present.
func lookupField(src map[string]any, name string, hint *fieldHint) (any, bool) {
	if hint != nil && slotReads {
		if x, ok := readSlot(src, name, hint); ok {
			return x, true
		}
	}
	x, ok := src[name]
	return x, ok
}
