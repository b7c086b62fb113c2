package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// byPrompt is a model answering by the mission text: each prompt has a
// queue of programs. It records which model name served which prompt.
type byPrompt struct {
	mu      sync.Mutex
	name    string
	scripts map[string][]string
	log     *[]string
	reqs    []llm.Request
}

func (b *byPrompt) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reqs = append(b.reqs, req.Clone())
	*b.log = append(*b.log, b.name+":"+req.Prompt)
	q := b.scripts[req.Prompt]
	if len(q) == 0 {
		return nil, fmt.Errorf("model %s: no script left for prompt %q", b.name, req.Prompt)
	}
	b.scripts[req.Prompt] = q[1:]
	return &llm.Response{Content: "```clojure\n" + q[0] + "\n```", Usage: llm.Usage{InputTokens: 10, OutputTokens: 1}}, nil
}

func TestRegistryInheritanceThreeLevels(t *testing.T) {
	var log []string
	logp := &log
	sonnet := &byPrompt{name: "sonnet", log: logp, scripts: map[string][]string{
		"Analyze the data":  {`(return (tool/analyzer {:data {:x 1}}))`},
		"Analyze {\"x\" 1}": {`(return {:analysis {:c (tool/classifier {}) :s (tool/scorer {}) :e (tool/expert {})}})`},
		"Score":             {`(return 0.5)`},
	}}
	haiku := &byPrompt{name: "haiku", log: logp, scripts: map[string][]string{"Classify": {`(return "spam")`}}}
	opus := &byPrompt{name: "opus", log: logp, scripts: map[string][]string{"Expert analysis": {`(return "deep")`}}}
	reg := llm.Registry{"sonnet": sonnet, "haiku": haiku, "opus": opus}

	classifier := mustNew(t, Spec{Name: "classifier", Prompt: "Classify"})
	scorer := mustNew(t, Spec{Name: "scorer", Prompt: "Score"})
	expert := mustNew(t, Spec{Name: "expert", Prompt: "Expert analysis", LLM: "opus"})
	analyzer := mustNew(t, Spec{Name: "analyzer", Prompt: "Analyze {{data}}", Signature: "(data :map) -> {analysis :map}", Tools: map[string]Tool{
		"classifier": classifier.AsTool(ToolOptions{LLM: "haiku"}),
		"scorer":     scorer.AsTool(ToolOptions{}),
		"expert":     expert.AsTool(ToolOptions{LLM: "haiku"}), // struct override wins over binding
	}})
	orch := mustNew(t, Spec{Name: "orch", Prompt: "Analyze the data", Tools: map[string]Tool{"analyzer": analyzer.AsTool(ToolOptions{})}})

	st, err := orch.Run(bg, RunOptions{LLM: "sonnet", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	want := "sonnet:Analyze the data sonnet:Analyze {\"x\" 1} haiku:Classify sonnet:Score opus:Expert analysis"
	if got := strings.Join(log, " "); got != want {
		t.Fatalf("models used:\n%s\nwant:\n%s", got, want)
	}
	an := st.Return.(map[string]any)["analysis"].(map[string]any)
	if an["c"] != "spam" || an["s"] != 0.5 || an["e"] != "deep" {
		t.Fatalf("return %v", st.Return)
	}
	// nested traces: orch → analyzer → 3 children
	child := st.Trace[0].ToolCalls[0].Child
	if child == nil || len(child.Trace[0].ToolCalls) != 3 || child.Trace[0].ToolCalls[0].Child.Return != "spam" {
		t.Fatalf("nested trace missing: %+v", child)
	}
	// usage includes the whole tree
	if st.Usage.Requests != 5 || st.Usage.InputTokens != 50 {
		t.Fatalf("usage %+v", st.Usage)
	}
}

func TestRegistryErrors(t *testing.T) {
	tests := []struct {
		name   string
		opts   RunOptions
		spec   Spec
		reason string
		msg    string
	}{
		{"not found", RunOptions{LLM: "unknown", Registry: llm.Registry{"a": llmtest.New()}}, Spec{Prompt: "x"}, "llm_not_found", "LLM :unknown not found in registry"},
		{"invalid", RunOptions{LLM: "bad", Registry: llm.Registry{"bad": nil}}, Spec{Prompt: "x"}, "invalid_llm", "Registry value for :bad is not a function"},
		{"registry required", RunOptions{LLM: "gpt4"}, Spec{Prompt: "x"}, "llm_registry_required", "llm_registry required when using atom :gpt4"},
		{"agent names a model", RunOptions{Model: llmtest.New()}, Spec{Prompt: "x", LLM: "haiku"}, "llm_registry_required", "llm_registry required when using atom :haiku"},
		{"no model at all", RunOptions{}, Spec{Prompt: "x"}, "llm_required", "no LLM given"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := mustNew(t, tc.spec).Run(bg, tc.opts)
			wantReason(t, st, err, tc.reason)
			contains(t, st.Fail.Message, tc.msg)
		})
	}
}

func TestSubAgentFailureIsToolError(t *testing.T) {
	child := mustNew(t, Spec{Name: "child", Prompt: "Find {{q}}", Signature: "(q :string) -> {id :int}"})
	parent := mustNew(t, Spec{Prompt: "p", Tools: map[string]Tool{"find": child.AsTool(ToolOptions{})}})
	m := llmtest.NewT(t,
		llmtest.Code(`(tool/find {:q "x"})`),
		llmtest.Code(`(fail {:reason :not_found :message "no x"})`), // child
		llmtest.Code(`(return (:message ctx/fail))`),
	)
	st, err := parent.Run(bg, RunOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	contains(t, st.Return.(string), "sub-agent find failed: not_found: no x")
	c := st.Trace[0].ToolCalls[0]
	if c.Child == nil || c.Child.Fail.Reason != "not_found" || c.Error == "" {
		t.Fatalf("tool call %+v", c)
	}
	// the child's input is validated against its signature
	m = llmtest.NewT(t, llmtest.Code(`(tool/find {:query "x"})`), llmtest.Code(`(return (:message ctx/fail))`))
	st, err = parent.Run(bg, RunOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	contains(t, st.Return.(string), "q: required input missing")
}

func TestMaxDepth(t *testing.T) {
	var agents [5]*Agent
	agents[4] = mustNew(t, Spec{Name: "l4", Prompt: "level 4"})
	for i := 3; i >= 1; i-- {
		agents[i] = mustNew(t, Spec{Name: fmt.Sprintf("l%d", i), Prompt: fmt.Sprintf("level %d", i),
			Tools: map[string]Tool{"next": agents[i+1].AsTool(ToolOptions{})}})
	}
	m := llmtest.NewT(t,
		llmtest.Code(`(return (tool/next {}))`),      // l1
		llmtest.Code(`(return (tool/next {}))`),      // l2
		llmtest.Code(`(tool/next {})`),               // l3 → l4 refused
		llmtest.Code(`(return (:message ctx/fail))`), // l3
	)
	st, err := agents[1].Run(bg, RunOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	contains(t, st.Return.(string), "max_depth_exceeded")
	l3 := st.Trace[0].ToolCalls[0].Child.Trace[0].ToolCalls[0].Child
	if l3.Trace[0].ToolCalls[0].Child.Fail.Reason != ReasonMaxDepth {
		t.Fatalf("l4 step %+v", l3.Trace[0].ToolCalls[0].Child)
	}
	// a direct run of a deeper limit works
	st, err, _ = run(t, mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxDepth: 1}, Tools: map[string]Tool{"c": agents[4].AsTool(ToolOptions{})}}), RunOptions{},
		llmtest.Code(`(tool/c {})`), llmtest.Code(`(return (:message ctx/fail))`))
	if err != nil {
		t.Fatal(err)
	}
	contains(t, st.Return.(string), "max nesting depth 1 exceeded")
}

func TestTurnBudgetShared(t *testing.T) {
	child := mustNew(t, Spec{Name: "child", Prompt: "c"})
	parent := mustNew(t, Spec{Prompt: "p", Limits: Limits{TurnBudget: 3}, Tools: map[string]Tool{"c": child.AsTool(ToolOptions{})}})
	m := llmtest.NewT(t,
		llmtest.Code(`(tool/c {})`), // parent turn 1 (budget 2 left)
		llmtest.Code(`1`),           // child turn 1 (1 left)
		llmtest.Code(`(return 2)`),  // child turn 2 (0 left)
	)
	st, err := parent.Run(bg, RunOptions{Model: m})
	wantReason(t, st, err, ReasonTurnBudget)
	if !errorsIs(err, ErrTurnBudget) || st.Usage.Turns != 1 {
		t.Fatalf("turns %d", st.Usage.Turns)
	}
	// the child exhausting the budget fails the child, seen by the parent as a tool error
	parent = mustNew(t, Spec{Prompt: "p", Limits: Limits{TurnBudget: 2}, Tools: map[string]Tool{"c": child.AsTool(ToolOptions{})}})
	m = llmtest.NewT(t, llmtest.Code(`(tool/c {})`), llmtest.Code(`1`))
	st, err = parent.Run(bg, RunOptions{Model: m})
	wantReason(t, st, err, ReasonTurnBudget)
	if st.Trace[0].ToolCalls[0].Child.Fail.Reason != ReasonTurnBudget {
		t.Fatal("child did not hit the budget")
	}
}

func TestSubAgentSharesMissionDeadline(t *testing.T) {
	child := mustNew(t, Spec{Name: "child", Prompt: "c", LLMRetry: &llm.RetryPolicy{MaxAttempts: 1}})
	parent := mustNew(t, Spec{Prompt: "p", Limits: Limits{MissionTimeout: 60 * time.Millisecond}, Tools: map[string]Tool{"c": child.AsTool(ToolOptions{})}})
	m := llmtest.New(llmtest.Code(`(tool/c {})`), llmtest.Hang())
	start := time.Now()
	st, err := parent.Run(bg, RunOptions{Model: m})
	wantReason(t, st, err, ReasonMissionTimeout)
	if time.Since(start) > 2*time.Second {
		t.Fatal("child did not share the deadline")
	}
	if st.Trace[0].ToolCalls[0].Child.Fail.Reason != ReasonMissionTimeout {
		t.Fatalf("child %+v", st.Trace[0].ToolCalls[0].Child.Fail)
	}
}

func TestSubAgentPublicSignature(t *testing.T) {
	child := mustNew(t, Spec{Name: "emails", Description: "Finds urgent emails", Prompt: "Find for {{user.name}}",
		Signature: "(user {name :string}) -> {summary :string, count :int, _email_ids [:int]}"})
	parent := mustNew(t, Spec{Prompt: "p", Tools: map[string]Tool{"email_agent": child.AsTool(ToolOptions{})}})
	p, err := PreviewPrompt(parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, p.User, "- email_agent(user {name :string}) -> {summary :string, count :int}: Finds urgent emails")
	notContains(t, p.User, "_email_ids")
}

func TestFirewallCanaries(t *testing.T) {
	const (
		ctxSecret   = "CANARY-CTX-7f3a"
		toolSecret  = "CANARY-TOOL-91b2"
		childSecret = "CANARY-CHILD-55c1"
		memSecret   = "CANARY-MEM-0d9e"
	)
	fetch := FuncSig("(id :int) -> {id :int, _body :string}", func(_ context.Context, a map[string]any) (any, error) {
		return map[string]any{"id": a["id"], "_body": toolSecret}, nil
	})
	child := mustNew(t, Spec{Name: "child", Prompt: "Look up {{q}}", Signature: "(q :string) -> {summary :string, _raw :string}"})
	a := mustNew(t, Spec{Prompt: "Process {{user}} with {{_token}}", Signature: "(user :string, _token :string) -> {ok :bool}", Limits: Limits{MaxTurns: 6},
		Tools: map[string]Tool{"fetch": fetch, "child": child.AsTool(ToolOptions{}),
			"vault": Func(func(context.Context, map[string]any) (any, error) { return memSecret, nil })}})

	check := llmtest.NoneContain(ctxSecret, toolSecret, childSecret, memSecret)
	replies := []llmtest.Reply{
		// turn 1: tool result with a firewalled field, merged into memory
		llmtest.Code(`{:doc (tool/fetch {:id 1}) :token-copy ctx/_token}`),
		// turn 2: an error quoting a firewalled value, and a println of it
		llmtest.Code(`(do (println (:_body doc)) (+ 1 ctx/_token))`),
		// turn 3: a sub-agent returning a firewalled field; the child's own turn
		llmtest.Code(`(do (def kept (tool/vault {})) {:c (tool/child {:q "x"})})`),
		llmtest.Code(`(return {:summary "found" :_raw "` + childSecret + `"})`),
		// turn 4: results mentioning everything
		llmtest.Code(`{:return [ctx/_token (:_raw c) (str "x" (:_body doc))]}`),
		// turn 5: validation error quoting a secret, then return
		llmtest.Code(`(return {:ok (str ctx/_token)})`),
		llmtest.Code(`(return {:ok true})`),
	}
	for i := range replies {
		replies[i] = replies[i].Expect(check)
	}
	m := llmtest.NewT(t, replies...)
	st, err := a.Run(bg, RunOptions{Model: m, Context: map[string]any{"user": "ann", "_token": ctxSecret}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Return.(map[string]any)["ok"] != true {
		t.Fatal(st.Return)
	}
	// Go callers still see everything
	if st.Memory["doc"].(map[string]any)["_body"] != toolSecret || st.Memory["kept"] != memSecret {
		t.Fatalf("memory %v", st.Memory)
	}
	for _, r := range m.Requests() {
		tr := llmtest.Transcript(r)
		for _, s := range []string{ctxSecret, toolSecret, childSecret, memSecret} {
			if strings.Contains(tr, s) {
				t.Fatalf("secret %s leaked:\n%s", s, tr)
			}
		}
	}
	contains(t, lastUser(m.Requests()[4]), "<Firewalled>")
}

func errorsIs(err, target error) bool {
	e, ok := err.(*Error)
	return ok && e.Is(target)
}

var _ = messages.Step{}

// A sub-agent's tokens, cache tokens included, and requests are summed
// into its caller's Usage; Turns and ToolCalls stay the caller's own.
func TestSubAgentUsageIncludesCacheTokens(t *testing.T) {
	m := llmtest.NewT(t)
	child := mustNew(t, Spec{Name: "child", Prompt: "Count"})
	parent := mustNew(t, Spec{Name: "main", Prompt: "Go", Tools: map[string]Tool{"child": child.AsTool(ToolOptions{Model: m})}})
	withCache := func(r llmtest.Reply, read, write int64) llmtest.Reply {
		r.Usage.CacheReadTokens, r.Usage.CacheWriteTokens = read, write
		return r
	}
	m.Add(
		withCache(llmtest.Code(`(def n (tool/child {}))`).WithUsage(100, 10), 5, 7),
		withCache(llmtest.Code(`(return 3)`).WithUsage(40, 4), 30, 2), // child
		withCache(llmtest.Code(`(return n)`).WithUsage(120, 12), 100, 0),
	)
	st, err := parent.Run(bg, RunOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	u := st.Usage
	if u.InputTokens != 260 || u.OutputTokens != 26 || u.CacheReadTokens != 135 || u.CacheWriteTokens != 9 || u.Requests != 3 {
		t.Fatalf("tokens/requests %+v", u)
	}
	if u.Turns != 2 || u.ToolCalls != 1 {
		t.Fatalf("turns %d, tool calls %d: want the caller's own", u.Turns, u.ToolCalls)
	}
}
