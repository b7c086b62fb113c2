package core

import (
	"reflect"
	"testing"
)

// TestToGoSmallMapAllocations: a small map converts to its Go map with
// nothing besides it (the map, and a boxed value), its entries read in
// place rather than listed into a slice the map keeps; a map whose
// entries were listed before converts the same.
func TestToGoSmallMapAllocations(t *testing.T) {
	newMap := func() *Map {
		b := NewMapBuilder(4)
		b.Set(NewKeyword("id"), int64(1))
		b.Set(NewKeyword("first-name"), "Ann")
		b.Set("first_name", "Bea")
		b.Set(NewKeyword("n"), int64(300))
		return b.Build()
	}
	want := map[string]any{"id": int64(1), "first_name": "Bea", "n": int64(300)}
	m := newMap()
	if got := ToGo(m); !reflect.DeepEqual(got, want) {
		t.Fatalf("ToGo = %#v, want %#v", got, want)
	}
	listed := newMap()
	listed.Entries()
	if got := ToGo(listed); !reflect.DeepEqual(got, want) {
		t.Fatalf("ToGo of a listed map = %#v, want %#v", got, want)
	}
	// 4: the Go map, the respelled key and its entry, the boxed 300;
	// listing the entries into a slice the map keeps made 6
	if n := testing.AllocsPerRun(100, func() { ToGo(newMap()) }) - testing.AllocsPerRun(100, func() { newMap() }); n > 4+raceAllocSlack {
		t.Errorf("ToGo of a small map: %.0f allocations, want at most 4", n)
	}
}
