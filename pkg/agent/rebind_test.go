package agent

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

func intTool(v int64) Tool {
	return FuncSig("() -> :int", func(context.Context, map[string]any) (any, error) { return v, nil })
}

// Agents rebound from one share what depends on the spec (built once,
// the system prompt included), each calling its own tools, concurrently.
func TestRebindSharesTheSpecPartsAndCallsItsOwnTools(t *testing.T) {
	var builds atomic.Int64
	spec := Spec{
		Prompt: "Add {{n}} to the base.", Signature: "(n :int) -> :int",
		Tools:       map[string]Tool{"base": intTool(0)},
		ToolCatalog: []messages.ToolSchema{{Name: "later", Signature: "(x :int) -> :int"}},
		SystemPrompt: SystemPrompt{Transform: func(s string) string {
			builds.Add(1)
			return s
		}},
	}
	a := mustNew(t, spec)
	want := a.systemPrompt(PromptContext{Turn: 1})
	builds.Store(0)
	const n = 8
	agents := make([]*Agent, n)
	for i := range agents {
		b, err := a.Rebind(map[string]Tool{"base": intTool(int64(100 * i))})
		if err != nil {
			t.Fatal(err)
		}
		if b.sig != a.sig || b.tmpl != a.tmpl || &b.catalog[0] != &a.catalog[0] || b.tools["base"].decl != a.tools["base"].decl {
			t.Fatalf("agent %d does not share the parsed spec", i)
		}
		agents[i] = b
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, b := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := llmtest.New(llmtest.Code("(return (+ ctx/n (tool/base {})))"))
			st, err := b.Run(context.Background(), RunOptions{Model: m, Context: map[string]any{"n": int64(i)}})
			switch {
			case err != nil:
				errs[i] = err
			case st.Return != int64(101*i):
				errs[i] = fmt.Errorf("agent %d returned %v, want %d (its own tool)", i, st.Return, 101*i)
			case m.Requests()[0].System != want:
				errs[i] = fmt.Errorf("agent %d sent another system prompt:\n%s\nwant\n%s", i, m.Requests()[0].System, want)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := builds.Load(); got != 1 {
		t.Errorf("the system prompt was built %d times for %d rebound agents, want once", got, n)
	}
	if a.Spec().Tools["base"].fn == nil || agents[1].Spec().Tools["base"].fn == nil {
		t.Fatal("a rebound agent's spec lost its tools")
	}
	if st, err := a.Run(context.Background(), RunOptions{Model: llmtest.New(llmtest.Code("(return (tool/base {}))")), Context: map[string]any{"n": int64(1)}}); err != nil || st.Return != int64(0) {
		t.Fatalf("the agent rebound from: %v, %v; want its own tool's 0", st.Return, err)
	}
}

// Rebind takes the agent's tools, no other, and checks each as New does.
func TestRebindErrors(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "p", Tools: map[string]Tool{"base": intTool(1)}, Validation: signature.Strict})
	_, err := a.Rebind(map[string]Tool{})
	wantSpecError(t, err, "tools", "rebinding needs the agent's 1 tools (base), got 0")
	_, err = a.Rebind(map[string]Tool{"other": intTool(1)})
	wantSpecError(t, err, "tools[other]", `tool "other" is not one the agent was built with (base)`)
	bad := FuncSig("(x :nope) -> :int", func(context.Context, map[string]any) (any, error) { return 1, nil })
	_, newErr := New(Spec{Prompt: "p", Tools: map[string]Tool{"base": bad}})
	_, err = a.Rebind(map[string]Tool{"base": bad})
	if err == nil || newErr == nil || err.Error() != newErr.Error() {
		t.Fatalf("a bad signature: Rebind %v, New %v; want New's error", err, newErr)
	}
	_, err = a.Rebind(map[string]Tool{"base": Func(func(context.Context, map[string]any) (any, error) { return 1, nil })})
	wantSpecError(t, err, "tools[base]", "strict validation mode requires every tool to have a signature")
	if a.tools["base"].decl == nil {
		t.Fatal("a failed Rebind changed the agent")
	}
}

