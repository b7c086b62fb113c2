package signature

import (
	"strings"
	"testing"
)

// TestValidateValidAllocations: checking a valid value, nested maps and
// lists included, allocates nothing (the path is held in the checker on
// the caller's stack).
func TestValidateValidAllocations(t *testing.T) {
	typ := mustType(t, "{customer {id :int, name :string, tags [:string], address {city :string}}, n :int}")
	v := map[string]any{
		"customer": map[string]any{"id": int64(1), "name": "Ada", "tags": []any{"a", "b"},
			"address": map[string]any{"city": "Paris"}},
		"n": int64(2),
	}
	if err := Validate(typ, v, Strict); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Validate(typ, v, Strict) }); n != 0 {
		t.Errorf("%.0f allocations validating a valid value, want 0", n)
	}
}

// A problem deeper than the segments the checker holds itself is named by
// its whole path.
func TestValidateDeepPath(t *testing.T) {
	const depth = 20
	src, v := ":int", any("x")
	for range depth {
		src = "{a " + src + "}"
		v = map[string]any{"a": v}
	}
	typ := mustType(t, "[["+src+"]]")
	err := Validate(typ, []any{[]any{v, v}}, Strict)
	for _, at := range []string{"[0][0]", "[0][1]"} {
		if want := at + strings.Repeat(".a", depth) + ": expected integer"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want one at %s", err, want)
		}
	}
	// and the checker is left at the top: a second problem after it is
	// named from the root
	typ = mustType(t, "{deep "+src+", b :int}")
	err = Validate(typ, map[string]any{"deep": v, "b": "y"}, Strict)
	if err == nil || !strings.Contains(err.Error(), "deep"+strings.Repeat(".a", depth)+": ") || !strings.Contains(err.Error(), "b: ") {
		t.Fatalf("error %v, want one at deep%s and one at b", err, strings.Repeat(".a", depth))
	}
}
