//go:build ptc_swissmaps && !go1.27

package core

import (
	"strings"
	"testing"
)

// TestSlotReadsOn checks that field reads use the slot cache on the Go
// release the module builds with, when built with ptc_swissmaps: if a runtime change breaks the layout
// check, this fails instead of the fast path silently turning off.
func TestSlotReadsOn(t *testing.T) {
	if !slotReads {
		t.Fatal("the map layout check failed: host record fields are read without the slot cache")
	}
}

// TestScanPrefetchEdges walks host vectors of every length up to a few
// prefetch distances, holding nil, empty, small and large records, as a
// scan does: each item read (which asks for records ahead) gives the
// record at its index.
func TestScanPrefetchEdges(t *testing.T) {
	big := map[string]any{}
	for i := range 20 {
		big[strings.Repeat("k", i+1)] = i
	}
	kinds := []map[string]any{nil, {}, {"a": 1}, big}
	for n := range 3*prefetchAhead + 2 {
		recs := make([]map[string]any, n)
		for i := range recs {
			recs[i] = kinds[(i*7+n)%len(kinds)]
		}
		items := ItemsOf{Recs: recs}
		for i := range items.Len() {
			want := recordAt(&recs[i])
			if got := items.At(i); got != want {
				t.Fatalf("n=%d: item %d is %v, want %v", n, i, got, want)
			}
		}
	}
}
