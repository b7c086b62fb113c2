package core

import "testing"

// TestEqualAllocatesNothing checks that equality and hashing of maps,
// sets, host records and vectors holding them allocate nothing. Equality
// reads maps and records through interfaces (mapReader, fieldViewer); its
// comparison state must still stay on the stack, since Equal runs for
// every key a map lookup compares that is not a keyword or a string.
func TestEqualAllocatesNothing(t *testing.T) {
	newMap := func() *Map {
		b := NewMapBuilder(4)
		for i, k := range []string{"a", "b", "c", "d", "e"} {
			b.Set(NewKeyword(k), int64(i))
		}
		b.Set(NewVector([]Value{int64(1), "x"}), "vector key")
		return b.Build()
	}
	newSet := func() *Set {
		s := EmptySet
		for i := int64(0); i < 5; i++ {
			s = s.Conj(i)
		}
		return s.Conj(NewVector([]Value{int64(2)}))
	}
	newRecord := func() Value {
		return recordOf(map[string]any{"id": int64(7), "name": "x", "score": 2.5, "ok": true})
	}
	m1, m2 := newMap(), newMap()
	s1, s2 := newSet(), newSet()
	r1, r2 := newRecord(), newRecord()
	cases := []struct {
		name string
		a, b Value
	}{
		{"maps", m1, m2},
		{"sets", s1, s2},
		{"host records of scalars", r1, r2},
		{"vectors of maps and sets", NewVector([]Value{m1, s1}), NewVector([]Value{m2, s2})},
	}
	for _, c := range cases {
		if !Equal(c.a, c.b) || HashValue(c.a) != HashValue(c.b) {
			t.Fatalf("%s: not equal, or hashed apart", c.name)
		}
		if n := testing.AllocsPerRun(50, func() {
			Equal(c.a, c.b)
			HashValue(c.a)
		}); n != 0 {
			t.Errorf("%s: Equal and HashValue allocate %v times a call, want 0", c.name, n)
		}
	}
}
