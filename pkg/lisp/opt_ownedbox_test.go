package lisp

import (
	"context"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// TestOwnedWalkBoxesOnce checks that a walk over a vector whose recur is
// the advance plus one owned update keeps the accumulator unboxed: the
// allocations of a run do not grow with the number of items, although
// every partial sum is far outside the small-int cache, and the result is
// the sum.
func TestOwnedWalkBoxesOnce(t *testing.T) {
	const src = `(loop [xs ctx/xs acc 1000000000000] (if (empty? xs) acc (recur (rest xs) (+ acc (first xs)))))`
	if n := soleWalks(t, src); n != 1 {
		t.Fatalf("%d sole walks, want 1", n)
	}
	allocs := func(n int) (float64, core.Value) {
		xs := make([]any, n)
		want := int64(1_000_000_000_000)
		for i := range xs {
			xs[i] = int64(5000 + i)
			want += int64(5000 + i)
		}
		opts := Options{Context: map[string]any{"xs": xs}, MaxSteps: -1}
		var got core.Value
		a := testing.AllocsPerRun(5, func() {
			res, err := Exec(context.Background(), src, opts)
			if err != nil {
				t.Fatal(err)
			}
			got = res.Value
		})
		if got != core.Value(want) {
			t.Fatalf("%d items: sum %v, want %d", n, got, want)
		}
		return a, got
	}
	small, _ := allocs(100)
	big, _ := allocs(20_000)
	if big-small > 20 {
		t.Errorf("%.0f allocations over 100 items, %.0f over 20000: the accumulator is boxed per item", small, big)
	}
}
