package core

import (
	"encoding/json"
	"testing"
)

// FromGo converts a scalar as a converter does, without making a shape
// cache or an intern table for it: a small integer costs nothing, a
// string its box alone.
func TestFromGoScalars(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want Value
	}{
		{nil, nil}, {true, true}, {"ab", "ab"}, {int64(7), Int(7)}, {int(-3), Int(-3)}, {uint8(200), Int(200)},
		{uint64(1 << 63), float64(1 << 63)}, {2.5, 2.5}, {float32(0.5), 0.5},
		{json.Number("12"), Int(12)}, {json.Number("1.5"), 1.5},
	} {
		got, err := FromGo(tc.in)
		if err != nil || !Equal(got, tc.want) {
			t.Errorf("FromGo(%#v) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
		var cv Converter
		cv.Shapes, cv.Intern = &ShapeCache{}, true
		if conv, err := cv.From(tc.in); err != nil || !Equal(got, conv) {
			t.Errorf("FromGo(%#v) = %#v, a converter %#v, %v", tc.in, got, conv, err)
		}
	}
	if _, err := FromGo(json.Number("x")); err == nil {
		t.Error("FromGo of a bad json.Number: no error")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = FromGo(int64(7)) }); n != 0 {
		t.Errorf("FromGo of a small integer: %.0f allocations, want 0", n)
	}
	s := any("a string")
	if n := testing.AllocsPerRun(100, func() { _, _ = FromGo(s) }); n > 1 {
		t.Errorf("FromGo of a string: %.0f allocations, want at most 1", n)
	}
}
