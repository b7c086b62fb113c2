package agent

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

const importancePrompt = `Evaluate if this email requires immediate attention.

Consider:
- Is it from a VIP customer? (Tier: {{customer_tier}})
- Is it about billing or money?

Email subject: {{email.subject}}
Email body: {{email.body}}
`

const importanceSig = "(email {subject :string, body :string}, customer_tier :string) -> {important :bool, priority :int, reason :string}"

func TestNewLLMToolValidation(t *testing.T) {
	tests := []struct {
		name  string
		spec  LLMToolSpec
		field string
		msg   string // "" = valid
	}{
		{"valid", LLMToolSpec{Prompt: "Hello {{name}}", Signature: "(name :string) -> {greeting :string}"}, "", ""},
		{"unused params allowed", LLMToolSpec{Prompt: "Hello {{name}}", Signature: "(name :string, debug_id :int) -> {greeting :string}"}, "", ""},
		{"unknown placeholder", LLMToolSpec{Prompt: "Hello {{unknown}}", Signature: "(name :string) -> {greeting :string}"},
			"prompt", "placeholder {{unknown}} not found in signature"},
		{"unknown field", LLMToolSpec{Prompt: "Analyze {{user.email}}", Signature: "(user {name :string}) -> {analysis :string}"},
			"prompt", "placeholder {{user.email}} not found in signature; user has fields: name"},
		{"section rules", LLMToolSpec{Prompt: "{{#items}}{{.}}{{/items}}", Signature: "(items [{id :int}]) -> :string"},
			"prompt", "{{.}} inside {{#items}} - use {{field}} instead (list contains maps)"},
		{"signature required", LLMToolSpec{Prompt: "x"}, "signature", "an LLM tool needs a signature"},
		{"bad signature", LLMToolSpec{Prompt: "x", Signature: "(a :nope) -> :int"}, "signature", "nope"},
		{"bad template", LLMToolSpec{Prompt: "{{#a}}", Signature: "(a [:int]) -> :int"}, "prompt", "is not closed"},
		{"firewalled output", LLMToolSpec{Prompt: "x", Signature: "{_x :int}"}, "signature", "firewalled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool, err := NewLLMTool(tc.spec)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("NewLLMTool: %v", err)
				}
				if tool.Signature != tc.spec.Signature && !strings.Contains(tc.spec.Signature, "debug_id") {
					t.Fatalf("signature = %q", tool.Signature)
				}
				return
			}
			wantSpecError(t, err, tc.field, tc.msg)
		})
	}
}

func TestLLMToolErrorReportedByNew(t *testing.T) {
	_, err := New(Spec{Prompt: "x", Tools: map[string]Tool{
		"classify": LLMTool(LLMToolSpec{Prompt: "{{nope}}", Signature: "(subject :string) -> {urgent :bool}"}),
	}})
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "tools[classify]") || !strings.Contains(err.Error(), "placeholder {{nope}} not found in signature") {
		t.Fatalf("err = %v", err)
	}
}

