package agent

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// shopCatalog is the seeds' tool catalogue: the parent may only reach
// these tools through a child it spawns.
func shopCatalog(calls *atomic.Int64) map[string]map[string]Tool {
	fn := func(result any) Tool {
		return Func(func(context.Context, map[string]any) (any, error) {
			calls.Add(1)
			return result, nil
		})
	}
	return map[string]map[string]Tool{
		"email": {
			"list_emails": fn([]any{map[string]any{"id": int64(7), "urgent": true}, map[string]any{"id": int64(8), "urgent": false}}),
			"read_email":  fn("body"),
		},
		"calendar": {
			"find_slots":     fn([]any{"mon 10:00"}),
			"create_meeting": fn(map[string]any{"ok": true}),
		},
	}
}

// userText is the first user message of a request.
func userText(req llm.Request) string {
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			return m.Text()
		}
	}
	return ""
}

// expectUser checks a request's first user message contains every one of
// want and none of not.
func expectUser(want []string, not ...string) func(llm.Request) error {
	return func(req llm.Request) error {
		text := userText(req)
		for _, w := range want {
			if !strings.Contains(text, w) {
				return fmt.Errorf("first user message lacks %q:\n%s", w, text)
			}
		}
		for _, n := range not {
			if strings.Contains(text, n) {
				return fmt.Errorf("first user message has %q:\n%s", n, text)
			}
		}
		return nil
	}
}

// The seeds' spawn_agent example in Go: the parent sees only spawn_agent
// over the catalogue, spawns a child with the email tools and then one
// with the calendar tools given the first child's result, and returns
// both. Each child sees only its chosen tools, runs on the parent's
// model, is traced as its call's Child and is counted in the usage.
func TestSpawnAgentSeedsExample(t *testing.T) {
	var calls atomic.Int64
	parent := mustNew(t, Spec{Name: "orchestrator", Prompt: "Find urgent emails, then schedule follow-up meetings",
		Signature: "{emails [:int], meetings :any}",
		Tools:     map[string]Tool{SpawnToolName: SpawnTool(shopCatalog(&calls), SpawnOptions{})}})
	m := llmtest.NewT(t,
		llmtest.Code(`(let [search   (tool/spawn_agent {:prompt "Find urgent emails" :tools ["email"] :signature "{email_ids [:int]}"})
      meetings (tool/spawn_agent {:prompt "Schedule meetings for {{email_ids}}" :tools ["calendar"] :context search})]
  (return {:emails (:email_ids search) :meetings meetings}))`).
			Expect(expectUser([]string{`spawn_agent(prompt :string, tools ["calendar" | "email"](min 1), context :map?, signature :string?) -> :any`,
				"calendar (create_meeting, find_slots); email (list_emails, read_email)"},
				"- list_emails", "- find_slots")).WithUsage(100, 10),
		llmtest.Code(`(return {:email_ids (map :id (filter :urgent (tool/list_emails {})))})`).
			Expect(expectUser([]string{"- list_emails", "- read_email", "Find urgent emails", "{email_ids [:int]}"}, "- find_slots", "spawn_agent")).WithUsage(20, 2),
		llmtest.Code(`(return {:slot (first (tool/find_slots {})) :for ctx/email_ids})`).
			Expect(expectUser([]string{"- find_slots", "- create_meeting", "Schedule meetings for [7]", "ctx/email_ids"}, "- list_emails")).WithUsage(30, 3),
	)
	st, err := parent.Run(bg, RunOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"emails": []any{int64(7)}, "meetings": map[string]any{"slot": "mon 10:00", "for": []any{int64(7)}}}
	if !reflect.DeepEqual(st.Return, want) {
		t.Fatalf("return %#v, want %#v", st.Return, want)
	}
	if calls.Load() != 2 {
		t.Errorf("catalogue tools called %d times, want 2", calls.Load())
	}
	tc := st.Trace[0].ToolCalls
	if len(tc) != 2 || tc[0].Name != SpawnToolName || tc[0].Child == nil || tc[1].Child == nil {
		t.Fatalf("tool calls %+v", tc)
	}
	if c := tc[0].Child; c.Signature != "() -> {email_ids [:int]}" || c.Trace[0].ToolCalls[0].Name != "list_emails" {
		t.Errorf("first child %+v", c)
	}
	if st.Usage.Requests != 3 || st.Usage.InputTokens != 150 || st.Usage.OutputTokens != 15 {
		t.Errorf("usage %+v, want the three requests of the tree", st.Usage)
	}
}

