package agent

import (
	"context"
	"testing"
)

// TestSpawnCallContextAllocations: the context a tool's function is
// called with holds the call's spawnCall in one allocation, which Spawn
// finds; a context of no tool call holds none.
func TestSpawnCallContextAllocations(t *testing.T) {
	type other struct{}
	parent := context.WithValue(context.Background(), other{}, "v")
	tr, tt := &toolRunner{}, &turnTools{}
	ctx, sc := withSpawnCall(parent, tr, tt, "lookup")
	if got, _ := ctx.Value(spawnKey{}).(*spawnCall); got != sc || got.tr != tr || got.tt != tt || got.tool != "lookup" {
		t.Fatalf("the context's spawnCall = %+v, want %+v", got, sc)
	}
	if got := ctx.Value(other{}); got != "v" {
		t.Fatalf("Value of the parent's key = %v, want v", got)
	}
	if _, err := Spawn(parent, &Agent{}, nil); err != ErrNoRun {
		t.Fatalf("Spawn with a context of no tool call: %v, want ErrNoRun", err)
	}
	if raceEnabled {
		t.Skip("allocation counts under -race")
	}
	var kept context.Context // a tool may keep its context: it escapes
	n := testing.AllocsPerRun(100, func() {
		kept, sc = withSpawnCall(parent, tr, tt, "lookup")
		if kept.Value(spawnKey{}) == nil {
			t.Fatal("no spawnCall")
		}
	})
	if n != 1 {
		t.Errorf("a tool call's context and its spawnCall: %v allocations, want 1", n)
	}
	_ = kept
}
