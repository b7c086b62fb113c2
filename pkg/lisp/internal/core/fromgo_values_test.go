package core

import "testing"

// FromGo passes an interpreter value through as it is (a memory entry, a
// closure, a decoded tool result's value), making no shape cache for it.
func TestFromGoInterpreterValues(t *testing.T) {
	b := NewMapBuilder(1)
	b.Set("a", Int(1))
	m := b.Build()
	decoded := NewVector([]Value{Int(1)})
	for _, v := range []Value{
		NewKeyword("k"), NewVector([]Value{Int(1)}), m, &Closure{}, &Builtin{}, &Regex{}, &Var{Name: "x"}, &LazySeq{},
	} {
		got, err := FromGo(v)
		if err != nil || got != v {
			t.Errorf("FromGo(%T) = %v, %v; want the value itself", v, got, err)
		}
		if raceAllocSlack == 0 {
			if n := testing.AllocsPerRun(100, func() { _, _ = FromGo(v) }); n != 0 {
				t.Errorf("FromGo(%T): %.0f allocations, want 0", v, n)
			}
		}
	}
	w := &WireResult{Decoded: decoded}
	if got, err := FromGo(w); err != nil || got != Value(decoded) {
		t.Errorf("FromGo(*WireResult) = %v, %v; want its decoded value", got, err)
	}
	if raceAllocSlack == 0 {
		if n := testing.AllocsPerRun(100, func() { _, _ = FromGo(w) }); n != 0 {
			t.Errorf("FromGo(*WireResult): %.0f allocations, want 0", n)
		}
	}
}
