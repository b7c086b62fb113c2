package agent

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// newText builds a text-mode agent (New runs the text-mode checks).
func newText(s Spec) (*Agent, error) {
	s.Output = OutputText
	return New(s)
}

func mustText(t testing.TB, s Spec) *Agent {
	t.Helper()
	a, err := newText(s)
	if err != nil {
		t.Fatalf("new text agent: %v", err)
	}
	return a
}

func addTool() Tool {
	return FuncSig("(a :int, b :int) -> :int", func(_ context.Context, args map[string]any) (any, error) {
		return args["a"].(int64) + args["b"].(int64), nil
	}).WithDescription("Add two numbers")
}

func TestTextVariants(t *testing.T) {
	tools := map[string]Tool{"add": addTool()}
	tests := []struct {
		sig   string
		tools map[string]Tool
		want  textVariant
	}{
		{"", nil, variantText},
		{"(text :string) -> :string", nil, variantText},
		{"() -> :any", nil, variantText},
		{":string?", nil, variantText},
		{"(text :string) -> {sentiment :string, score :float}", nil, variantJSON},
		{"() -> [:int]", nil, variantJSON},
		{"() -> :float", nil, variantJSON},
		{"() -> :int", nil, variantJSON},
		{"() -> :bool", nil, variantJSON},
		{"", tools, variantToolText},
		{"() -> :string", tools, variantToolText},
		{"() -> {result :int}", tools, variantToolJSON},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%d", tc.sig, len(tc.tools)), func(t *testing.T) {
			prompt := "x"
			if strings.HasPrefix(tc.sig, "(text") {
				prompt = "{{text}}"
			}
			a := mustText(t, Spec{Prompt: prompt, Signature: tc.sig, Tools: tc.tools})
			if got := a.textVariant(); got != tc.want {
				t.Fatalf("variant = %s, want %s", got, tc.want)
			}
		})
	}
}

// The "Basic Usage" examples of text-mode.md.

func TestTextModePlainText(t *testing.T) {
	a := mustText(t, Spec{Prompt: "Summarize this article: {{text}}"})
	st, err, m := run(t, a, RunOptions{Context: map[string]any{"text": "Long article..."}},
		llmtest.Text("The article discusses...").WithUsage(30, 5))
	if err != nil {
		t.Fatal(err)
	}
	if st.Return != "The article discusses..." {
		t.Fatalf("return = %#v", st.Return)
	}
	req := lastReq(t, m)
	if got := req.Messages[0].Text(); got != "Summarize this article: Long article..." {
		t.Fatalf("user message = %q", got)
	}
	if len(req.Tools) != 0 {
		t.Fatalf("tools offered: %v", req.Tools)
	}
	if want := textCorePrompt + "\n\n" + textPlainFormat; req.System != want {
		t.Fatalf("system = %q, want %q", req.System, want)
	}
	if st.Mode != messages.ModeText || st.Usage.Turns != 1 || st.Usage.InputTokens != 30 || st.Usage.OutputTokens != 5 || len(st.Trace) != 1 {
		t.Fatalf("step = mode %q usage %+v trace %d", st.Mode, st.Usage, len(st.Trace))
	}
	if st.Memory != nil {
		t.Fatalf("memory = %v, want none", st.Memory)
	}
}

