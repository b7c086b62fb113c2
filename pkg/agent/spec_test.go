package agent

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

func noop(context.Context, map[string]any) (any, error) { return nil, nil }

type badArgs struct {
	Callback func() `json:"callback"`
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name  string
		spec  Spec
		field string
		msg   string
	}{
		{"prompt required", Spec{}, "prompt", "prompt is required"},
		{"blank prompt", Spec{Prompt: "  \n"}, "prompt", "prompt is required"},
		{"placeholder missing", Spec{Prompt: "Find emails for {{user}}", Signature: "(person :string) -> {count :int}"}, "prompt", "placeholders {{user}} not found in signature"},
		{"nested placeholder missing", Spec{Prompt: "Hi {{user.email}}", Signature: "(user {name :string}) -> :string"}, "prompt", "{{user.email}}"},
		{"bad template", Spec{Prompt: "Hi {{#items}} x"}, "prompt", "section {{#items}} is not closed"},
		{"reserved return", Spec{Prompt: "x", Tools: map[string]Tool{"return": Func(noop)}}, "tools[return]", `tool name "return" is reserved`},
		{"reserved fail", Spec{Prompt: "x", Tools: map[string]Tool{"fail": Func(noop)}}, "tools[fail]", `tool name "fail" is reserved`},
		{"bad signature", Spec{Prompt: "x", Signature: "{id :int, x}"}, "signature", "1:12: expected type"},
		{"bad tool signature", Spec{Prompt: "x", Tools: map[string]Tool{"s": FuncSig("(q :strin) -> :int", noop)}}, "tools[s].signature", "unknown type"},
		{"zero tool", Spec{Prompt: "x", Tools: map[string]Tool{"s": {}}}, "tools[s]", "tool has no function"},
		{"bad tool name", Spec{Prompt: "x", Tools: map[string]Tool{"a b": Func(noop)}}, "tools[a b]", "invalid tool name"},
		{"strict needs signatures", Spec{Prompt: "x", Validation: signature.Strict, Tools: map[string]Tool{"s": Func(noop)}}, "tools[s]", "strict validation mode requires every tool to have a signature"},
		{"strict rejects skip", Spec{Prompt: "x", Validation: signature.Strict, Tools: map[string]Tool{"s": Skip(noop)}}, "tools[s]", "requires every tool to have a signature"},
		{"typed derive error", Spec{Prompt: "x", Tools: map[string]Tool{"t": Typed(func(context.Context, badArgs) (int, error) { return 0, nil })}}, "tools[t].signature", "func type not supported"},
		{"catalog bad sig", Spec{Prompt: "x", ToolCatalog: []messages.ToolSchema{{Name: "p", Signature: "(x"}}}, "tool_catalog[0].signature", "expected"},
		{"catalog no name", Spec{Prompt: "x", ToolCatalog: []messages.ToolSchema{{}}}, "tool_catalog[0].name", "required"},
		{"output mode", Spec{Prompt: "x", Output: "json"}, "output", `unknown output mode "json"`},
		{"language preset", Spec{Prompt: "x", SystemPrompt: SystemPrompt{LanguageSpec: "tiny"}}, "system_prompt.language_spec", `unknown language preset "tiny"`},
		{"retry policy", Spec{Prompt: "x", LLMRetry: &llm.RetryPolicy{Backoff: "random"}}, "llm_retry", "backoff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.spec)
			if err == nil {
				t.Fatal("New succeeded")
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindSpec {
				t.Fatalf("error %v is not a spec *Error", err)
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatal("errors.Is(err, ErrInvalidSpec) is false")
			}
			if e.Field != tc.field {
				t.Fatalf("field = %q, want %q (%v)", e.Field, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q does not contain %q", err, tc.msg)
			}
		})
	}
}

func TestNewValid(t *testing.T) {
	tests := []Spec{
		{Prompt: "Find emails for {{user.name}} about {{topic}}", Signature: "(user {name :string}, topic :string) -> {count :int}"},
		{Prompt: "Hello {{name}}", Signature: "(name :string, debug_id :int) -> {greeting :string}"},
		{Prompt: "no signature, {{anything}} goes"},
		{Prompt: "x", Validation: signature.Strict, Tools: map[string]Tool{"s": FuncSig("(q :string) -> :int", noop)}},
		{Prompt: "x", Output: OutputText},
		{Prompt: "x", SystemPrompt: SystemPrompt{LanguageSpec: "minimal"}},
		{Prompt: "x", SystemPrompt: SystemPrompt{LanguageSpec: "My own DSL reference text."}},
	}
	for _, s := range tests {
		if _, err := New(s); err != nil {
			t.Errorf("New(%q): %v", s.Prompt, err)
		}
	}
}

