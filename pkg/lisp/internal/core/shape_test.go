package core

import "testing"

// TestFindKeyExactThenFlex checks a small shape's lookup of a string key:
// the string key itself wherever it sits, else the first keyword of that
// name, else -1.
func TestFindKeyExactThenFlex(t *testing.T) {
	a, b := &Keyword{Name: "a"}, &Keyword{Name: "b"}
	for _, c := range []struct {
		keys []Value
		key  string
		want int
	}{
		{[]Value{a, "a"}, "a", 1},
		{[]Value{"a", a}, "a", 0},
		{[]Value{b, a, a}, "a", 1},
		{[]Value{"b", a, "a"}, "a", 2},
		{[]Value{"ab", "ba", "aa"}, "aa", 2},
		{[]Value{"", a}, "", 0},
		{[]Value{a, b}, "c", -1},
		{[]Value{int64(1), "x", nil}, "x", 1},
		{nil, "a", -1},
	} {
		if got := findKey(c.keys, c.key); got != c.want {
			t.Errorf("findKey(%v, %q) = %d, want %d", c.keys, c.key, got, c.want)
		}
	}
}
