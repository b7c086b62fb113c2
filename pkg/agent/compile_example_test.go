package agent_test

import (
	"context"
	"fmt"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

// Derive and apply: the model writes the function once (here a scripted
// model), then it runs on every input with no model at all.
func ExampleCompile() {
	a, err := agent.New(agent.Spec{
		Name:      "scorer",
		Prompt:    "Score the report {{report}} from 0 to 1 by severity (0-10)",
		Signature: "(report {severity :int}) -> {score :float, urgent :bool}",
	})
	if err != nil {
		panic(err)
	}
	model := llmtest.New(llmtest.Code(`(fn [{:keys [report]}]
  (let [s (:severity report)]
    {:score (/ s 10.0) :urgent (>= s 8)}))`))
	compiled, err := agent.Compile(context.Background(), a, agent.CompileOptions{
		Model:   model,
		Samples: []map[string]any{{"report": map[string]any{"severity": 3}}},
	})
	if err != nil {
		panic(err)
	}
	for _, sev := range []int{9, 2} {
		step, err := compiled.Execute(context.Background(), map[string]any{"report": map[string]any{"severity": sev}})
		if err != nil {
			panic(err)
		}
		fmt.Println(step.Return)
	}
	fmt.Println("model calls:", model.Calls(), "turns:", compiled.Metadata.Turns)
	// Output:
	// map[score:0.9 urgent:true]
	// map[score:0.2 urgent:false]
	// model calls: 1 turns: 1
}

// A compiled program can be saved (a small JSON document with the source,
// signature and metadata), loaded back and checked again, then validated
// against test cases.
func ExampleLoadCompiled() {
	c, err := agent.Load(`(fn [{:keys [n]}] (* n n))`, "(n :int) -> :int", agent.LoadOptions{Name: "square"})
	if err != nil {
		panic(err)
	}
	doc, err := c.MarshalJSON()
	if err != nil {
		panic(err)
	}
	back, err := agent.LoadCompiled(doc, agent.LoadOptions{})
	if err != nil {
		panic(err)
	}
	report := back.Validate(context.Background(), []agent.TestCase{
		{Args: map[string]any{"n": 3}, Want: 9},
		{Args: map[string]any{"n": 4}, Want: 15},
	})
	fmt.Println(back.Name, back.Source)
	fmt.Println(report)
	// Output:
	// square (fn [{:keys [n]}] (* n n))
	// 1/2 cases passed
	// - case 2: want 15, got 16
}
