package lisp

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// unseededHashInt is the integer hash without a key (murmur3's fmix64
// folded to 32 bits), kept here to build keys that all collide under it.
func unseededHashInt(n int64) uint32 {
	x := uint64(n)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return uint32(x)
}

// collidingInts returns n distinct integers that unseededHashInt maps to
// one hash: fmix64 is a bijection, so each is the preimage of a 64-bit
// value whose low 32 bits are fixed.
func collidingInts(n int) []int64 {
	const inv = 0x4f74430c22a54005 // the inverse of 0xff51afd7ed558ccd mod 2^64
	out := make([]int64, 0, n)
	for i := uint64(1); len(out) < n; i++ {
		y := i<<32 | 0x5eed
		y ^= y >> 33
		y *= inv
		y ^= y >> 33
		out = append(out, int64(y))
	}
	return out
}

// collidingFloats returns n distinct non-integral finite floats whose bits
// collide under unseededHashInt (a non-integral float hashes its bits).
func collidingFloats(n int) []float64 {
	var out []float64
	for _, k := range collidingInts(4 * n) {
		f := math.Float64frombits(uint64(k))
		if !math.IsNaN(f) && !math.IsInf(f, 0) && f != math.Trunc(f) {
			out = append(out, f)
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// maxLeaf returns the largest number of entries that share one full hash
// in m's trie: what a lookup or insert compares one by one.
func maxLeaf(m *core.Map) int {
	m = m.Form()
	var walk func(n *core.Hnode) int
	walk = func(n *core.Hnode) int {
		most := 0
		for _, s := range n.Slots {
			if s.Child != nil {
				most = max(most, walk(s.Child))
			} else {
				most = max(most, len(s.Leaf.Ents))
			}
		}
		return most
	}
	if m.Root == nil {
		return m.Len()
	}
	return walk(m.Root)
}

// TestHashFloodingSeeded builds sets and maps from 20,000 keys that all
// share one hash under the unseeded integer hash (integers, floats and
// vectors of them): with the keyed hash no more than a few keys share a
// hash, so each insert compares a bounded number of entries instead of
// walking a list of thousands.
func TestHashFloodingSeeded(t *testing.T) {
	const n = 20_000
	ints := collidingInts(n)
	for _, k := range ints[1:] {
		if unseededHashInt(k) != unseededHashInt(ints[0]) {
			t.Fatalf("keys do not collide under the unseeded hash")
		}
	}
	floats := collidingFloats(n)
	if len(floats) < n/2 {
		t.Fatalf("only %d colliding floats", len(floats))
	}
	intsAny := make([]any, len(ints))
	for i, k := range ints {
		intsAny[i] = k
	}
	floatsAny := make([]any, len(floats))
	for i, f := range floats {
		floatsAny[i] = f
	}
	cases := []struct {
		name, src string
		keys      []any
	}{
		{"int set", `(set ctx/ks)`, intsAny},
		{"int into set", `(into #{} ctx/ks)`, intsAny},
		{"int map", `(zipmap ctx/ks ctx/ks)`, intsAny},
		{"int reduce assoc", `(reduce #(assoc %1 %2 1) {} ctx/ks)`, intsAny},
		{"float set", `(set ctx/ks)`, floatsAny},
		{"vector set", `(set (map vector ctx/ks))`, intsAny},
		{"pair set", `(set (map (fn [k] [k :x]) ctx/ks))`, intsAny},
		{"frequencies", `(frequencies ctx/ks)`, intsAny},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Exec(context.Background(), c.src, Options{Context: map[string]any{"ks": c.keys}, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			var m *core.Map
			switch v := res.Value.(type) {
			case *core.Set:
				m = v.M
			case *core.Map:
				m = v
			default:
				t.Fatalf("got %T", res.Value)
			}
			if m.Len() != len(c.keys) {
				t.Fatalf("%d entries, want %d", m.Len(), len(c.keys))
			}
			// 20,000 random 32-bit hashes: a shared hash is rare (about
			// n²/2³³ ≈ 0.05 pairs), three on one hash practically never
			if most := maxLeaf(m); most > 2 {
				t.Fatalf("%d keys share one hash", most)
			}
		})
	}
}

// TestHashOrderIndependent checks that maps and sets iterate and print in
// key order whatever the hash keys: the same entries inserted in two
// orders print the same, sorted.
func TestHashOrderIndependent(t *testing.T) {
	src := `[(pr-str (set [5 3 9 1 -4 2.5 "b" "a" :k :c])) (pr-str (into {} (map vector (range 20 0 -1) (range 20))))]`
	res, err := Exec(context.Background(), src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `["#{-4 1 2.5 3 5 9 :c :k \"a\" \"b\"}" "{1 19 2 18 3 17 4 16 5 15 6 14 7 13 8 12 9 11 10 10 11 9 12 8 13 7 14 6 15 5 16 4 17 3 18 2 19 1 20 0}"]`
	if got := core.PrStr(res.Value); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
