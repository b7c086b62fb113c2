package lisp

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// TestReadFieldAgrees reads random maps (small and large, after inserts
// and deletes, with shared and stale hints) and compares every read,
// present or absent, with the runtime's own.
func TestReadFieldAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"", "a", "b", "id", "qty", "name", "price", "active", "category", "user", "text", "x-y", "日本", strings.Repeat("k", 70), strings.Repeat("k", 69) + "j"}
	hints := make([]core.FieldHint, len(names))
	for round := range 3000 {
		n := rng.IntN(14)
		m := make(map[string]any, rng.IntN(10))
		for range n {
			k := names[rng.IntN(len(names))]
			if round%2 == 1 {
				k = strings.Clone(k) // keys of their own, as encoding/json makes them
			}
			m[k] = k + "=" + string(rune('0'+round%10))
		}
		for range rng.IntN(3) {
			delete(m, names[rng.IntN(len(names))])
		}
		if rng.IntN(4) == 0 {
			m[names[rng.IntN(len(names))]] = nil // a present nil
		}
		for range 3 {
			for i, k := range names {
				want, in := m[k]
				if got := core.ReadField(m, k, &hints[i]); got != want {
					t.Fatalf("readField(%v, %q) = %v, want %v", m, k, got, want)
				}
				got, ok := core.LookupField(m, k, &hints[i])
				if ok != in || got != want {
					t.Fatalf("lookupField(%v, %q) = %v, %v, want %v, %v", m, k, got, ok, want, in)
				}
				// a copy of the name (other string data) reads the same
				if got := core.ReadField(m, strings.Clone(k), &hints[i]); got != want {
					t.Fatalf("readField(%v, clone %q) = %v, want %v", m, k, got, want)
				}
			}
		}
	}
	var nilMap map[string]any
	if got, ok := core.LookupField(nilMap, "a", &hints[0]); got != nil || ok {
		t.Fatalf("nil map: %v, %v", got, ok)
	}
}

// FuzzReadField builds a map from the input's keys and checks every read
// against the runtime's.
func FuzzReadField(f *testing.F) {
	f.Add("id,qty,price", "qty")
	f.Add("a,b,c,d,e,f,g,h,i", "i")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, keys, probe string) {
		parts := strings.Split(keys, ",")
		if len(parts) > 64 {
			parts = parts[:64]
		}
		m := make(map[string]any, len(parts))
		for i, k := range parts {
			m[k] = i
		}
		hints := map[string]*core.FieldHint{} // a hint serves one name
		for _, k := range append(parts, probe, probe) {
			if hints[k] == nil {
				hints[k] = new(core.FieldHint)
			}
			want, in := m[k]
			got, ok := core.LookupField(m, k, hints[k])
			if ok != in || got != want {
				t.Fatalf("lookupField(%q) = %v, %v, want %v, %v", k, got, ok, want, in)
			}
		}
	})
}
