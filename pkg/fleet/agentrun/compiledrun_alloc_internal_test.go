package agentrun

import (
	"testing"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A compiled mission of a kept program, one input and one tool call,
// allocates what its result needs and little else: its Step with its
// input's result in one allocation, its call context with its Toolbox
// in one, the input's arguments read as they came (no merged copy when
// the mission has no shared context), the execution's Step with its
// trace in one and its warnings with their context in one, the
// arguments and the memory read in place by the run, no shape cache for
// a value already the interpreter's. The input and the result are those
// of the same mission run with a shared context.
func TestRunCompiledAllocations(t *testing.T) {
	r := New(Config{})
	box := &fakeBox{base: 1, tools: map[string]fleet.Tool{"base": fakeTool{"base", "() -> :int"}}}
	spec := &messages.CompiledSpec{Program: "(fn [{:keys [n]}] (+ n (tool/base {})))", Signature: "(n :int) -> :int",
		Inputs: []map[string]any{{"n": int64(2)}}}
	m := &messages.Mission{Kind: messages.KindCompiled, Tools: []string{"base"}, Compiled: spec}
	env := &fleet.RunEnv{}
	run := func(m *messages.Mission) *messages.Step {
		st, err := r.runCompiledWith(t.Context(), m, env, box)
		if err != nil || st.Fail != nil {
			t.Fatalf("run: %v %+v", err, st.Fail)
		}
		return st
	}
	want := []any{map[string]any{"value": int64(3)}}
	if st := run(m); !equalResults(st.Return, want) || st.Usage.ToolCalls != 1 {
		t.Fatalf("return %v (%d tool calls), want %v", st.Return, st.Usage.ToolCalls, want)
	}
	shared := &messages.Mission{Kind: messages.KindCompiled, Tools: []string{"base"}, Context: map[string]any{"n": int64(5), "x": "y"},
		Compiled: &messages.CompiledSpec{Program: spec.Program, Signature: spec.Signature, Inputs: []map[string]any{{"n": int64(2)}}}}
	if st := run(shared); !equalResults(st.Return, want) {
		t.Fatalf("with a shared context: return %v, want %v (the input wins)", st.Return, want)
	}
	if len(spec.Inputs[0]) != 1 || spec.Inputs[0]["n"] != int64(2) || len(shared.Context) != 2 {
		t.Fatalf("the mission's data changed: %v, %v", spec.Inputs, shared.Context)
	}
	if raceOn {
		return
	}
	n := testing.AllocsPerRun(200, func() { run(m) })
	if n > 23 {
		t.Errorf("a compiled mission of one input and one tool call: %.0f allocations, want at most 23", n)
	}
	t.Logf("%.0f allocations", n)
}

func equalResults(got any, want []any) bool {
	g, ok := got.([]any)
	if !ok || len(g) != len(want) {
		return false
	}
	for i := range g {
		gm, _ := g[i].(map[string]any)
		wm := want[i].(map[string]any)
		if len(gm) != len(wm) || gm["value"] != wm["value"] {
			return false
		}
	}
	return true
}
