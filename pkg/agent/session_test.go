package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// A Session given a model by name (RunOptions.LLM with a Registry) hands it
// to its sub-agent and LLM tools, as a run's parent hands its model down;
// with a name the registry lacks, the tool fails naming the model.
func TestSessionSubAgentUsesTheNamedModel(t *testing.T) {
	var seen []string
	helper, err := New(Spec{Name: "helper", Prompt: "double {{n}}", Signature: "(n :int) -> {d :int}"})
	if err != nil {
		t.Fatal(err)
	}
	judge := LLMTool(LLMToolSpec{Prompt: "Is {{subject}} urgent?", Signature: "(subject :string) -> {urgent :bool}"})
	a, err := New(Spec{Prompt: "explore", Tools: map[string]Tool{"helper": helper.AsTool(ToolOptions{}), "judge": judge}})
	if err != nil {
		t.Fatal(err)
	}
	model := llm.Func(func(_ context.Context, req llm.Request) (*llm.Response, error) {
		seen = append(seen, req.Messages[0].Text())
		if strings.Contains(req.Messages[0].Text(), "urgent?") {
			return &llm.Response{Content: `{"urgent": true}`}, nil
		}
		return &llm.Response{Content: "```clojure\n(return {:d (* 2 ctx/n)})\n```"}, nil
	})
	s, err := a.NewSession(RunOptions{LLM: "fast", Registry: llm.Registry{"fast": model}})
	if err != nil {
		t.Fatal(err)
	}
	ev := s.Eval(context.Background(), `(:d (tool/helper {:n 21}))`)
	if ev.Err != nil || ev.Value != int64(42) {
		t.Fatalf("sub-agent call: %v, %v\n%s", ev.Value, ev.Err, ev.Shown)
	}
	if len(seen) != 1 || !strings.Contains(seen[0], "double 21") {
		t.Errorf("the model saw %q", seen)
	}
	ev = s.Eval(context.Background(), `(:urgent (tool/judge {:subject "server down"}))`)
	if ev.Err != nil || ev.Value != true {
		t.Fatalf("LLM tool call: %v, %v\n%s", ev.Value, ev.Err, ev.Shown)
	}
	if len(seen) != 2 || !strings.Contains(seen[1], "Is server down urgent?") {
		t.Errorf("the model saw %q", seen)
	}

	s, err = a.NewSession(RunOptions{LLM: "absent", Registry: llm.Registry{"fast": model}})
	if err != nil {
		t.Fatal(err)
	}
	ev = s.Eval(context.Background(), `(tool/helper {:n 1})`)
	if ev.Err == nil || !strings.Contains(ev.Shown, "absent") {
		t.Errorf("a model missing from the registry: %v\n%s", ev.Err, ev.Shown)
	}
}
