package agent_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// The agent loop with a scripted model: the first program explores and
// stores its result in memory (Memory Result Contract), the second returns.
func Example() {
	search := agent.FuncSig("(query :string) -> [{id :int, title :string}]",
		func(_ context.Context, args map[string]any) (any, error) {
			return []any{
				map[string]any{"id": int64(1), "title": "Refund request"},
				map[string]any{"id": int64(2), "title": "Invoice question"},
			}, nil
		}).WithDescription("Search support tickets")

	a, err := agent.New(agent.Spec{
		Prompt:    "How many tickets mention {{topic}}?",
		Signature: "(topic :string) -> {count :int}",
		Tools:     map[string]agent.Tool{"search": search},
	})
	if err != nil {
		panic(err)
	}
	model := llmtest.New(
		llmtest.Code(`{:hits (tool/search {:query ctx/topic}) :return "searched"}`),
		llmtest.Code(`(return {:count (count hits)})`),
	)
	step, err := a.Run(context.Background(), agent.RunOptions{
		Model:   model,
		Context: map[string]any{"topic": "billing"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(step.Return, step.Usage.Turns, "turns")
	// Output: map[count:2] 2 turns
}

// The specification's `with` pattern: run a chain, stop at the first
// failure and branch on its reason. Each Step feeds the next one's context
// (Then), and a failed Step short-circuits the rest with chained_failure,
// so the error can also be checked once at the end.
func Example_with() {
	finder, _ := agent.New(agent.Spec{Prompt: "Find urgent emails", Signature: "{count :int, _ids [:int]}"})
	drafter, _ := agent.New(agent.Spec{Prompt: "Draft replies for {{count}} emails", Signature: "(count :int, _ids [:int]) -> {drafts :int}"})
	model := llmtest.New(
		llmtest.Code(`(return {:count 2 :_ids [7 9]})`),
		llmtest.Code(`(return {:drafts (count ctx/_ids)})`),
	)
	opts := agent.RunOptions{Model: model}

	result, err := func() (*messages.Step, error) {
		step1, err := finder.Run(context.Background(), opts)
		if err != nil {
			return step1, err
		}
		return agent.Then(context.Background(), step1, drafter, opts)
	}()
	switch {
	case errors.Is(err, agent.ErrChainedFailure):
		fmt.Println("an upstream step failed")
	case err != nil && result.Fail.Reason == "not_found":
		fmt.Println("no data")
	case err != nil:
		fmt.Println("failed:", result.Fail)
	default:
		fmt.Println("drafts:", result.Return.(map[string]any)["drafts"])
	}
	// Output: drafts: 2
}

// A sub-agent as a tool: the parent model sees the child's public
// signature, the child inherits the parent's model, and the child's Step
// is kept in the parent's trace.
func ExampleAgent_AsTool() {
	finder, _ := agent.New(agent.Spec{
		Name:      "customer_finder",
		Prompt:    "Find the customer described as {{description}}",
		Signature: "(description :string) -> {id :int, _notes :string}",
	})
	orchestrator, _ := agent.New(agent.Spec{
		Prompt: "Find the top customer's id",
		Tools:  map[string]agent.Tool{"find_customer": finder.AsTool(agent.ToolOptions{})},
	})
	p, _ := agent.PreviewPrompt(orchestrator, nil)
	fmt.Println(p.ToolSchemas[0].Name, p.ToolSchemas[0].Signature)

	model := llmtest.New(
		llmtest.Code(`(return (:id (tool/find_customer {:description "top"})))`), // parent
		llmtest.Code(`(return {:id 501 :_notes "vip"})`),                         // child
	)
	step, _ := orchestrator.Run(context.Background(), agent.RunOptions{Model: model})
	child := step.Trace[0].ToolCalls[0].Child
	fmt.Println(step.Return, child.Return)
	// Output:
	// find_customer (description :string) -> {id :int}
	// 501 map[_notes:vip id:501]
}

// Typed tools derive their signature from Go types.
func ExampleTyped() {
	type args struct {
		ID int64 `json:"id"`
	}
	type customer struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	get := agent.Typed(func(_ context.Context, a args) (customer, error) {
		return customer{ID: a.ID, Name: "Acme"}, nil
	})
	fmt.Println(get.Signature)
	// Output: (id :int) -> {id :int, name :string}
}

// Models are named in a registry that sub-agents inherit.
func ExampleRunOptions_registry() {
	reg := llm.Registry{"fast": llmtest.New(llmtest.Code(`(return "from fast")`))}
	a, _ := agent.New(agent.Spec{Prompt: "hello", LLM: "fast"})
	step, _ := a.Run(context.Background(), agent.RunOptions{Registry: reg})
	fmt.Println(step.Return)

	_, err := a.Run(context.Background(), agent.RunOptions{})
	fmt.Println(err)
	// Output:
	// from fast
	// agent: llm_registry_required: llm_registry required when using atom :fast
}

// Templates are parsed once; firewalled values never reach a prompt.
func ExampleMustTemplate() {
	t := agent.MustTemplate("Hello {{user.name}} ({{_token}}){{#items}} [{{.}}]{{/items}}")
	fmt.Println(t.Render(map[string]any{
		"user":   map[string]any{"name": "Ann"},
		"_token": "secret",
		"items":  []any{"a", "b"},
	}))
	// Output: Hello Ann (<Firewalled>) [a] [b]
}

// PreviewPrompt shows what the model would receive, without calling it.
func ExamplePreviewPrompt() {
	a, _ := agent.New(agent.Spec{Prompt: "Summarize {{text}}", Signature: "(text :string) -> {summary :string}", Limits: agent.Limits{MaxTurns: 1}})
	p, _ := agent.PreviewPrompt(a, map[string]any{"text": "Go is fun."})
	fmt.Println(p.User)
	// Output:
	// ## Data inventory (ctx/)
	// - ctx/text :string = "Go is fun."
	//
	// ## Tools
	// (none)
	//
	// ## Expected output
	// The value of your program, of type {summary :string}.
	//
	// ## Mission
	// Summarize Go is fun.
}
