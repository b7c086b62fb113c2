package lisp

import (
	"context"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestRunReadsMemoryInPlace: a run whose memory holds interpreter values
// only reads it in place, with no conversion and no copy for its Thread;
// a run that writes memory (def) writes a copy, leaving the caller's map
// and the next run's memory as they were, and so does the Memory Result
// Contract.
func TestRunReadsMemoryInPlace(t *testing.T) {
	b := core.NewMapBuilder(1)
	b.Set("a", int64(2))
	mem := map[string]any{"x": int64(1), "m": b.Build()}
	p, err := Compile(`(+ x (get m "a"))`, Options{Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	// no memory limit: a compiled execution's (agent.Compiled.Execute)
	opts := Options{Memory: mem, Limits: messages.Limits{MemoryLimit: -1}}
	if !raceBuild {
		allocs := testing.AllocsPerRun(100, func() {
			if res, err := p.Run(context.Background(), opts); err != nil || res.Value != int64(3) {
				t.Fatalf("read: %v %v", res.Value, err)
			}
		})
		if allocs > 1 {
			t.Errorf("%.0f allocations per run reading two memory entries, want at most 1 (the Result)", allocs)
		}
	}

	w, err := Compile(`(do (def y (+ x 1)) y)`, Options{Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		res, err := w.Run(context.Background(), opts)
		if err != nil || res.Value != int64(2) {
			t.Fatalf("def: %v %v", res.Value, err)
		}
		if len(res.Memory) != 3 || res.Memory["y"] != int64(2) || res.Memory["x"] != int64(1) {
			t.Errorf("def: memory %v, want x, m and y", res.Memory)
		}
		if len(res.Written) != 1 || res.Written[0] != "y" {
			t.Errorf("def: written %v, want [y]", res.Written)
		}
		if _, ok := mem["y"]; ok || len(mem) != 2 {
			t.Fatalf("def: the caller's memory changed: %v", mem)
		}
	}
	res, err := p.Run(context.Background(), opts)
	if err != nil || res.Value != int64(3) || len(res.Memory) != 2 || res.Written != nil {
		t.Errorf("a read after a def: %v, memory %v, written %v, %v", res.Value, res.Memory, res.Written, err)
	}
}

func TestRunMemoryContractLeavesInterpreterMemory(t *testing.T) {
	mem := map[string]any{"x": int64(1)}
	p, err := Compile(`{:y (+ x 1) :return x}`, Options{Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background(), Options{Memory: mem, MemoryContract: true})
	if err != nil || res.Value != int64(1) || res.Memory["y"] != int64(2) {
		t.Fatalf("contract: %v, memory %v, %v", res.Value, res.Memory, err)
	}
	if len(mem) != 1 {
		t.Errorf("contract: the caller's memory changed: %v", mem)
	}
}