// A spawned agent obeys the tree's max_depth and turn budget, as a
// declared sub-agent does, and its failure is the tool call's error the
// parent's model reads.
func TestSpawnInheritsLimits(t *testing.T) {
	var calls atomic.Int64
	spawn := map[string]Tool{SpawnToolName: SpawnTool(shopCatalog(&calls), SpawnOptions{})}
	// max_depth 1: the parent is depth 1, a child would be depth 2.
	parent := mustNew(t, Spec{Prompt: "p", Tools: spawn, Limits: messages.Limits{MaxDepth: 1}})
	m := llmtest.NewT(t,
		llmtest.Code(`(tool/spawn_agent {:prompt "c" :tools ["email"]})`),
		llmtest.Code(`(return (:message ctx/fail))`).Expect(llmtest.LastUserContains("max_depth_exceeded")),
	)
	st, err := parent.Run(bg, RunOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	contains(t, st.Return.(string), "spawned agent spawn_agent failed: max nesting depth 1 exceeded")
	if c := st.Trace[0].ToolCalls[0]; c.Child == nil || c.Child.Fail == nil || c.Child.Fail.Reason != ReasonMaxDepth {
		t.Fatalf("tool call %+v", c)
	}

	// turn budget 2: the parent's turn and the child's first take both,
	// so the child cannot take a second.
	parent = mustNew(t, Spec{Prompt: "p", Tools: spawn, Limits: messages.Limits{TurnBudget: 2}})
	m = llmtest.NewT(t,
		llmtest.Code(`(tool/spawn_agent {:prompt "c" :tools ["email"]})`),
		llmtest.Code(`(def x 1)`), // the child's turn 1, no return
	)
	st, _ = parent.Run(bg, RunOptions{Model: m})
	c := st.Trace[0].ToolCalls[0]
	if c.Child == nil || c.Child.Fail == nil || c.Child.Fail.Reason != ReasonTurnBudget {
		t.Fatalf("child %+v", c.Child)
	}
}

// Spawn from a Go tool: the child runs on the caller's model unless it
// names its own, under the tool call, and is the call's Child; a second
// child of the same call is a record of its own. Outside a tool call
// Spawn returns ErrNoRun.
func TestSpawnFromGoTool(t *testing.T) {
	summarizer := mustNew(t, Spec{Name: "summarizer", Prompt: "Summarize {{text}}", Signature: "(text :string) -> {summary :string}"})
	tool := FuncSig("(texts [:string]) -> [:string]", func(ctx context.Context, args map[string]any) (any, error) {
		var out []any
		for _, x := range args["texts"].([]any) {
			st, err := Spawn(ctx, summarizer, map[string]any{"text": x})
			if err != nil {
				return nil, err
			}
			out = append(out, st.Return.(map[string]any)["summary"])
		}
		return out, nil
	}).SpawnsAgents()
	parent := mustNew(t, Spec{Prompt: "p", Tools: map[string]Tool{"summarize_all": tool}})
	m := llmtest.NewT(t,
		llmtest.Code(`(return (tool/summarize_all {:texts ["a" "b"]}))`),
		llmtest.Code(`(return {:summary "A"})`).Expect(expectUser([]string{"Summarize a"})),
		llmtest.Code(`(return {:summary "B"})`).Expect(expectUser([]string{"Summarize b"})),
	)
	st, err := parent.Run(bg, RunOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Return, []any{"A", "B"}) {
		t.Fatalf("return %#v", st.Return)
	}
	tc := st.Trace[0].ToolCalls
	if len(tc) != 2 || tc[0].Name != "summarize_all" || tc[0].Child.Return.(map[string]any)["summary"] != "A" ||
		tc[1].Name != "summarize_all" || tc[1].Args["text"] != "b" || tc[1].Child.Return.(map[string]any)["summary"] != "B" {
		t.Fatalf("tool calls %+v", tc)
	}
	if st.Usage.Requests != 3 {
		t.Errorf("usage %+v", st.Usage)
	}
	if _, err := Spawn(bg, summarizer, nil); !errors.Is(err, ErrNoRun) {
		t.Errorf("Spawn outside a run: %v", err)
	}
}

func TestSpawnToolErrors(t *testing.T) {
	var calls atomic.Int64
	parent := mustNew(t, Spec{Prompt: "p", Tools: map[string]Tool{SpawnToolName: SpawnTool(shopCatalog(&calls), SpawnOptions{})}})
	m := llmtest.NewT(t,
		llmtest.Code(`(tool/spawn_agent {:prompt "c" :tools ["crm"]})`),
		llmtest.Code(`(tool/spawn_agent {:prompt "c" :tools ["email"] :signature "{x :integer}"})`).
			Expect(llmtest.LastUserContains(`tools[0]: expected one of "calendar", "email", got string "crm"`)),
		llmtest.Code(`(return 1)`).Expect(llmtest.LastUserContains("cannot spawn the agent", "unknown type :integer")),
	)
	if _, err := parent.Run(bg, RunOptions{Model: m}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sets map[string]map[string]Tool
		want string
	}{
		{nil, "spawn_agent needs at least one tool set"},
		{map[string]map[string]Tool{"a": {}}, `tool set "a" is empty`},
		{map[string]map[string]Tool{"a\"b": {"x": Func(nil)}}, `invalid tool set name "a\"b"`},
		{map[string]map[string]Tool{"a": {"return": Func(nil)}}, `tool set "a": tool name "return" is reserved`},
	} {
		_, err := New(Spec{Prompt: "p", Tools: map[string]Tool{SpawnToolName: SpawnTool(tc.sets, SpawnOptions{})}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with sets %v: %v, want %s", tc.sets, err, tc.want)
		}
	}
	if _, err := Compile(bg, parent, CompileOptions{}); err == nil {
		t.Error("an agent with spawn_agent compiled")
	}
}

// A spawned agent shares the tree's firewall registry: a firewalled value
// of the parent's context, passed to the child and put into its failure
// message, never reaches the parent's model.
func TestSpawnSharesFirewall(t *testing.T) {
	var calls atomic.Int64
	const canary = "sk-canary-0123456789"
	parent := mustNew(t, Spec{Prompt: "p", Signature: "(_token :string) -> :any",
		Tools: map[string]Tool{SpawnToolName: SpawnTool(shopCatalog(&calls), SpawnOptions{})}})
	m := llmtest.NewT(t,
		llmtest.Code(`(tool/spawn_agent {:prompt "use the key" :tools ["email"] :context {:key ctx/_token}})`),
		llmtest.Code(`(fail {:reason :bad_key :message (str "rejected " ctx/key)})`), // the child
		llmtest.Code(`(return (:message ctx/fail))`).Expect(llmtest.NoneContain(canary)),
	)
	st, err := parent.Run(bg, RunOptions{Model: m, Context: map[string]any{"_token": canary}})
	if err != nil {
		t.Fatal(err)
	}
	if msg, _ := st.Return.(string); strings.Contains(msg, canary) || !strings.Contains(msg, "bad_key") {
		t.Fatalf("return %q", msg)
	}
}

// SpawnTool travels as the wire spec's spawn_agent, its catalogue's tools
// by name, and comes back as the same tool.
func TestSpawnToolWire(t *testing.T) {
	var calls atomic.Int64
	spec := Spec{Prompt: "p", Tools: map[string]Tool{SpawnToolName: SpawnTool(shopCatalog(&calls),
		SpawnOptions{Limits: messages.Limits{MaxTurns: 2}, Description: "delegate"})}}
	w := spec.ToWire()
	want := &messages.SpawnSpec{ToolSets: map[string][]string{"calendar": {"create_meeting", "find_slots"}, "email": {"list_emails", "read_email"}},
		Description: "delegate", Limits: messages.Limits{MaxTurns: 2}}
	if !reflect.DeepEqual(w.SpawnAgent, want) || len(w.Tools) != 0 {
		t.Fatalf("wire %+v, tools %v", w.SpawnAgent, w.Tools)
	}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	catalog := shopCatalog(&calls)
	resolve := func(name string) (Tool, bool) {
		for _, set := range catalog {
			if t, ok := set[name]; ok {
				return t, true
			}
		}
		return Tool{}, false
	}
	back, err := FromWire(w, resolve)
	if err != nil {
		t.Fatal(err)
	}
	a := mustNew(t, back)
	bt := a.tools[SpawnToolName]
	if bt == nil || bt.tool.Description != "delegate" || bt.tool.Signature != spec.Tools[SpawnToolName].Signature {
		t.Fatalf("rebuilt tool %+v", bt)
	}
	if _, err := FromWire(w, func(string) (Tool, bool) { return Tool{}, false }); err == nil ||
		!strings.Contains(err.Error(), `spawn_agent.tool_sets[calendar]: unknown tool "create_meeting"`) {
		t.Errorf("unresolved tool: %v", err)
	}
}

// A text-mode agent spawns through a native tool call the same way: the
// child (a PTC-Lisp agent) runs on the parent's model and is the call's
// Child.
func TestSpawnFromTextMode(t *testing.T) {
	var calls atomic.Int64
	a := mustText(t, Spec{Prompt: "How many urgent emails are there?", Signature: "() -> {n :int}",
		Tools: map[string]Tool{SpawnToolName: SpawnTool(shopCatalog(&calls), SpawnOptions{})}})
	st, err, m := run(t, a, RunOptions{},
		llmtest.ToolCall(SpawnToolName, map[string]any{"prompt": "Count the urgent emails.", "tools": []any{"email"}, "signature": ":int"}),
		llmtest.Code(`(return (count (filter :urgent (tool/list_emails {}))))`).Expect(expectUser([]string{"- list_emails", "Count the urgent emails."})),
		llmtest.Text(`{"n": 1}`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if st.Return.(map[string]any)["n"] != int64(1) || calls.Load() != 1 {
		t.Fatalf("return %v, %d calls", st.Return, calls.Load())
	}
	var child *messages.Step
	for _, turn := range st.Trace {
		for _, c := range turn.ToolCalls {
			if c.Name == SpawnToolName {
				child = c.Child
			}
		}
	}
	if child == nil || child.Return != int64(1) || st.Usage.Requests != 3 {
		t.Fatalf("child %+v, usage %+v", child, st.Usage)
	}
	if n := len(m.Requests()[0].Tools); n != 1 {
		t.Errorf("the parent was offered %d tools, want spawn_agent alone", n)
	}
}
