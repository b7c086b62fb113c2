package agent

import (
	"context"
	"testing"
)

// An execution of a loaded program with scalar arguments and one tool
// call allocates its Step with its trace in one, its warnings collector
// with its context in one, and reads its arguments and its memory in
// place: no copy of the arguments, no conversion of the memory, no shape
// cache for the function or the argument map. The arguments are not
// changed.
func TestCompiledExecuteAllocations(t *testing.T) {
	tools := map[string]Tool{"base": FuncSig("() -> :int", func(context.Context, map[string]any) (any, error) { return int64(1), nil })}
	c, err := Load("(fn [{:keys [n s]}] (+ n (count s) (tool/base {})))", "(n :int, s :string) -> :int", LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"n": int64(2), "s": "abc"}
	run := func() {
		st, err := c.Execute(context.Background(), args)
		if err != nil || st.Return != int64(6) || st.Usage.ToolCalls != 1 || len(st.Trace) != 1 || st.Trace[0].Result != int64(6) {
			t.Fatalf("execute: %v %+v", err, st)
		}
	}
	run()
	if len(args) != 2 || args["n"] != int64(2) || args["s"] != "abc" {
		t.Fatalf("the arguments changed: %v", args)
	}
	if raceEnabled {
		return
	}
	if n := testing.AllocsPerRun(200, run); n > 16 {
		t.Errorf("an execution with one tool call: %.0f allocations, want at most 16", n)
	} else {
		t.Logf("%.0f allocations", n)
	}
}