// The tutorial's evaluate_importance tool, called from a PTC-Lisp agent
// with the caller's model (the default).
func TestLLMToolCallerModel(t *testing.T) {
	tool := LLMTool(LLMToolSpec{Prompt: importancePrompt, Signature: importanceSig})
	parent := mustNew(t, Spec{Prompt: "Check the email", Signature: "{important :bool}", Tools: map[string]Tool{"evaluate_importance": tool}})
	st, err, m := run(t, parent, RunOptions{},
		llmtest.Code(`(let [r (tool/evaluate_importance {:email {:subject "Refund" :body "Charged twice!"} :customer_tier "Gold"})]
  (return {:important (:important r)}))`).Expect(func(req llm.Request) error {
			if !strings.Contains(req.Messages[0].Text(), importanceSig) {
				return fmt.Errorf("parent prompt lacks the tool signature:\n%s", req.Messages[0].Text())
			}
			return nil
		}),
		llmtest.Text(`{"important": true, "priority": 1, "reason": "billing"}`).Expect(func(req llm.Request) error {
			p := req.Messages[0].Text()
			if !strings.Contains(p, "(Tier: Gold)") || !strings.Contains(p, "Email subject: Refund\nEmail body: Charged twice!") {
				return fmt.Errorf("tool prompt:\n%s", p)
			}
			if len(req.Tools) != 0 || !strings.Contains(req.System, "{important :bool, priority :int, reason :string}") {
				return fmt.Errorf("tool request: tools %v system %q", req.Tools, req.System)
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Return.(map[string]any)["important"] != true || len(m.Requests()) != 2 {
		t.Fatalf("return %#v, %d requests", st.Return, len(m.Requests()))
	}
	child := st.Trace[0].ToolCalls[0].Child
	if child == nil || child.Usage.Turns != 1 || child.Return.(map[string]any)["priority"] != int64(1) {
		t.Fatalf("child step = %+v", child)
	}
}

func TestLLMToolModelSelection(t *testing.T) {
	code := llmtest.Code(`(return (tool/triage {:subject "Server down"}))`)
	answer := `{"priority": "urgent"}`
	sig := "(subject :string) -> {priority :string}"
	prompt := "Is '{{subject}}' urgent? Answer: urgent/normal/low"

	t.Run("registry name", func(t *testing.T) {
		haiku := llmtest.NewT(t, llmtest.Text(answer))
		tool := LLMTool(LLMToolSpec{Prompt: prompt, Signature: sig, LLM: "haiku"})
		parent := mustNew(t, Spec{Prompt: "Triage", Tools: map[string]Tool{"triage": tool}})
		st, err, _ := run(t, parent, RunOptions{Registry: llm.Registry{"haiku": haiku}}, code)
		if err != nil || st.Return.(map[string]any)["priority"] != "urgent" || len(haiku.Requests()) != 1 {
			t.Fatalf("return %#v err %v", st.Return, err)
		}
	})
	t.Run("missing registry name is a tool error", func(t *testing.T) {
		tool := LLMTool(LLMToolSpec{Prompt: prompt, Signature: sig, LLM: "haiku"})
		parent := mustNew(t, Spec{Prompt: "Triage", Tools: map[string]Tool{"triage": tool}, Limits: Limits{MaxTurns: 2}})
		st, err, _ := run(t, parent, RunOptions{Registry: llm.Registry{}}, code,
			llmtest.Code(`(return {:priority "unknown"})`).Expect(llmtest.LastUserContains("LLM :haiku not found in registry")))
		if err != nil || st.Return.(map[string]any)["priority"] != "unknown" {
			t.Fatalf("return %#v err %v", st.Return, err)
		}
	})
	t.Run("given model", func(t *testing.T) {
		own := llmtest.NewT(t, llmtest.Text(answer))
		tool := LLMTool(LLMToolSpec{Prompt: prompt, Signature: sig, Model: own})
		parent := mustNew(t, Spec{Prompt: "Triage", Tools: map[string]Tool{"triage": tool}})
		_, err, m := run(t, parent, RunOptions{}, code)
		if err != nil || len(own.Requests()) != 1 || len(m.Requests()) != 1 {
			t.Fatalf("err %v own %d caller %d", err, len(own.Requests()), len(m.Requests()))
		}
	})
	t.Run("explicit caller", func(t *testing.T) {
		tool := LLMTool(LLMToolSpec{Prompt: prompt, Signature: sig, LLM: CallerLLM})
		parent := mustNew(t, Spec{Prompt: "Triage", Tools: map[string]Tool{"triage": tool}})
		_, err, m := run(t, parent, RunOptions{Registry: llm.Registry{}}, code, llmtest.Text(answer))
		if err != nil || len(m.Requests()) != 2 {
			t.Fatalf("err %v requests %d", err, len(m.Requests()))
		}
	})
}

// An LLM tool with tools runs as a multi-turn text-mode agent.
func TestLLMToolWithTools(t *testing.T) {
	lookup := FuncSig("(id :int) -> {name :string, tier :string}", func(_ context.Context, args map[string]any) (any, error) {
		return map[string]any{"name": "Acme", "tier": "Gold"}, nil
	}).WithDescription("Look up a customer")
	tool := LLMTool(LLMToolSpec{Prompt: "Is customer {{id}} a VIP?", Signature: "(id :int) -> {vip :bool}",
		Tools: map[string]Tool{"lookup": lookup}})
	parent := mustNew(t, Spec{Prompt: "Check", Tools: map[string]Tool{"vip": tool}})
	st, err, _ := run(t, parent, RunOptions{},
		llmtest.Code(`(return (tool/vip {:id 7}))`),
		llmtest.ToolCall("lookup", map[string]any{"id": int64(7)}).Expect(func(req llm.Request) error {
			if len(req.Tools) != 1 || req.Tools[0].Name != "lookup" {
				return fmt.Errorf("tools %+v", req.Tools)
			}
			return nil
		}),
		llmtest.Text(`{"vip": true}`))
	if err != nil {
		t.Fatal(err)
	}
	child := st.Trace[0].ToolCalls[0].Child
	if st.Return.(map[string]any)["vip"] != true || child.Usage.Turns != 2 || child.Usage.ToolCalls != 1 {
		t.Fatalf("return %#v child usage %+v", st.Return, child.Usage)
	}
	if st.Usage.Requests != 3 {
		t.Fatalf("parent usage = %+v", st.Usage)
	}
}

// The tutorial's batch classification: one LLM call classifies a list,
// and the PTC-Lisp program merges the results back.
func TestLLMToolBatchClassification(t *testing.T) {
	emails := []any{
		map[string]any{"id": int64(1), "subject": "Server down", "from": "ops@acme.com"},
		map[string]any{"id": int64(2), "subject": "Lunch?", "from": "bob@acme.com"},
		map[string]any{"id": int64(3), "subject": "Invoice overdue", "from": "billing@big.com"},
	}
	listEmails := FuncSig("(limit :int) -> [{id :int, subject :string, from :string}]", func(context.Context, map[string]any) (any, error) {
		return emails, nil
	})
	classify := LLMTool(LLMToolSpec{
		Prompt: `Classify each email by urgency.

Emails:
{{#emails}}
- ID {{id}}: "{{subject}}" from {{from}}
{{/emails}}

Return a list with urgency for each email ID.
`,
		Signature:   "(emails [{id :int, subject :string, from :string}]) -> [{id :int, urgency :string, reason :string}]",
		Description: "Classify emails by urgency in one call",
	})
	parent := mustNew(t, Spec{Prompt: "Classify the inbox", Signature: "[:map]",
		Tools: map[string]Tool{"list_emails": listEmails, "classify_batch": classify}})
	wantPrompt := `Classify each email by urgency.

Emails:
- ID 1: "Server down" from ops@acme.com
- ID 2: "Lunch?" from bob@acme.com
- ID 3: "Invoice overdue" from billing@big.com

Return a list with urgency for each email ID.
`
	st, err, _ := run(t, parent, RunOptions{},
		llmtest.Code(`(let [emails (call "list_emails" {:limit 50})
      classifications (call "classify_batch" {:emails emails})]
  (return (mapv (fn [e c] (assoc e :classification c)) emails classifications)))`),
		llmtest.Text("```json\n"+`[{"id": 1, "urgency": "high", "reason": "outage"},
 {"id": 2, "urgency": "low", "reason": "social"},
 {"id": 3, "urgency": "medium", "reason": "money"}]`+"\n```").Expect(func(req llm.Request) error {
			if got := req.Messages[0].Text(); got != wantPrompt {
				return fmt.Errorf("batch prompt =\n%s\nwant\n%s", got, wantPrompt)
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	got := st.Return.([]any)
	if len(got) != 3 {
		t.Fatalf("return = %#v", st.Return)
	}
	var urg []string
	for _, e := range got {
		c := e.(map[string]any)["classification"].(map[string]any)
		if c["id"] != e.(map[string]any)["id"] {
			t.Fatalf("misaligned %v", e)
		}
		urg = append(urg, c["urgency"].(string))
	}
	if !reflect.DeepEqual(urg, []string{"high", "low", "medium"}) {
		t.Fatalf("urgencies = %v", urg)
	}
}

// A JSON answer the signature rejects is a tool error for the caller (one
// turn by default), or corrected within MaxTurns.
func TestLLMToolInvalidAnswer(t *testing.T) {
	sig := "(subject :string) -> {urgent :bool}"
	tool := LLMTool(LLMToolSpec{Prompt: "{{subject}}", Signature: sig})
	parent := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"u": tool}, Limits: Limits{MaxTurns: 2}})
	st, err, _ := run(t, parent, RunOptions{},
		llmtest.Code(`(return (tool/u {:subject "a"}))`),
		llmtest.Text(`{"urgent": "yes"}`),
		llmtest.Code(`(return {:urgent false})`).Expect(llmtest.LastUserContains("sub-agent u failed", "max_turns_exceeded")))
	if err != nil || st.Return.(map[string]any)["urgent"] != false {
		t.Fatalf("return %#v err %v", st.Return, err)
	}

	retrying := LLMTool(LLMToolSpec{Prompt: "{{subject}}", Signature: sig, MaxTurns: 2})
	parent2 := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"u": retrying}})
	st, err, _ = run(t, parent2, RunOptions{},
		llmtest.Code(`(return (tool/u {:subject "a"}))`),
		llmtest.Text(`{"urgent": "yes"}`),
		llmtest.Text(`{"urgent": true}`))
	if err != nil || st.Return.(map[string]any)["urgent"] != true {
		t.Fatalf("return %#v err %v", st.Return, err)
	}
}

// Inputs the prompt does not use are allowed, still validated, and add
// nothing to the prompt.
func TestLLMToolUnusedInputs(t *testing.T) {
	tool := LLMTool(LLMToolSpec{Prompt: "Hello {{name}}\n", Signature: "(name :string, debug_id :int) -> {greeting :string}"})
	parent := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"greet": tool}, Limits: Limits{MaxTurns: 2}})
	st, err, _ := run(t, parent, RunOptions{},
		llmtest.Code(`(return (tool/greet {:name "Ann"}))`),
		llmtest.Code(`(return (tool/greet {:name "Ann" :debug_id 7}))`).Expect(llmtest.LastUserContains("debug_id")),
		llmtest.Text(`{"greeting": "Hi Ann"}`).Expect(func(req llm.Request) error {
			if got := req.Messages[0].Text(); got != "Hello Ann\n" {
				return fmt.Errorf("prompt = %q", got)
			}
			return nil
		}))
	if err != nil || st.Return.(map[string]any)["greeting"] != "Hi Ann" {
		t.Fatalf("return %#v err %v", st.Return, err)
	}
	if tool.Signature != "(name :string, debug_id :int) -> {greeting :string}" {
		t.Fatalf("tool signature = %q", tool.Signature)
	}
}

