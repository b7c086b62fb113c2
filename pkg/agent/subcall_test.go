package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// TestSubAgentCallOnContext: the child run's model requests and tool calls
// see the sub-agent call they belong to (tool name, validated arguments,
// parent call), one *SubAgentCall per call even with equal arguments; the
// top-level run sees none.
func TestSubAgentCallOnContext(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	calls := map[*SubAgentCall]bool{}
	note := func(ctx context.Context, who string) {
		mu.Lock()
		defer mu.Unlock()
		c := SubAgentCallFrom(ctx)
		if c == nil {
			seen = append(seen, who+":top")
			return
		}
		calls[c] = true
		seen = append(seen, fmt.Sprintf("%s:%s%v parent=%v", who, c.Tool, c.Args, c.Parent != nil))
	}
	model := llm.Func(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
		note(ctx, "model")
		prog := `(return [(tool/child {:n 1}) (tool/child {:n 1})])`
		if SubAgentCallFrom(ctx) != nil {
			prog = `(return (tool/probe {:x ctx/n}))`
		}
		return &llm.Response{Content: "```clojure\n" + prog + "\n```"}, nil
	})
	probe := Func(func(ctx context.Context, args map[string]any) (any, error) {
		note(ctx, "tool")
		return int64(7), nil
	})
	child := mustNew(t, Spec{Name: "child", Prompt: "Child {{n}}", Signature: "(n :int) -> :int", Tools: map[string]Tool{"probe": probe}})
	top := mustNew(t, Spec{Name: "top", Prompt: "Top", Tools: map[string]Tool{"child": child.AsTool(ToolOptions{})}})
	step, err := top.Run(context.Background(), RunOptions{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(step.Return) != "[7 7]" {
		t.Fatalf("return %v", step.Return)
	}
	want := []string{"model:top", "model:childmap[n:1] parent=false", "tool:childmap[n:1] parent=false",
		"model:childmap[n:1] parent=false", "tool:childmap[n:1] parent=false"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("seen %q\nwant %q", seen, want)
	}
	if len(calls) != 2 {
		t.Fatalf("%d distinct calls, want 2", len(calls))
	}
}
