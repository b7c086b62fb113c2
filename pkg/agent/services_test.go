package agent

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// eventLog collects a run's observer events.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) Observe(_ context.Context, e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) of(kind EventKind) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, e := range l.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// llm-query asks the mission's model a one-shot question: the model gets
// the prompt and the input as JSON (firewalled values hidden), its answer is
// validated and returned to the program, and its usage and Step are the
// mission's.
func TestLLMQuery(t *testing.T) {
	const secret = "zq-4417-private-token-value"
	a := mustNew(t, Spec{Prompt: "Label the review", Signature: "{label :string}", LLMQuery: true})
	st, err, m := run(t, a, RunOptions{Context: map[string]any{"review": "I love it", "_token": secret}},
		llmtest.Code(`(def r (llm-query {:prompt (str "Label the mood; never say " ctx/_token) :signature "{label :string}"
                            :input {:text ctx/review :_token ctx/_token}}))
(return r)`).WithUsage(100, 20),
		llmtest.Text(`{"label": "happy"}`).WithUsage(30, 5),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Return, map[string]any{"label": "happy"}) {
		t.Fatalf("return %v", st.Return)
	}
	reqs := m.Requests()
	contains(t, lastUser(reqs[0]), "## Services\n", "- (llm-query {:prompt")
	q := lastUser(reqs[1])
	contains(t, q, "Label the mood; never say <Firewalled>", "Input:\n", `"text":"I love it"`)
	notContains(t, q, secret)
	if u := st.Usage; u.InputTokens != 130 || u.OutputTokens != 25 || u.Requests != 2 {
		t.Fatalf("usage %+v, want the query's tokens and request counted", u)
	}
	calls := st.Trace[0].ToolCalls
	if len(calls) != 1 || calls[0].Name != "llm-query" || calls[0].Child == nil || calls[0].Child.Mode != messages.ModeText {
		t.Fatalf("tool calls %+v", calls)
	}
}

// A failed llm-query (an answer of the wrong type, a bad signature, an
// agent that does not enable it) is the program's error, fed back to the
// model.
func TestLLMQueryErrors(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Label", Signature: ":string", LLMQuery: true})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(llm-query {:prompt "Count" :signature ":int"})`),
		llmtest.Text(`many`),
		llmtest.Code(`(llm-query {:prompt "Count" :signature "(x :int) -> :int"})`),
		llmtest.Code(`(llm-query {:prompt "Count" :sig ":int"})`),
		llmtest.Code(`(return "done")`),
	)
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	contains(t, lastUser(reqs[2]), "llm-query failed: the model's answer failed")
	contains(t, lastUser(reqs[3]), "llm-query failed: :signature is the answer's type alone")
	contains(t, lastUser(reqs[4]), "llm-query failed: unknown key :sig (did you mean signature?)")

	off := mustNew(t, Spec{Prompt: "Label", Signature: ":string"})
	_, err, m = run(t, off, RunOptions{},
		llmtest.Code(`(llm-query {:prompt "Count"})`),
		llmtest.Code(`(return "done")`),
	)
	if err != nil {
		t.Fatal(err)
	}
	notContains(t, lastUser(m.Requests()[0]), "llm-query")
	contains(t, lastUser(m.Requests()[1]), "llm-query is not available")
}

// (emit v) reaches observers at once, redacted by the firewall; a value
// over max_emit_bytes or an emit past emit_rate fails the call.
func TestEmit(t *testing.T) {
	const secret = "zq-4417-private-token-value"
	log := &eventLog{}
	a := mustNew(t, Spec{Prompt: "Go", Signature: ":int", Limits: Limits{MaxEmitBytes: 100, EmitRate: 2}})
	st, err, m := run(t, a, RunOptions{Observer: log, Context: map[string]any{"_token": secret}},
		llmtest.Code(`(emit {:region "north" :total 12 :leak ctx/_token :_raw 1})`),
		llmtest.Code(`(emit (apply str (repeat 200 "x")))`),
		llmtest.Code(`(emit 1) (emit 2)`),
		llmtest.Code(`(return 1)`),
	)
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	// emit is in the system prompt's language reference, not the first message
	contains(t, reqs[0].System, "- (emit value): sends the value at once to whoever runs the mission")
	notContains(t, lastUser(reqs[0]), "## Services")
	contains(t, lastUser(reqs[2]), "emit failed: the value takes more than 100 bytes as JSON, the max_emit_bytes limit")
	contains(t, lastUser(reqs[3]), "emit failed: more than 2 emits a second (the emit_rate limit)")
	ems := log.of(EventEmit)
	if len(ems) != 2 {
		t.Fatalf("%d emit events, want 2: %+v", len(ems), ems)
	}
	want := map[string]any{"region": "north", "total": int64(12), "leak": firewalledText, "_raw": firewalledText}
	if !reflect.DeepEqual(ems[0].Result, want) || ems[0].Turn != 1 {
		t.Fatalf("emitted %v (turn %d), want %v", ems[0].Result, ems[0].Turn, want)
	}
	if ems[1].Result != int64(1) || ems[1].Turn != 3 {
		t.Fatalf("second emit %+v", ems[1])
	}
	if st.Return != int64(1) {
		t.Fatalf("return %v", st.Return)
	}
}

