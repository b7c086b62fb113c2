package lisp

import (
	"math"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// TestValueSet checks the dedup set used by distinct, frequencies and
// group-by: = semantics (1 and 1.0 are one member, NaN is never equal),
// keywords and strings distinct, first occurrence kept.
func TestValueSet(t *testing.T) {
	kw := core.NewKeyword("a")
	big := float64(1 << 62)
	tests := []struct {
		name string
		in   []core.Value
		want int // distinct members
	}{
		{"ints", []core.Value{int64(1), int64(2), int64(1)}, 2},
		{"int and integral float", []core.Value{int64(1), 1.0, math.Copysign(0, -1), int64(0)}, 2},
		{"fractions", []core.Value{1.5, 1.5, int64(1)}, 2},
		{"nan", []core.Value{math.NaN(), math.NaN()}, 2},
		{"huge float", []core.Value{big, int64(1 << 62), 1e300, 1e300}, 2},
		{"keyword vs string", []core.Value{kw, "a", core.NewKeyword("a")}, 2},
		{"vectors", []core.Value{core.NewVector([]core.Value{int64(1)}), core.NewVector([]core.Value{1.0}), core.NewVector(nil)}, 2},
		{"nil and false", []core.Value{nil, false, nil, false}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s builtins.ValueSet
			for _, v := range tt.in {
				s.Add(v)
			}
			if len(s.Vals) != tt.want {
				t.Fatalf("got %d members %v, want %d", len(s.Vals), s.Vals, tt.want)
			}
			if first := tt.in[0]; !core.IsNaN(first) && !core.Equal(s.Vals[0], first) {
				t.Fatalf("first member %v, want the first occurrence %v", s.Vals[0], tt.in[0])
			}
			for _, v := range tt.in {
				i := s.Index(v, core.HashValue(v))
				if core.IsNaN(v) {
					if i >= 0 {
						t.Fatalf("NaN found at %d", i)
					}
					continue
				}
				if i < 0 || !core.Equal(s.Vals[i], v) {
					t.Fatalf("index(%v) = %d", v, i)
				}
			}
		})
	}
}

func TestFlexClash(t *testing.T) {
	many := make([]core.Value, 0, 40)
	for i := 0; i < 30; i++ {
		many = append(many, int64(i))
	}
	tests := []struct {
		name string
		keys []core.Value
		want bool
	}{
		{"none", []core.Value{core.NewKeyword("a"), "b", int64(1)}, false},
		{"small clash", []core.Value{core.NewKeyword("a"), "a"}, true},
		{"large clash", append(append([]core.Value(nil), many...), core.NewKeyword("x"), "x"), true},
		{"large none", append(append([]core.Value(nil), many...), core.NewKeyword("x"), "y"), false},
	}
	for _, tt := range tests {
		if got := builtins.FlexClash(tt.keys); got != tt.want {
			t.Errorf("%s: flexClash = %v, want %v", tt.name, got, tt.want)
		}
	}
}
