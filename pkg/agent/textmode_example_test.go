package agent_test

import (
	"context"
	"fmt"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

// Text mode, JSON variant: the model answers with JSON, validated against
// the signature; the prompt is a Mustache template.
func Example_textMode() {
	a, err := agent.New(agent.Spec{
		Prompt:    "Classify the sentiment of: {{text}}",
		Signature: "(text :string) -> {sentiment :string, score :float}",
		Output:    agent.OutputText,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	model := llmtest.New(llmtest.Text("```json\n{\"sentiment\": \"positive\", \"score\": 0.95}\n```"))
	step, err := a.Run(context.Background(), agent.RunOptions{
		Model:   model,
		Context: map[string]any{"text": "I love this product!"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	req, _ := model.LastRequest()
	fmt.Println(req.Messages[0].Text())
	fmt.Println(step.Return)
	// Output:
	// Classify the sentiment of: I love this product!
	// map[score:0.95 sentiment:positive]
}

// Text mode with tools: native tool calling, then a JSON answer.
func Example_textModeTools() {
	add := agent.FuncSig("(a :int, b :int) -> :int", func(_ context.Context, args map[string]any) (any, error) {
		return args["a"].(int64) + args["b"].(int64), nil
	}).WithDescription("Add two numbers")
	a, err := agent.New(agent.Spec{
		Prompt:    "What is 17 + 25? Use the add tool.",
		Signature: "() -> {result :int}",
		Tools:     map[string]agent.Tool{"add": add},
		Output:    agent.OutputText,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	model := llmtest.New(
		llmtest.ToolCall("add", map[string]any{"a": int64(17), "b": int64(25)}),
		llmtest.Text(`{"result": 42}`),
	)
	step, err := a.Run(context.Background(), agent.RunOptions{Model: model})
	if err != nil {
		fmt.Println(err)
		return
	}
	call := step.Trace[0].ToolCalls[0]
	fmt.Println(call.Name, call.Args, "->", call.Result)
	fmt.Println(step.Return, "in", step.Usage.Turns, "turns")
	// Output:
	// add map[a:17 b:25] -> 42
	// map[result:42] in 2 turns
}

// An LLM tool classifies a batch in one call; the PTC-Lisp program merges
// the results. Both agents use the same (caller's) model.
func ExampleLLMTool() {
	classify := agent.LLMTool(agent.LLMToolSpec{
		Prompt: `Classify each email by urgency.
{{#emails}}
- ID {{id}}: "{{subject}}"
{{/emails}}`,
		Signature: "(emails [{id :int, subject :string}]) -> [{id :int, urgency :string}]",
	})
	a, err := agent.New(agent.Spec{
		Prompt: "Find the urgent emails",
		Tools:  map[string]agent.Tool{"classify_batch": classify},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	model := llmtest.New(
		llmtest.Code(`(let [emails [{:id 1 :subject "Server down"} {:id 2 :subject "Lunch?"}]
      cs (tool/classify_batch {:emails emails})]
  (return (mapv :id (filter #(= (:urgency %) "high") cs))))`),
		llmtest.Text(`[{"id": 1, "urgency": "high"}, {"id": 2, "urgency": "low"}]`),
	)
	step, err := a.Run(context.Background(), agent.RunOptions{Model: model})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(model.Requests()[1].Messages[0].Text())
	fmt.Println(step.Return)
	// Output:
	// Classify each email by urgency.
	// - ID 1: "Server down"
	// - ID 2: "Lunch?"
	// [1]
}

// Placeholders are validated against the signature when the tool is built.
func ExampleNewLLMTool() {
	_, err := agent.NewLLMTool(agent.LLMToolSpec{
		Prompt:    "Analyze {{user.email}}",
		Signature: "(user {name :string}) -> {analysis :string}",
	})
	fmt.Println(err)
	// Output:
	// agent: prompt: placeholder {{user.email}} not found in signature; user has fields: name
}