func TestLLMToolNeedsLLM(t *testing.T) {
	ok := LLMTool(LLMToolSpec{Prompt: "{{a}}", Signature: "(a :string) -> :string"})
	bad := LLMTool(LLMToolSpec{Prompt: "{{b}}", Signature: "(a :string) -> :string"})
	if !ok.NeedsLLM() || !bad.NeedsLLM() {
		t.Fatal("an LLM tool must report NeedsLLM")
	}
}

// An LLM tool travels in the wire form as a text-mode sub-agent spec and
// works after FromWire (how a worker receives it).
func TestLLMToolWire(t *testing.T) {
	tool := LLMTool(LLMToolSpec{Prompt: "Is {{subject}} urgent?", Signature: "(subject :string, debug_id :int?) -> {urgent :bool}", LLM: "haiku"})
	parent := Spec{Prompt: "Triage", Signature: "{urgent :bool}", Tools: map[string]Tool{"triage": tool}}
	w := parent.ToWire()
	child := w.SubAgents["triage"]
	if child == nil || child.Output != OutputText || child.LLM != "haiku" || child.Signature != "(subject :string, debug_id :int?) -> {urgent :bool}" {
		t.Fatalf("wire child = %+v", child)
	}
	back, err := FromWire(w, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := mustNew(t, back)
	haiku := llmtest.NewT(t, llmtest.Text(`{"urgent": true}`).Expect(llmtest.LastUserContains("Is Server down urgent?")))
	st, err, _ := run(t, a, RunOptions{Registry: llm.Registry{"haiku": haiku}},
		llmtest.Code(`(return (tool/triage {:subject "Server down"}))`))
	if err != nil || st.Return.(map[string]any)["urgent"] != true {
		t.Fatalf("return %#v err %v", st.Return, err)
	}
}

// LLM tools called together in one text-mode turn run concurrently as
// sub-agents sharing the caller's model, budget and deadline.
func TestLLMToolsConcurrentInTextMode(t *testing.T) {
	sentiment := LLMTool(LLMToolSpec{Prompt: "Sentiment of: {{text}}", Signature: "(text :string) -> {label :string}"})
	parent := mustText(t, Spec{Prompt: "Compare the reviews", Signature: "{better :string}",
		Tools: map[string]Tool{"sentiment": sentiment}})
	answer := llmtest.Respond(func(_ context.Context, req llm.Request) (*llm.Response, error) {
		p := req.Messages[0].Text()
		switch {
		case strings.Contains(p, "Sentiment of: great"):
			return &llm.Response{Content: `{"label": "positive"}`}, nil
		case strings.Contains(p, "Sentiment of: awful"):
			return &llm.Response{Content: `{"label": "negative"}`}, nil
		}
		return nil, fmt.Errorf("unexpected prompt %q", p)
	})
	st, err, _ := run(t, parent, RunOptions{},
		llmtest.ToolCall("sentiment", map[string]any{"text": "great"}).WithToolCall("sentiment", map[string]any{"text": "awful"}),
		answer, answer,
		llmtest.Text(`{"better": "first"}`).Expect(func(req llm.Request) error {
			res := req.Messages[2].Content
			if res[0].(llm.ToolResult).Content != `{"label":"positive"}` || res[1].(llm.ToolResult).Content != `{"label":"negative"}` {
				return fmt.Errorf("results %+v", res)
			}
			return nil
		}))
	if err != nil || st.Return.(map[string]any)["better"] != "first" {
		t.Fatalf("return %#v err %v", st.Return, err)
	}
	if st.Usage.Requests != 4 || st.Usage.ToolCalls != 2 || st.Trace[0].ToolCalls[1].Child == nil {
		t.Fatalf("usage %+v", st.Usage)
	}
}
