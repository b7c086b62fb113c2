package llmtest_test

import (
	"context"
	"fmt"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

// A scripted model answers in order, records every request and can check
// each one. Here the second reply checks that the loop fed the first
// result back.
func Example() {
	model := llmtest.New(
		llmtest.Code(`(call "search" {:q "go"})`).WithUsage(120, 15),
		llmtest.Code(`(return {:count 3})`).
			Expect(llmtest.LastUserContains("3 results")),
	)
	ctx := context.Background()
	req := llm.Request{System: "You write PTC-Lisp.", Messages: []llm.Message{llm.UserText("Count Go repos")}}

	first, _ := model.Complete(ctx, req)
	fmt.Printf("%q (%d in, %d out)\n", first.Content, first.Usage.InputTokens, first.Usage.OutputTokens)

	req.Messages = append(req.Messages, first.Message(), llm.UserText("Result: 3 results"))
	second, err := model.Complete(ctx, req)
	fmt.Println(second.Content, err)

	_, err = model.Complete(ctx, req)
	fmt.Println(err)
	fmt.Println("calls:", model.Calls(), "recorded messages in call 2:", len(model.Requests()[1].Messages))
	// Output:
	// "```clojure\n(call \"search\" {:q \"go\"})\n```" (120 in, 15 out)
	// ```clojure
	// (return {:count 3})
	// ``` <nil>
	// llmtest: script exhausted: no reply left for call 3 (2 scripted)
	// calls: 3 recorded messages in call 2: 3
}

// Native tool calls are scripted with ToolCall; ids are filled in.
func ExampleToolCall() {
	model := llmtest.New(
		llmtest.ToolCall("get_weather", map[string]any{"city": "Oslo"}),
		llmtest.Text("It is 4 °C in Oslo."),
	)
	resp, _ := model.Complete(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("Weather in Oslo?")}})
	call := resp.ToolCalls[0]
	fmt.Println(resp.StopReason, call.ID, call.Name, call.Input["city"])
	// Output: tool_use call_1_1 get_weather Oslo
}
