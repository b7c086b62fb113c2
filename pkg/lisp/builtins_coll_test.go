package lisp

import (
	"math"
	"testing"
)

// TestValueSet checks the dedup set used by distinct, frequencies and
// group-by: = semantics (1 and 1.0 are one member, NaN is never equal),
// keywords and strings distinct, first occurrence kept.
func TestValueSet(t *testing.T) {
	kw := NewKeyword("a")
	big := float64(1 << 62)
	tests := []struct {
		name string
		in   []Value
		want int // distinct members
	}{
		{"ints", []Value{int64(1), int64(2), int64(1)}, 2},
		{"int and integral float", []Value{int64(1), 1.0, math.Copysign(0, -1), int64(0)}, 2},
		{"fractions", []Value{1.5, 1.5, int64(1)}, 2},
		{"nan", []Value{math.NaN(), math.NaN()}, 2},
		{"huge float", []Value{big, int64(1 << 62), 1e300, 1e300}, 2},
		{"keyword vs string", []Value{kw, "a", NewKeyword("a")}, 2},
		{"vectors", []Value{NewVector([]Value{int64(1)}), NewVector([]Value{1.0}), NewVector(nil)}, 2},
		{"nil and false", []Value{nil, false, nil, false}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s valueSet
			for _, v := range tt.in {
				s.add(v)
			}
			if len(s.vals) != tt.want {
				t.Fatalf("got %d members %v, want %d", len(s.vals), s.vals, tt.want)
			}
			if first := tt.in[0]; !isNaN(first) && !Equal(s.vals[0], first) {
				t.Fatalf("first member %v, want the first occurrence %v", s.vals[0], tt.in[0])
			}
			for _, v := range tt.in {
				i := s.index(v, hashValue(v))
				if isNaN(v) {
					if i >= 0 {
						t.Fatalf("NaN found at %d", i)
					}
					continue
				}
				if i < 0 || !Equal(s.vals[i], v) {
					t.Fatalf("index(%v) = %d", v, i)
				}
			}
		})
	}
}

func TestFlexClash(t *testing.T) {
	many := make([]Value, 0, 40)
	for i := 0; i < 30; i++ {
		many = append(many, int64(i))
	}
	tests := []struct {
		name string
		keys []Value
		want bool
	}{
		{"none", []Value{NewKeyword("a"), "b", int64(1)}, false},
		{"small clash", []Value{NewKeyword("a"), "a"}, true},
		{"large clash", append(append([]Value(nil), many...), NewKeyword("x"), "x"), true},
		{"large none", append(append([]Value(nil), many...), NewKeyword("x"), "y"), false},
	}
	for _, tt := range tests {
		if got := flexClash(tt.keys); got != tt.want {
			t.Errorf("%s: flexClash = %v, want %v", tt.name, got, tt.want)
		}
	}
}