// A tool's public signature (firewalled fields left out) is rendered once
// when its signature is parsed: listing the tools of a rebound agent
// renders none again, and shows what rendering shows.
func TestRebindRendersPublicSignaturesOnce(t *testing.T) {
	sig := "(id :int, _token :string) -> {name :string, _secret :string}"
	tool := func() Tool {
		return FuncSig(sig, func(context.Context, map[string]any) (any, error) { return nil, nil })
	}
	a := mustNew(t, Spec{Prompt: "Look up {{id}}.", Signature: "(id :int) -> :any", Tools: map[string]Tool{"lookup": tool()}})
	b, err := a.Rebind(map[string]Tool{"lookup": tool()})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := signature.Parse(sig)
	if err != nil {
		t.Fatal(err)
	}
	want := parsed.Public().String()
	for _, ag := range []*Agent{a, b} {
		if got := ag.toolSchemas(); len(got) != 1 || got[0].Signature != want {
			t.Fatalf("tool schemas %+v, want the signature %q", got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { b.toolSchemas() }); n > 1 {
		t.Fatalf("%.0f allocations listing one tool, want 1 (the list)", n)
	}
}

// A rebound agent shares what depends only on its spec and holds only its
// tools: rebinding an agent of one tool costs its tool map, the bound
// tool and the agent's few words, not a copy of the spec; the rebound
// agent's Spec has its own tools.
func TestRebindSharesTheSpec(t *testing.T) {
	sig := "(id :int) -> {name :string}"
	fn := func(context.Context, map[string]any) (any, error) { return nil, nil }
	a := mustNew(t, Spec{Prompt: "Look up {{id}}.", Signature: "(id :int) -> :any", Tools: map[string]Tool{"lookup": FuncSig(sig, fn)}})
	tools := map[string]Tool{"lookup": FuncSig(sig, fn).WithDescription("the rebound one")}
	b, err := a.Rebind(tools)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Spec().Tools["lookup"].Description; got != "the rebound one" {
		t.Fatalf("rebound spec's tool: %q", got)
	}
	if got := a.Spec().Tools["lookup"].Description; got != "" {
		t.Fatalf("the agent's own spec's tool changed: %q", got)
	}
	if b.Spec().Prompt != a.Spec().Prompt || b.Spec().Limits != a.Spec().Limits {
		t.Fatal("the rebound agent's spec differs besides its tools")
	}
	_, bytes := memPerRun(200, func() {
		if _, err := a.Rebind(tools); err != nil {
			t.Fatal(err)
		}
	})
	// 467 bytes on amd64; a copy of the whole agent made it 1,184
	if bytes > 600 {
		t.Errorf("Rebind: %.0f bytes, want at most 600", bytes)
	}
}

// A run's Step carries the agent's signature as written, rendered once
// when the agent is built, not at each run.
func TestRunStepSignatureRenderedOnce(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Mission {{n}}", Signature: "(n :int) -> {n :int, names [:string]}"})
	opts := RunOptions{}
	if got, want := a.newRun(&opts, nil).st.Signature, a.sig.String(); got != want {
		t.Fatalf("the Step's signature %q, want %q", got, want)
	}
	// 5 on amd64: the Step, the tree, its secrets and emit limiter, the
	// run state; rendering the signature at each run made 9
	if n := testing.AllocsPerRun(100, func() { a.newRun(&opts, nil) }); n > 6 {
		t.Errorf("starting a run: %.0f allocations, want at most 6", n)
	}
}

// RebindEach binds the tools Rebind binds, named in a list and each given
// by a func: the agent calls its own tools, shares the parsed spec, and
// its Spec lists the tools as given; it makes no map of the tools, so it
// allocates less than Rebind given one; and it refuses what Rebind
// refuses, and a tool named twice.
func TestRebindEach(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Add {{n}} to the base.", Signature: "(n :int) -> :int",
		Tools: map[string]Tool{"base": intTool(0), "other": intTool(5)}})
	b, err := a.RebindEach([]string{"other", "base"}, func(name string) Tool {
		if name == "base" {
			return intTool(100).WithDescription("the base")
		}
		return intTool(7)
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.sig != a.sig || b.tools["base"].decl != a.tools["base"].decl {
		t.Fatal("the rebound agent does not share the parsed spec")
	}
	st, err := b.Run(context.Background(), RunOptions{Model: llmtest.New(llmtest.Code("(return (+ ctx/n (tool/base {}) (tool/other {})))")),
		Context: map[string]any{"n": int64(1)}})
	if err != nil || st.Return != int64(108) {
		t.Fatalf("rebound agent returned %v, %v; want 108 (its own tools)", st.Return, err)
	}
	if tools := b.Spec().Tools; len(tools) != 2 || tools["base"].Description != "the base" || tools["other"].Signature != "() -> :int" {
		t.Fatalf("Spec().Tools = %+v, want the two tools as given", tools)
	}
	for _, names := range [][]string{{"base"}, {"base", "base"}, {"base", "nope"}, {"base", "other", "third"}} {
		if _, err := a.RebindEach(names, func(string) Tool { return intTool(1) }); err == nil {
			t.Errorf("rebinding %q: no error", names)
		}
	}
	names := []string{"base", "other"}
	tool := intTool(3)
	each := testing.AllocsPerRun(100, func() {
		if _, err := a.RebindEach(names, func(string) Tool { return tool }); err != nil {
			t.Fatal(err)
		}
	})
	withMap := testing.AllocsPerRun(100, func() {
		tools := make(map[string]Tool, len(names))
		for _, name := range names {
			tools[name] = tool
		}
		if _, err := a.Rebind(tools); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations rebinding each tool, %.0f with a map", each, withMap)
	if each >= withMap {
		t.Errorf("%.0f allocations rebinding each tool, %.0f with a map: want fewer", each, withMap)
	}
}
