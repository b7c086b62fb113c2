//go:build !go1.27 && !ptc_plainmaps

package lisp

import "testing"

// TestSlotReadsOn checks that field reads use the slot cache on the Go
// release the module builds with: if a runtime change breaks the layout
// check, this fails instead of the fast path silently turning off.
func TestSlotReadsOn(t *testing.T) {
	if !slotReads {
		t.Fatal("the map layout check failed: host record fields are read without the slot cache")
	}
}
