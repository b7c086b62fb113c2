package core

import (
	"context"
	"testing"
)

// TestCallPosContextAllocations: the context a Tool is called with holds
// the call's position in one allocation, and CallPos reads it back without
// allocating; a context of no call has no position.
func TestCallPosContextAllocations(t *testing.T) {
	type other struct{}
	parent := context.WithValue(context.Background(), other{}, "v")
	pos := Pos{Line: 1200, Col: 300, Offset: 40000}
	ctx := withCallPos(parent, pos)
	if got, ok := CallPos(ctx); !ok || got != pos {
		t.Fatalf("CallPos = %v, %v; want %v, true", got, ok, pos)
	}
	if got := ctx.Value(other{}); got != "v" {
		t.Fatalf("Value of the parent's key = %v, want v", got)
	}
	if got, ok := CallPos(parent); ok || got != (Pos{}) {
		t.Fatalf("CallPos of a context of no call = %v, %v; want zero, false", got, ok)
	}
	if raceAllocSlack != 0 {
		t.Skip("allocation counts under -race")
	}
	var kept context.Context // a Tool may keep its context: it escapes
	n := testing.AllocsPerRun(100, func() {
		kept = withCallPos(parent, pos)
		if _, ok := CallPos(kept); !ok {
			t.Fatal("no position")
		}
	})
	if n != 1 {
		t.Errorf("a call's context and its position read back: %v allocations, want 1", n)
	}
	_ = kept
}

// TestPosStringAllocations: a position prints as "line:col" in the one
// allocation of its string.
func TestPosStringAllocations(t *testing.T) {
	for _, c := range []struct {
		p    Pos
		want string
	}{
		{Pos{Line: 1, Col: 1}, "1:1"},
		{Pos{Line: 12, Col: 7, Offset: 99}, "12:7"},
		{Pos{Line: 100000, Col: 4096}, "100000:4096"},
		{Pos{}, "0:0"},
		{Pos{Line: -3, Col: -1 << 62}, "-3:-4611686018427387904"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.p, got, c.want)
		}
	}
	if raceAllocSlack != 0 {
		t.Skip("allocation counts under -race")
	}
	p := Pos{Line: 1000, Col: 2000}
	if n := testing.AllocsPerRun(100, func() { _ = p.String() }); n != 1 {
		t.Errorf("Pos.String: %v allocations, want 1", n)
	}
}