// The plan is shown in the first message, its state at every turn after
// a step is marked done, and observers get it at the start and after each
// step.
func TestPlan(t *testing.T) {
	log := &eventLog{}
	a := mustNew(t, Spec{Prompt: "Sum the orders", Signature: ":int", Plan: []string{"Fetch the orders", "Sum them"}})
	st, err, m := run(t, a, RunOptions{Observer: log},
		llmtest.Code(`(step-done "1" "fetched 3 orders") {:orders [1 2 3]}`),
		llmtest.Code(`(step-done "7" "nothing")`),
		llmtest.Code(`(step-done 2 "summed") (return (reduce + ctx/orders))`),
	)
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	contains(t, lastUser(reqs[0]), "## Plan\n1. [ ] Fetch the orders\n2. [ ] Sum them\nMark a step done with (step-done \"id\" \"summary\").",
		`- (step-done "id" "summary"): `)
	fb := lastUser(reqs[1])
	contains(t, fb, "Turn 2 of 5 (3 remaining)\n\n## Plan\n1. [x] Fetch the orders — fetched 3 orders\n2. [ ] Sum them\n")
	contains(t, lastUser(reqs[2]), `step-done failed: no step "7" in the plan (its steps are 1 to 2)`)
	// the history keeps the plan as it was sent
	if got := reqs[2].Messages[2].Text(); got != fb {
		t.Fatalf("history changed:\n%s\n--- sent:\n%s", got, fb)
	}
	plans := log.of(EventPlan)
	if len(plans) != 3 || plans[0].Tool != "" || plans[1].Tool != "1" || plans[2].Tool != "2" {
		t.Fatalf("plan events %+v", plans)
	}
	want := []messages.PlanStep{{ID: "1", Description: "Fetch the orders", Done: true, Summary: "fetched 3 orders"}, {ID: "2", Description: "Sum them", Done: true, Summary: "summed"}}
	if !reflect.DeepEqual(plans[2].Plan, want) || !reflect.DeepEqual(st.Plan, want) {
		t.Fatalf("plan %+v, the Step's %+v", plans[2].Plan, st.Plan)
	}
	_, err = New(Spec{Prompt: "x", Plan: []string{"a", " "}})
	wantSpecError(t, err, "plan", "plan[1]: empty")
	_, err = New(Spec{Prompt: "x", Plan: []string{"a"}, Output: OutputText})
	wantSpecError(t, err, "plan", "text mode runs no program")
	_, err = New(Spec{Prompt: "x", LLMQuery: true, Output: OutputText})
	wantSpecError(t, err, "llm_query", "text mode runs no program")
	if w := (Spec{Prompt: "x", Plan: []string{"a"}, LLMQuery: true}).ToWire(); !w.LLMQuery || !reflect.DeepEqual(w.Plan, []string{"a"}) {
		t.Fatalf("wire %+v", w)
	}
	if !strings.Contains(lastUser(reqs[0]), "## Services\n- (step-done \"id\" \"summary\"): marks step id") {
		t.Fatal("step-done is not listed under Services")
	}
}

// jsonSizeWithin never counts more than the JSON form takes, and stops
// past the limit.
func TestJSONSizeWithin(t *testing.T) {
	for _, v := range []any{nil, int64(7), "a\"b", []any{}, []any{int64(1), int64(2)}, map[string]any{},
		map[string]any{"k": int64(1), "long": []any{"x", map[string]any{"y": nil}}}} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if n := int64(len(data)); !jsonSizeWithin(v, n) || (n > 4 && jsonSizeWithin(v, n/4)) {
			t.Errorf("%s (%d bytes): within its size %v, within a quarter %v", data, n, jsonSizeWithin(v, n), jsonSizeWithin(v, n/4))
		}
	}
}