func TestSpecDefaults(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x"})
	s := a.Spec()
	if s.MaxTurns != 5 || s.LLMTimeout != 5*time.Minute || s.ProgramTimeout != 30*time.Second || s.MissionTimeout != 15*time.Minute || s.MaxDepth != 3 ||
		s.TurnBudget != 20 || s.MemoryLimit != 1<<20 || s.PromptLimit != (PromptLimit{List: 5, String: 1000}) {
		t.Fatalf("defaults: %+v", s)
	}
}

func TestWireRoundTrip(t *testing.T) {
	child := mustNew(t, Spec{Name: "finder", Prompt: "Find {{q}}", Signature: "(q :string) -> {id :int, _raw :map}", Limits: Limits{MaxTurns: 2}})
	tools := map[string]Tool{"search": FuncSig("(q :string) -> [:int]", noop).WithDescription("search things")}
	spec := Spec{
		Name: "orch", Description: "top", Prompt: "Do {{x}}", Signature: "(x :int) -> :int",
		Tools:       map[string]Tool{"search": tools["search"], "finder": child.AsTool(ToolOptions{LLM: "haiku"})},
		ToolCatalog: []messages.ToolSchema{{Name: "plan", Signature: "() -> :map"}},
		Limits: Limits{MaxTurns: 7, LLMTimeout: 2 * time.Minute, ProgramTimeout: 3 * time.Second, MaxSteps: 5000,
			ProgramMemory: 1 << 20, MissionTimeout: time.Minute, MemoryLimit: 2048, MaxDepth: 2, TurnBudget: 9,
			PromptLimit: PromptLimit{List: 3, String: 50}},
		LLM:          "sonnet",
		LLMOpts:      map[string]any{"temperature": 0.2},
		SystemPrompt: SystemPrompt{Prefix: "P", Suffix: "S", LanguageSpec: "minimal", OutputFormat: "OF", Override: ""},
		LLMRetry:     &llm.RetryPolicy{MaxAttempts: 4, Backoff: llm.BackoffLinear, BaseDelay: time.Second, MaxDelay: 9 * time.Second, Retryable: []llm.ErrorClass{llm.ClassRateLimit}},
		Validation:   signature.WarnOnly,
	}
	w := spec.ToWire()
	raw, err := messages.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	var back messages.AgentSpec
	if err := messages.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w.Tools, []string{"search"}) || back.SubAgents["finder"] == nil || back.SubAgents["finder"].LLM != "haiku" {
		t.Fatalf("wire tools %v sub %+v", back.Tools, back.SubAgents)
	}
	got, err := FromWire(&back, func(name string) (Tool, bool) { t, ok := tools[name]; return t, ok })
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxTurns != 7 || got.Validation != signature.WarnOnly || got.LLM != "sonnet" || got.SystemPrompt.Prefix != "P" ||
		got.MemoryLimit != 2048 || got.MaxSteps != 5000 || got.ProgramMemory != 1<<20 || got.TurnBudget != 9 || got.PromptLimit.List != 3 || got.Signature != spec.Signature {
		t.Fatalf("round trip lost fields: %+v", got)
	}
	if got.SystemPrompt.LanguageSpec != "minimal" || got.SystemPrompt.OutputFormat != "OF" {
		t.Fatalf("system prompt strings lost: %+v", got.SystemPrompt)
	}
	if r := got.LLMRetry; r == nil || r.MaxAttempts != 4 || r.Backoff != llm.BackoffLinear || r.BaseDelay != time.Second ||
		r.MaxDelay != 9*time.Second || !reflect.DeepEqual(r.Retryable, []llm.ErrorClass{llm.ClassRateLimit}) {
		t.Fatalf("llm_retry lost: %+v", got.LLMRetry)
	}
	a := mustNew(t, got)
	if a.tools["finder"].tool.sub == nil || a.tools["finder"].tool.sub.agent.spec.Name != "finder" {
		t.Fatal("sub-agent not rebuilt")
	}
	if _, err := FromWire(&back, func(string) (Tool, bool) { return Tool{}, false }); err == nil || !strings.Contains(err.Error(), `unknown tool "search"`) {
		t.Fatalf("unknown tool: %v", err)
	}
	bad := *back.SubAgents["finder"]
	bad.Prompt = ""
	back.SubAgents["finder"] = &bad
	if _, err := FromWire(&back, func(name string) (Tool, bool) { t, ok := tools[name]; return t, ok }); err == nil || !strings.Contains(err.Error(), "sub_agents[finder].prompt") {
		t.Fatalf("bad sub-agent: %v", err)
	}
}