func TestTextModeJSON(t *testing.T) {
	a := mustText(t, Spec{Prompt: "Classify the sentiment of: {{text}}",
		Signature: "(text :string) -> {sentiment :string, score :float}"})
	st, err, m := run(t, a, RunOptions{Context: map[string]any{"text": "I love this product!"}},
		llmtest.Text("```json\n{\"sentiment\": \"positive\", \"score\": 0.95}\n```"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"sentiment": "positive", "score": 0.95}
	if !reflect.DeepEqual(st.Return, want) {
		t.Fatalf("return = %#v", st.Return)
	}
	sys := lastReq(t, m).System
	contains(t, sys, "{sentiment :string, score :float}", `"required":["sentiment","score"]`, `"score":{"type":"number"}`)
}

func TestTextModeJSONRetry(t *testing.T) {
	a := mustText(t, Spec{Prompt: "Classify {{text}}", Signature: "(text :string) -> {sentiment :string, score :float}", Limits: Limits{MaxTurns: 3}})
	st, err, m := run(t, a, RunOptions{Context: map[string]any{"text": "meh"}},
		llmtest.Text("I'd say it is neutral."),
		llmtest.Text(`{"sentiment": "neutral"}`).Expect(llmtest.LastUserContains(
			"Could not parse a JSON answer: no JSON value found in the answer",
			"Reply with only a JSON value of type {sentiment :string, score :float}.",
			"Turn 2 of 3 (1 remaining)")),
		llmtest.Text(`{"sentiment": "neutral", "score": 0.5}`).Expect(llmtest.LastUserContains(
			"Return type validation failed:", "score", "Turn 3 of 3 (0 remaining)", textLastTurn)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Return, map[string]any{"sentiment": "neutral", "score": 0.5}) {
		t.Fatalf("return = %#v", st.Return)
	}
	if len(m.Requests()) != 3 || st.Usage.Turns != 3 || st.Trace[0].Error == "" || st.Trace[1].Error == "" {
		t.Fatalf("turns: %d requests, usage %+v, trace errors %q %q", len(m.Requests()), st.Usage, st.Trace[0].Error, st.Trace[1].Error)
	}
}

func TestTextModeJSONPrimitives(t *testing.T) {
	tests := []struct {
		sig, reply string
		want       any
	}{
		{"() -> :int", "42", int64(42)},
		{"() -> :float", "The score is:\n```json\n0.8\n```", 0.8},
		{"() -> :float", "1", int64(1)},
		{"() -> :bool", " true ", true},
		{"() -> [:string]", `["a","b"]`, []any{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.sig+" "+tc.reply, func(t *testing.T) {
			a := mustText(t, Spec{Prompt: "Answer", Signature: tc.sig})
			st, err, m := run(t, a, RunOptions{}, llmtest.Text(tc.reply))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(st.Return, tc.want) {
				t.Fatalf("return = %#v, want %#v", st.Return, tc.want)
			}
			if _, prim := tc.want.(bool); prim {
				contains(t, lastReq(t, m).System, "a bare number or boolean is fine")
			}
		})
	}
}

func TestTextModeJSONMaxTurns(t *testing.T) {
	a := mustText(t, Spec{Prompt: "Answer", Signature: "() -> {n :int}", Limits: Limits{MaxTurns: 2}})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Text("no"), llmtest.Text(`{"n": "x"}`))
	wantReason(t, st, err, ReasonMaxTurns)
	if !errors.Is(err, ErrMaxTurns) {
		t.Fatal("errors.Is ErrMaxTurns")
	}
	contains(t, st.Fail.Details["last_error"].(string), "Return type validation failed", "n: expected integer")
}

func TestTextModeWarnOnlyAcceptsInvalidJSONShape(t *testing.T) {
	a := mustText(t, Spec{Prompt: "Answer", Signature: "() -> {n :int}", Validation: signature.WarnOnly})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Text(`{"n": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Warnings) == 0 || !strings.Contains(st.Warnings[0], "return n") {
		t.Fatalf("warnings = %q", st.Warnings)
	}
}

func TestTextModeEmptyAnswerRetried(t *testing.T) {
	a := mustText(t, Spec{Prompt: "Say hi", Limits: Limits{MaxTurns: 2}})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Text("  "),
		llmtest.Text("hi").Expect(llmtest.LastUserContains(textEmptyAnswer)))
	if err != nil || st.Return != "hi" {
		t.Fatalf("return %#v err %v", st.Return, err)
	}
}

func TestTextModeToolText(t *testing.T) {
	var got atomic.Value
	search := FuncSig("(query :string) -> [{title :string, snippet :string}]", func(_ context.Context, args map[string]any) (any, error) {
		got.Store(args["query"])
		return []any{map[string]any{"title": "Elixir", "snippet": "A dynamic, functional language"}}, nil
	}).WithDescription("Search the web")
	a := mustText(t, Spec{Prompt: "Use the search tool to find info about Elixir, then summarize.", Tools: map[string]Tool{"search": search}})
	st, err, m := run(t, a, RunOptions{},
		llmtest.ToolCall("search", map[string]any{"query": "Elixir"}),
		llmtest.Text("Elixir is a dynamic, functional language..."))
	if err != nil {
		t.Fatal(err)
	}
	if st.Return != "Elixir is a dynamic, functional language..." || got.Load() != "Elixir" {
		t.Fatalf("return %#v, tool got %v", st.Return, got.Load())
	}
	reqs := m.Requests()
	ts := reqs[0].Tools
	if len(ts) != 1 || ts[0].Name != "search" || ts[0].Description != "Search the web\nReturns: [{title :string, snippet :string}]" {
		t.Fatalf("tool specs = %+v", ts)
	}
	contains(t, reqs[0].System, textToolsPrompt)
	// the second request carries the assistant's tool call and our result
	msgs := reqs[1].Messages
	if len(msgs) != 3 || len(msgs[1].ToolUses()) != 1 {
		t.Fatalf("messages = %+v", msgs)
	}
	tr, ok := msgs[2].Content[0].(llm.ToolResult)
	if !ok || tr.ToolUseID != msgs[1].ToolUses()[0].ID || tr.IsError {
		t.Fatalf("tool result = %#v", msgs[2].Content[0])
	}
	if tr.Content != `[{"snippet":"A dynamic, functional language","title":"Elixir"}]` {
		t.Fatalf("tool result content = %s", tr.Content)
	}
	if st.Usage.ToolCalls != 1 || len(st.Trace) != 2 || len(st.Trace[0].ToolCalls) != 1 || st.Trace[0].ToolCalls[0].Name != "search" {
		t.Fatalf("usage %+v trace %+v", st.Usage, st.Trace)
	}
}

func TestTextModeToolJSON(t *testing.T) {
	a := mustText(t, Spec{Prompt: "What is 17 + 25? Use the add tool.", Signature: "() -> {result :int}",
		Tools: map[string]Tool{"add": addTool()}})
	st, err, m := run(t, a, RunOptions{},
		llmtest.ToolCall("add", map[string]any{"a": int64(17), "b": int64(25)}),
		llmtest.Text(`{"result": 42}`).Expect(func(req llm.Request) error {
			tr := req.Messages[2].Content[0].(llm.ToolResult)
			if tr.Content != "42" {
				return fmt.Errorf("tool result %q", tr.Content)
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Return.(map[string]any)["result"] != int64(42) {
		t.Fatalf("return = %#v", st.Return)
	}
	schema := m.Requests()[0].Tools[0].InputSchema
	if got := jsonText(schema); got != `{"properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"type":"object"}` {
		t.Fatalf("schema = %s", got)
	}
}

func TestTextModeMultipleToolsPerTurn(t *testing.T) {
	tools := map[string]Tool{
		"multiply": FuncSig("(a :int, b :int) -> :int", func(_ context.Context, args map[string]any) (any, error) {
			return args["a"].(int64) * args["b"].(int64), nil
		}).WithDescription("Multiply two numbers"),
		"subtract": FuncSig("(a :int, b :int) -> :int", func(_ context.Context, args map[string]any) (any, error) {
			return args["a"].(int64) - args["b"].(int64), nil
		}).WithDescription("Subtract b from a"),
	}
	a := mustText(t, Spec{Prompt: "Calculate (6 * 7) - 10", Signature: "() -> {result :int}", Tools: tools, Limits: Limits{MaxTurns: 5}})
	st, err, _ := run(t, a, RunOptions{},
		// two independent calls in one turn (the second is not needed, but
		// shows results come back in call order)
		llmtest.ToolCall("multiply", map[string]any{"a": int64(6), "b": int64(7)}).WithToolCall("multiply", map[string]any{"a": "2", "b": int64(3)}),
		llmtest.ToolCall("subtract", map[string]any{"a": int64(42), "b": int64(10)}).Expect(func(req llm.Request) error {
			res := req.Messages[len(req.Messages)-1].Content
			if len(res) != 2 || res[0].(llm.ToolResult).Content != "42" || res[1].(llm.ToolResult).Content != "6" {
				return fmt.Errorf("results %+v", res)
			}
			return nil
		}),
		llmtest.Text(`{"result": 32}`))
	if err != nil {
		t.Fatal(err)
	}
	if st.Return.(map[string]any)["result"] != int64(32) {
		t.Fatalf("return = %#v", st.Return)
	}
	tc := st.Trace[0].ToolCalls
	if st.Usage.ToolCalls != 3 || len(tc) != 2 || tc[1].Args["a"] != int64(2) {
		t.Fatalf("usage %+v calls %+v", st.Usage, tc)
	}
	// the coercion of "2" is a warning, as in PTC-Lisp mode
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "multiply: ") {
		t.Fatalf("warnings = %q", st.Warnings)
	}
}

func TestTextModeToolErrors(t *testing.T) {
	tools := map[string]Tool{
		"risky": FuncSig("() -> :string", func(context.Context, map[string]any) (any, error) {
			return nil, errors.New("service unavailable")
		}).WithDescription("Call external service"),
		"panicky": Func(func(context.Context, map[string]any) (any, error) { panic("boom") }),
		"typed":   FuncSig("(n :int) -> :int", func(_ context.Context, args map[string]any) (any, error) { return args["n"], nil }),
	}
	a := mustText(t, Spec{Prompt: "Try", Tools: tools})
	st, err, _ := run(t, a, RunOptions{},
		llmtest.ToolCall("risky", nil).
			WithToolCall("nope", map[string]any{}).
			WithToolCall("panicky", map[string]any{}).
			WithToolCall("typed", map[string]any{"n": "abc"}),
		llmtest.Text("recovered").Expect(func(req llm.Request) error {
			res := req.Messages[2].Content
			want := []string{
				`{"error":"service unavailable"}`,
				`{"error":"unknown tool \"nope\"; available tools: panicky, risky, typed"}`,
				`{"error":"panic: boom"}`,
				`{"error":"tool validation errors:`,
			}
			for i, w := range want {
				r := res[i].(llm.ToolResult)
				if !r.IsError || !strings.HasPrefix(r.Content, w) {
					return fmt.Errorf("result %d = %+v, want prefix %s", i, r, w)
				}
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Return != "recovered" || len(st.Trace[0].ToolCalls) != 4 || st.Trace[0].ToolCalls[1].Error == "" {
		t.Fatalf("return %#v trace %+v", st.Return, st.Trace[0].ToolCalls)
	}
}

func TestTextModeMaxToolCalls(t *testing.T) {
	var calls atomic.Int64
	echo := FuncSig("(q :string) -> :string", func(_ context.Context, args map[string]any) (any, error) {
		calls.Add(1)
		return args["q"], nil
	})
	a := mustText(t, Spec{Prompt: "Search", Tools: map[string]Tool{"echo": echo}, Limits: Limits{MaxToolCalls: 3}})
	st, err, _ := run(t, a, RunOptions{},
		llmtest.ToolCall("echo", map[string]any{"q": "1"}).WithToolCall("echo", map[string]any{"q": "2"}),
		llmtest.ToolCall("echo", map[string]any{"q": "3"}).WithToolCall("echo", map[string]any{"q": "4"}).Expect(func(req llm.Request) error {
			return nil
		}),
		llmtest.Text("done").Expect(func(req llm.Request) error {
			res := req.Messages[len(req.Messages)-1].Content
			if r := res[0].(llm.ToolResult); r.IsError || r.Content != `"3"` {
				return fmt.Errorf("first result %+v", r)
			}
			if r := res[1].(llm.ToolResult); !r.IsError || !strings.Contains(r.Content, "max_tool_calls limit of 3 reached") {
				return fmt.Errorf("second result %+v", r)
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 || st.Usage.ToolCalls != 4 {
		t.Fatalf("tool ran %d times, usage %+v", calls.Load(), st.Usage)
	}
}

func TestTextModeMaxTurnsWithTools(t *testing.T) {
	a := mustText(t, Spec{Prompt: "Loop", Tools: map[string]Tool{"add": addTool()}, Limits: Limits{MaxTurns: 2}})
	var ran atomic.Int64
	a.tools["add"].tool.fn = func(context.Context, map[string]any) (any, error) { ran.Add(1); return int64(1), nil }
	st, err, _ := run(t, a, RunOptions{},
		llmtest.ToolCall("add", map[string]any{"a": int64(1), "b": int64(1)}),
		llmtest.ToolCall("add", map[string]any{"a": int64(1), "b": int64(1)}).Expect(func(req llm.Request) error {
			last := req.Messages[len(req.Messages)-1]
			if !strings.Contains(last.Text(), "Turn 2 of 2 (0 remaining)\n"+textLastTurn) {
				return fmt.Errorf("no last-turn warning in %q", last.Text())
			}
			return nil
		}))
	wantReason(t, st, err, ReasonMaxTurns)
	if ran.Load() != 1 {
		t.Fatalf("tool ran %d times; calls on the last turn must not run", ran.Load())
	}
	if st.Fail.Details["last_error"] != "tool calls on the last turn were not executed" {
		t.Fatalf("details = %v", st.Fail.Details)
	}
}

func TestTextModeToolSchemas(t *testing.T) {
	tools := map[string]Tool{
		"search": FuncSig("(query :string, limit :int?, _tenant :string?) -> [{id :int, title :string, _score :float}]",
			func(context.Context, map[string]any) (any, error) { return []any{}, nil }).WithDescription("Search the database"),
		"ping": Func(func(context.Context, map[string]any) (any, error) { return "pong", nil }),
	}
	a := mustText(t, Spec{Prompt: "x", Tools: tools})
	specs := a.nativeToolSpecs()
	got := jsonText(specs)
	want := `[{"Name":"ping","Description":"","InputSchema":{"properties":{},"type":"object"}},` +
		`{"Name":"search","Description":"Search the database\nReturns: [{id :int, title :string}]",` +
		`"InputSchema":{"properties":{"limit":{"type":["integer","null"]},"query":{"type":"string"}},"required":["query"],"type":"object"}}]`
	if got != want {
		t.Fatalf("specs =\n%s\nwant\n%s", got, want)
	}
}

func TestTextModeConstructionRules(t *testing.T) {
	tests := []struct {
		name  string
		spec  Spec
		field string
		msg   string
	}{
		{"unused param", Spec{Prompt: "Analyze {{text}}", Signature: "(text :string, user :string) -> {result :string}"},
			"prompt", `Text mode requires all signature params in prompt. Unused: ["user"]`},
		{"section field", Spec{Prompt: "{{#items}}{{unknown}}{{/items}}", Signature: "(items [{name :string}]) -> {count :int}"},
			"prompt", "{{unknown}} inside {{#items}} not found in element type"},
		{"dot on maps", Spec{Prompt: "{{#items}}{{.}}{{/items}}", Signature: "(items [{name :string}]) -> {count :int}"},
			"prompt", "{{.}} inside {{#items}} - use {{field}} instead (list contains maps)"},
		{"firewalled output", Spec{Prompt: "x", Signature: "{count :int, _ids [:int], rows [{_secret :string}]}"},
			"signature", "text mode does not support firewalled fields in the output signature: _ids, rows[]._secret"},
		{"template syntax", Spec{Prompt: "{{#a}}x"}, "prompt", "section {{#a}} is not closed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newText(tc.spec)
			wantSpecError(t, err, tc.field, tc.msg)
		})
	}
	// the valid examples of the document construct
	for _, s := range []Spec{
		{Prompt: "Analyze {{text}} for {{user}}", Signature: "(text :string, user :string) -> {result :string}"},
		{Prompt: "{{#items}}{{name}}{{/items}}", Signature: "(items [{name :string, price :float}]) -> {count :int}"},
		{Prompt: "{{#tags}}{{.}}{{/tags}}", Signature: "(tags [:string]) -> {count :int}"},
		{Prompt: "{{#items}}Process items...{{/items}}\n{{^items}}No items to process.{{/items}}", Signature: "(items [:string]) -> {status :string}"},
	} {
		mustText(t, s)
	}
}

// New itself applies the text-mode rules.
func TestTextModeNewChecksSpec(t *testing.T) {
	_, err := New(Spec{Prompt: "x", Signature: "{_ids [:int]}", Output: OutputText})
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "agent: signature: text mode does not support firewalled fields") {
		t.Fatalf("New: %v", err)
	}
	_, err = New(Spec{Prompt: "Analyze {{text}}", Signature: "(text :string, user :string) -> :string", Output: OutputText})
	if err == nil || err.Error() != `agent: prompt: Text mode requires all signature params in prompt. Unused: ["user"]` {
		t.Fatalf("New: %v", err)
	}
	// the same spec is fine in PTC-Lisp mode
	mustNew(t, Spec{Prompt: "Analyze {{text}}", Signature: "(text :string, user :string) -> :string"})
}

func TestTextModeSections(t *testing.T) {
	a := mustText(t, Spec{
		Prompt:    "Categorize these products:\n{{#products}}\n- {{name}}: ${{price}}\n{{/products}}\n",
		Signature: "(products [{name :string, price :float}]) -> {categories [{name :string, category :string}]}",
	})
	ctx := map[string]any{"products": []any{map[string]any{"name": "Widget", "price": 9.99}, map[string]any{"name": "Gadget", "price": 19.99}}}
	st, err, m := run(t, a, RunOptions{Context: ctx},
		llmtest.Text(`{"categories": [{"name": "Widget", "category": "tools"}, {"name": "Gadget", "category": "electronics"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lastReq(t, m).Messages[0].Text(); got != "Categorize these products:\n- Widget: $9.99\n- Gadget: $19.99\n" {
		t.Fatalf("prompt = %q", got)
	}
	if n := len(st.Return.(map[string]any)["categories"].([]any)); n != 2 {
		t.Fatalf("categories = %d", n)
	}
}

func TestTextModeInputValidation(t *testing.T) {
	a := mustText(t, Spec{Prompt: "{{n}}", Signature: "(n :int) -> :string"})
	st, err, m := run(t, a, RunOptions{Context: map[string]any{"n": "abc"}})
	wantReason(t, st, err, ReasonInputValidation)
	if len(m.Requests()) != 0 {
		t.Fatal("the model was called")
	}
}

func TestTextModeFirewall(t *testing.T) {
	const canary = "CANARY-7f3e9a"
	lookup := FuncSig("(id :int) -> {name :string, _token :string}", func(context.Context, map[string]any) (any, error) {
		return map[string]any{"name": "Ann", "_token": canary + "-tool"}, nil
	})
	a := mustText(t, Spec{Prompt: "Look up {{id}} ({{_key}})", Signature: "(id :int, _key :string) -> {name :string}",
		Tools: map[string]Tool{"lookup": lookup}})
	st, err, m := run(t, a, RunOptions{Context: map[string]any{"id": int64(1), "_key": canary}},
		llmtest.ToolCall("lookup", map[string]any{"id": int64(1)}).Expect(llmtest.NoneContain(canary)),
		llmtest.Text(`{"name": "Ann"}`).Expect(llmtest.NoneContain(canary)))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Requests()[0].Messages[0].Text(); got != "Look up 1 (<Firewalled>)" {
		t.Fatalf("prompt = %q", got)
	}
	// Go callers still see the firewalled tool result in the trace
	if r := st.Trace[0].ToolCalls[0].Result.(map[string]any); r["_token"] != canary+"-tool" {
		t.Fatalf("trace result = %v", r)
	}
}

func TestTextModeLLMErrorAndRetry(t *testing.T) {
	retry := &llm.RetryPolicy{MaxAttempts: 2, Sleep: func(context.Context, time.Duration) error { return nil }}
	a := mustText(t, Spec{Prompt: "x", LLMRetry: retry})
	st, err, _ := run(t, a, RunOptions{},
		llmtest.Error(&llm.ProviderError{StatusCode: 529, Retryable: true}),
		llmtest.Text("ok"))
	if err != nil || st.Return != "ok" || st.Usage.Requests != 2 || st.Usage.Turns != 1 {
		t.Fatalf("return %#v err %v usage %+v", st.Return, err, st.Usage)
	}
	st, err, _ = run(t, a, RunOptions{}, llmtest.Error(errors.New("bad request")))
	wantReason(t, st, err, ReasonLLMError)
}

func TestTextModeTurnBudgetAndTimeout(t *testing.T) {
	a := mustText(t, Spec{Prompt: "x", Signature: "() -> {n :int}", Limits: Limits{MaxTurns: 5, TurnBudget: 2}})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Text("?"), llmtest.Text("?"))
	wantReason(t, st, err, ReasonTurnBudget)

	b := mustText(t, Spec{Prompt: "x", Limits: Limits{MissionTimeout: 1}, LLMRetry: &llm.RetryPolicy{MaxAttempts: 1}})
	st, err = b.Run(bg, RunOptions{Model: llmtest.New(llmtest.Hang())})
	wantReason(t, st, err, ReasonMissionTimeout)
}

func TestTextModeObserverAndTrace(t *testing.T) {
	var kinds []EventKind
	obs := ObserverFunc(func(_ context.Context, e Event) { kinds = append(kinds, e.Kind) })
	a := mustText(t, Spec{Prompt: "x", Tools: map[string]Tool{"add": addTool()}})
	_, err, _ := run(t, a, RunOptions{Observer: obs, Debug: true},
		llmtest.ToolCall("add", map[string]any{"a": int64(1), "b": int64(2)}), llmtest.Text("3"))
	if err != nil {
		t.Fatal(err)
	}
	want := []EventKind{EventRunStart, EventTurnStart, EventLLMStart, EventLLMStop, EventToolStart, EventToolStop, EventTurnStop,
		EventTurnStart, EventLLMStart, EventLLMStop, EventTurnStop, EventRunStop}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("events = %v\nwant %v", kinds, want)
	}
}

// Piping between modes (text-mode.md): text → PTC-Lisp, and text with
// tools → text without tools, through Then and RunOptions.Context.
func TestTextModePiping(t *testing.T) {
	extract := mustText(t, Spec{Prompt: "Extract entities from: {{text}}",
		Signature: "(text :string) -> {entities [:string], topic :string}"})
	lookup := FuncSig("(topic :string) -> :map", func(_ context.Context, args map[string]any) (any, error) {
		return map[string]any{"topic": args["topic"], "size": int64(3)}, nil
	})
	process := mustNew(t, Spec{Prompt: "Look up details for {{topic}}",
		Signature: "(entities [:string], topic :string) -> {details [:map]}", Tools: map[string]Tool{"lookup": lookup}})
	m := llmtest.NewT(t,
		llmtest.Text(`{"entities": ["Go", "NATS"], "topic": "messaging"}`),
		llmtest.Code(`(return {:details [(tool/lookup {:topic ctx/topic})]})`).Expect(llmtest.LastUserContains("Look up details for messaging")),
	)
	st1, err := extract.Run(bg, RunOptions{Model: m, Context: map[string]any{"text": "Go and NATS for messaging"}})
	if err != nil {
		t.Fatal(err)
	}
	st2, err := Then(bg, st1, process, RunOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	d := st2.Return.(map[string]any)["details"].([]any)[0].(map[string]any)
	if d["topic"] != "messaging" || st2.Mode != messages.ModeLisp || st1.Mode != messages.ModeText {
		t.Fatalf("step2 = %+v", st2)
	}

	// PTC-Lisp → text: a Lisp step feeds a text-mode summary
	summarize := mustText(t, Spec{Prompt: "Write a one-sentence summary about {{city}} (pop: {{population}}, in {{country}})",
		Signature: "(city :string, population :int, country :string) -> {summary :string}"})
	cityTool := FuncSig("(city :string) -> {population :int, country :string}", func(context.Context, map[string]any) (any, error) {
		return map[string]any{"population": int64(37400000), "country": "Japan"}, nil
	}).WithDescription("Look up city data")
	gather := mustText(t, Spec{Prompt: "Look up the population of {{city}}",
		Signature: "(city :string) -> {city :string, population :int, country :string}", Tools: map[string]Tool{"lookup": cityTool}})
	m2 := llmtest.NewT(t,
		llmtest.ToolCall("lookup", map[string]any{"city": "Tokyo"}),
		llmtest.Text(`{"city": "Tokyo", "population": 37400000, "country": "Japan"}`),
		llmtest.Text(`{"summary": "Tokyo is Japan's capital."}`).Expect(llmtest.LastUserContains("about Tokyo (pop: 37400000, in Japan)")),
	)
	s1, err := gather.Run(bg, RunOptions{Model: m2, Context: map[string]any{"city": "Tokyo"}})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Then(bg, s1, summarize, RunOptions{Model: m2})
	if err != nil {
		t.Fatal(err)
	}
	if s2.Return.(map[string]any)["summary"] != "Tokyo is Japan's capital." {
		t.Fatalf("summary = %#v", s2.Return)
	}

	// Lisp → text
	lispStep := &messages.Step{Return: map[string]any{"text": "hello"}, Signature: "{text :string}"}
	s3, err := Then(bg, lispStep, mustText(t, Spec{Prompt: "Echo {{text}}", Signature: "(text :string) -> :string"}),
		RunOptions{Model: llmtest.NewT(t, llmtest.Text("hello").Expect(llmtest.LastUserContains("Echo hello")))})
	if err != nil || s3.Return != "hello" {
		t.Fatalf("s3 %#v %v", s3.Return, err)
	}
	// a failed step chains into a failure without a model call
	s4, err := Then(bg, &messages.Step{Fail: &messages.Fail{Reason: "x", Message: "y"}}, summarize, RunOptions{Model: llmtest.NewT(t)})
	wantReason(t, s4, err, ReasonChainedFailure)
}

// A text-mode agent used as a sub-agent tool of a PTC-Lisp agent.
func TestTextModeAsSubAgent(t *testing.T) {
	child := mustText(t, Spec{Name: "sentiment", Prompt: "Sentiment of {{text}}", Signature: "(text :string) -> {label :string}"})
	parent := mustNew(t, Spec{Prompt: "Classify", Signature: "{label :string}", Tools: map[string]Tool{"sentiment": child.AsTool(ToolOptions{})}})
	st, err, _ := run(t, parent, RunOptions{},
		llmtest.Code(`(return (tool/sentiment {:text "great"}))`),
		llmtest.Text(`{"label": "positive"}`).Expect(llmtest.LastUserContains("Sentiment of great")))
	if err != nil {
		t.Fatal(err)
	}
	if st.Return.(map[string]any)["label"] != "positive" || st.Trace[0].ToolCalls[0].Child.Mode != messages.ModeText {
		t.Fatalf("return %#v", st.Return)
	}
	if st.Usage.Requests != 2 {
		t.Fatalf("usage = %+v", st.Usage)
	}
}

func TestTextModeSystemPromptCustomization(t *testing.T) {
	a := mustText(t, Spec{Prompt: "x", SystemPrompt: SystemPrompt{Prefix: "PRE", Suffix: "SUF", Transform: strings.ToUpper}})
	if got := a.textSystemPrompt(a.textVariant()); got != strings.ToUpper("PRE\n\n"+textCorePrompt+"\n\n"+textPlainFormat+"\n\nSUF") {
		t.Fatalf("system = %q", got)
	}
	b := mustText(t, Spec{Prompt: "x", SystemPrompt: SystemPrompt{Override: "ONLY"}})
	if got := b.textSystemPrompt(b.textVariant()); got != "ONLY" {
		t.Fatalf("override = %q", got)
	}
	c := mustText(t, Spec{Prompt: "x", Signature: "{a :int}", SystemPrompt: SystemPrompt{OutputFormat: "FORMAT"}})
	if got := c.textSystemPrompt(c.textVariant()); got != textCorePrompt+"\n\nFORMAT" {
		t.Fatalf("output format = %q", got)
	}
}

func lastReq(t *testing.T, m *llmtest.Model) llm.Request {
	t.Helper()
	req, ok := m.LastRequest()
	if !ok {
		t.Fatal("no request")
	}
	return req
}

// Tool-call arguments the provider client cannot decode (OpenAI's
// invalid_tool_call) are fed back to the model at the cost of a turn.
func TestTextModeInvalidToolCallFedBack(t *testing.T) {
	a := mustText(t, Spec{Prompt: "Add", Signature: "() -> {result :int}", Tools: map[string]Tool{"add": addTool()}, Limits: Limits{MaxTurns: 3}})
	st, err, m := run(t, a, RunOptions{},
		llmtest.Error(&llm.ProviderError{Provider: "openai", Type: "invalid_tool_call", Message: "tool call arguments are not a JSON object"}),
		llmtest.Text(`{"result": 3}`).Expect(func(req llm.Request) error {
			if len(req.Messages) != 1 {
				return fmt.Errorf("%d messages, want the feedback merged into the first user message", len(req.Messages))
			}
			txt := req.Messages[0].Text()
			if !strings.Contains(txt, "Your tool call could not be used: tool call arguments are not a JSON object") || !strings.Contains(txt, "Turn 2 of 3") {
				return fmt.Errorf("feedback missing: %q", txt)
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Usage.Turns != 2 || len(st.Trace) != 2 || st.Trace[0].Error == "" || len(m.Requests()) != 2 {
		t.Fatalf("usage %+v trace %d", st.Usage, len(st.Trace))
	}
	// on the last turn it is an llm_error
	b := mustText(t, Spec{Prompt: "Add", Tools: map[string]Tool{"add": addTool()}, Limits: Limits{MaxTurns: 1}})
	st, err, _ = run(t, b, RunOptions{}, llmtest.Error(&llm.ProviderError{Type: "invalid_tool_call", Message: "bad"}))
	wantReason(t, st, err, ReasonLLMError)
}

func TestTextPreview(t *testing.T) {
	a := mustText(t, Spec{Prompt: "Classify {{#tags}}{{.}} {{/tags}}for {{_k}}", Signature: "(tags [:string], _k :string) -> {primary_tag :string}",
		Tools: map[string]Tool{"add": addTool()}})
	in, _ := resolveInput(RunOptions{Context: map[string]any{"tags": []any{"a", "b"}, "_k": "secret-key"}})
	p, err := a.textPreview(in)
	if err != nil {
		t.Fatal(err)
	}
	if p.User != "Classify a b for <Firewalled>" || !strings.Contains(p.System, textToolsPrompt) || len(p.ToolSchemas) != 1 {
		t.Fatalf("preview = %+v", p)
	}
}

// A tool that ignores its context is abandoned at the program timeout; the
// model gets an error and the run goes on.
func TestTextModeToolTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stuck := Func(func(context.Context, map[string]any) (any, error) { <-release; return "late", nil })
	a := mustText(t, Spec{Prompt: "x", Tools: map[string]Tool{"stuck": stuck, "add": addTool()}, Limits: Limits{ProgramTimeout: 300 * time.Millisecond}})
	st, err, _ := run(t, a, RunOptions{},
		llmtest.ToolCall("stuck", nil).WithToolCall("add", map[string]any{"a": int64(1), "b": int64(2)}),
		llmtest.Text("gave up").Expect(func(req llm.Request) error {
			res := req.Messages[2].Content
			r0, r1 := res[0].(llm.ToolResult), res[1].(llm.ToolResult)
			if !r0.IsError || !strings.Contains(r0.Content, "did not finish within the program_timeout of 300ms") || r1.Content != "3" {
				return fmt.Errorf("results %+v %+v", r0, r1)
			}
			return nil
		}))
	if err != nil || st.Return != "gave up" {
		t.Fatalf("return %#v err %v", st.Return, err)
	}
	if c := st.Trace[0].ToolCalls; len(c) != 2 || c[0].Error == "" || c[1].Result != int64(3) {
		t.Fatalf("trace calls %+v", c)
	}
}

func TestTextModeToolNamesForProviders(t *testing.T) {
	echo := func(v string) Tool {
		return FuncSig("() -> :string", func(context.Context, map[string]any) (any, error) { return v, nil })
	}
	a := mustText(t, Spec{Prompt: "x", Tools: map[string]Tool{"get.user": echo("dot"), "get_user": echo("underscore"), "ok-name": echo("ok")}})
	var names []string
	for _, s := range a.nativeToolSpecs() {
		names = append(names, s.Name)
	}
	if !reflect.DeepEqual(names, []string{"get_user_2", "get_user", "ok-name"}) {
		t.Fatalf("names = %v", names)
	}
	st, err, _ := run(t, a, RunOptions{},
		llmtest.ToolCall("get_user_2", nil).WithToolCall("get_user", nil),
		llmtest.Text("done").Expect(func(req llm.Request) error {
			res := req.Messages[2].Content
			if res[0].(llm.ToolResult).Content != `"dot"` || res[1].(llm.ToolResult).Content != `"underscore"` {
				return fmt.Errorf("results %+v", res)
			}
			return nil
		}))
	if err != nil || st.Trace[0].ToolCalls[0].Name != "get.user" {
		t.Fatalf("err %v trace %+v", err, st.Trace)
	}
}

// Nested sections multiply; a prompt past the limit fails the run
// without calling the model.
func TestTextModePromptTooLarge(t *testing.T) {
	row := make([]any, 300)
	for i := range row {
		row[i] = "0123456789"
	}
	a := mustText(t, Spec{Prompt: "{{#l}}{{#l}}{{#l}}{{.}}{{/l}}{{/l}}{{/l}}", Signature: "(l [:string]) -> :string"})
	// 300^3 * 10 bytes = 270 MB if rendered in full
	st, err, m := run(t, a, RunOptions{Context: map[string]any{"l": row}})
	wantReason(t, st, err, ReasonPromptTooLarge)
	if len(m.Requests()) != 0 || !strings.Contains(st.Fail.Message, "rendered prompt too large: more than 8388608 bytes") {
		t.Fatalf("fail %+v requests %d", st.Fail, len(m.Requests()))
	}
}
