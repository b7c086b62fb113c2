package agent

import (
	"context"
	"testing"
)

// Setting up a run's turns makes no map for the memory the run has not
// stored yet, and a first turn sees an empty memory all the same.
func TestNewTurnLoopAllocations(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Add {{n}} to the base.", Signature: "(n :int) -> :int", Tools: map[string]Tool{"base": intTool(0)}})
	opts := RunOptions{Context: map[string]any{"n": int64(1)}}
	in, fail := resolveInput(opts)
	if fail != nil {
		t.Fatal(fail)
	}
	ctx := context.Background()
	setUp := func() *turnLoop {
		rs := a.newRun(&opts, nil)
		l, step, err := a.newTurnLoop(ctx, ctx, rs, in, &opts, rs.st)
		if l == nil {
			t.Fatalf("no turns: %+v, %v", step, err)
		}
		return l
	}
	if l := setUp(); len(l.mem) != 0 || len(sortedKeys(l.mem)) != 0 {
		t.Fatalf("a new run's memory holds %v", l.mem)
	}
	n := testing.AllocsPerRun(100, func() { setUp() })
	t.Logf("%.0f allocations setting up a run and its turns", n)
	if !raceEnabled && n > newTurnLoopAllocs {
		t.Errorf("%.0f allocations setting up a run and its turns, want at most %d", n, newTurnLoopAllocs)
	}
}

// newTurnLoopAllocs is what TestNewTurnLoopAllocations' set-up allocates
// on amd64: one more with an empty memory map made at once.
const newTurnLoopAllocs = 36
