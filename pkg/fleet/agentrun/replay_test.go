package agentrun_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// replayStored replays mission id from its stored record and result and
// fails the test on any divergence. It returns the replay.
func replayStored(t *testing.T, client *fleet.Client, id string, opts agentrun.ReplayOptions) (*agentrun.Replayed, *messages.Step) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := client.Record(ctx, id)
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	step, err := client.Result(ctx, id)
	if err != nil {
		t.Fatalf("result: %v", err)
	}
	r, err := agentrun.Replay(ctx, rec, step, opts)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return r, step
}

// failModel fails every request: a replay must not ask a model.
var failModel = llm.Func(func(context.Context, llm.Request) (*llm.Response, error) {
	panic("a replay asked the model")
})

// A mission with tool calls over two turns and a firewalled field, and
// a sub-agent that calls a tool of its own, replay from their records in
// a process with no model and no tool service: the same Step, every tool
// call served from the recording.
func TestReplayReproducesStoredMissions(t *testing.T) {
	model := &script{turns: map[string][]string{
		"paid orders": {
			"```clojure\n(def paid (tool/list_orders {:status \"paid\"}))\n(count paid)\n```",
			"```clojure\n(let [c (tool/get_customer {:id (:customer_id (first paid))})]\n  (return {:n (count paid) :first_customer (:name c) :has_phone (some? (:_phone c))}))\n```",
		},
		"Summarise the region": {"```clojure\n(return {:best (:name (tool/best_customer {:region \"north\"}))})\n```"},
		"Find the best customer": {
			"```clojure\n(let [cs (tool/list_customers {:region ctx/region})]\n  (return {:name (:name (first (sort-by :id cs)))}))\n```",
		},
	}}
	env := startFleet(t, model, false)
	missions := map[string]*messages.Mission{
		"tools": {Agent: &messages.AgentSpec{
			Prompt:    "Count the paid orders and name the first customer.",
			Signature: "{n :int, first_customer :string, has_phone :bool}",
			Tools:     []string{"list_orders", "get_customer"},
		}, Tools: []string{"list_orders", "get_customer"}},
		"sub-agent": {Agent: &messages.AgentSpec{
			Prompt: "Summarise the region.", Signature: "{best :string}", Tools: []string{"best_customer"},
			SubAgents: map[string]*messages.AgentSpec{"best_customer": {
				Prompt: "Find the best customer of {{region}}.", Signature: "(region :string) -> {name :string}",
				Tools: []string{"list_customers"},
			}},
		}, Tools: []string{"list_customers"}},
	}
	for name, m := range missions {
		t.Run(name, func(t *testing.T) {
			step := runMission(t, env, m)
			if !step.Ok() {
				t.Fatalf("mission failed: %+v", step.Fail)
			}
			r, stored := replayStored(t, env.client, m.ID, agentrun.ReplayOptions{Models: llm.Registry{"default": failModel}})
			if len(r.Divergences) > 0 {
				t.Fatalf("divergences: %v", r.Divergences)
			}
			if r.Missed != 0 || r.Live != 0 || r.Served != countCalls(stored) {
				t.Errorf("served %d, live %d, missed %d; want all %d from the recording", r.Served, r.Live, r.Missed, countCalls(stored))
			}
			if len(r.Step.Trace) != len(stored.Trace) || r.Step.Trace[0].Program != stored.Trace[0].Program {
				t.Errorf("replayed trace differs")
			}
		})
	}
}

// countCalls counts the remote tool calls of a Step's agent tree.
func countCalls(s *messages.Step) int {
	n := 0
	for _, t := range s.Trace {
		for _, c := range t.ToolCalls {
			if c.Child != nil {
				n += countCalls(c.Child)
			} else {
				n++
			}
		}
	}
	return n
}

// A recording that differs from what the replay computes (a tool result
// changed after the fact) is reported as a divergence naming the turn and
// the first differing value.
func TestReplayReportsDivergence(t *testing.T) {
	model := &script{turns: map[string][]string{"add": {
		"```clojure\n(def n (count (tool/list_orders {:status \"paid\"})))\nn\n```",
		"```clojure\n(return {:n n})\n```",
	}}}
	env := startFleet(t, model, false)
	m := &messages.Mission{Agent: &messages.AgentSpec{Prompt: "add the orders", Tools: []string{"list_orders"}},
		Tools: []string{"list_orders"}}
	step := runMission(t, env, m)
	if !step.Ok() {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	ctx := context.Background()
	rec, err := env.client.Record(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The recorded answer of turn 1's call now has one order.
	edited := *step
	edited.Trace = append([]messages.Turn(nil), step.Trace...)
	calls := append([]messages.ToolCall(nil), edited.Trace[0].ToolCalls...)
	calls[0].Result = calls[0].Result.([]any)[:1]
	edited.Trace[0].ToolCalls = calls
	r, err := agentrun.Replay(ctx, rec, &edited, agentrun.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Divergences) == 0 {
		t.Fatal("no divergence reported")
	}
	d := r.Divergences[0]
	if d.Turn != 0 || d.Path != "return" {
		// the Step's own fields come first
		t.Errorf("first divergence %v, want the return", d)
	}
	var turn1 *agentrun.Divergence
	for i := range r.Divergences {
		if r.Divergences[i].Turn == 1 {
			turn1 = &r.Divergences[i]
		}
	}
	if turn1 == nil || turn1.Path != "result" || turn1.Recorded == turn1.Replayed {
		t.Fatalf("turn 1 divergence %+v, want its result", turn1)
	}
	if s := turn1.String(); !strings.HasPrefix(s, "turn 1: result: recorded ") {
		t.Errorf("divergence reads %q", s)
	}
}

// Replay with another model: its programs' tool calls are served from the
// recording when tool and arguments match; a call the recording does not
// hold fails (no live tools) or reaches the live tool service (Live).
func TestReplayWithAnotherModel(t *testing.T) {
	model := &script{turns: map[string][]string{"orders": {
		"```clojure\n(return {:n (count (tool/list_orders {:status \"paid\"}))})\n```",
	}}}
	env := startFleet(t, model, false)
	m := &messages.Mission{Agent: &messages.AgentSpec{Prompt: "count orders", Signature: "{n :int}", Tools: []string{"list_orders"}},
		Tools: []string{"list_orders"}}
	step := runMission(t, env, m)
	if !step.Ok() {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	other := &script{turns: map[string][]string{"orders": {
		"```clojure\n(return {:n (+ (count (tool/list_orders {:status \"paid\"})) (count (tool/list_orders {:status \"refunded\"})))})\n```",
	}}}
	// Without live tools the unrecorded call fails the program.
	r, _ := replayStored(t, env.client, m.ID, agentrun.ReplayOptions{Model: "other", Models: llm.Registry{"other": other}})
	if r.Served != 1 || r.Missed != 1 {
		t.Errorf("served %d, missed %d; want 1 and 1", r.Served, r.Missed)
	}
	if len(r.Step.Trace) == 0 || !strings.Contains(r.Step.Trace[0].Error, agentrun.ReasonNotRecorded) {
		t.Fatalf("turn 1 error = %q, want %s", r.Step.Trace[0].Error, agentrun.ReasonNotRecorded)
	}
	if len(r.Divergences) == 0 {
		t.Error("a different program is no divergence")
	}
	// With live tools it reaches the shop service.
	nc := env.srv.Conn()
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: m.Tools})
	if err != nil {
		t.Fatal(err)
	}
	r, _ = replayStored(t, env.client, m.ID, agentrun.ReplayOptions{Model: "other", Models: llm.Registry{"other": other}, Live: box})
	if r.Served != 1 || r.Live != 1 || r.Missed != 0 || !r.Step.Ok() {
		t.Fatalf("served %d, live %d, missed %d, fail %+v", r.Served, r.Live, r.Missed, r.Step.Fail)
	}
	n := r.Step.Return.(map[string]any)["n"].(int64)
	if was := step.Return.(map[string]any)["n"].(int64); n <= was {
		t.Errorf("n = %d, want more than the recorded %d", n, was)
	}
}

// A text-mode mission (native tool calls, a JSON answer) replays too: the
// recorded turns give back the model's tool calls, served from the
// recording.
func TestReplayTextMode(t *testing.T) {
	model := llm.Func(func(_ context.Context, req llm.Request) (*llm.Response, error) {
		if req.Turn == 1 {
			return &llm.Response{ToolCalls: []llm.ToolUse{{ID: "call_1", Name: "get_customer", Input: map[string]any{"id": int64(7)}}},
				StopReason: llm.StopToolUse, Usage: llm.Usage{InputTokens: 50, OutputTokens: 5}}, nil
		}
		return &llm.Response{Content: `{"name": "Alan Perlman"}`, Usage: llm.Usage{InputTokens: 80, OutputTokens: 6}}, nil
	})
	env := startFleetWith(t, llm.Registry{"default": model})
	m := &messages.Mission{Agent: &messages.AgentSpec{Prompt: "Name customer 7.", Signature: "{name :string}", Output: messages.ModeText,
		Tools: []string{"get_customer"}}, Tools: []string{"get_customer"}}
	step := runMission(t, env, m)
	if !step.Ok() || step.Mode != messages.ModeText || len(step.Trace) == 0 || len(step.Trace[0].ToolCalls) != 1 {
		t.Fatalf("mission: %+v %+v", step.Fail, step.Trace)
	}
	r, _ := replayStored(t, env.client, m.ID, agentrun.ReplayOptions{})
	if len(r.Divergences) > 0 || r.Served != 1 {
		t.Fatalf("served %d, divergences %v", r.Served, r.Divergences)
	}
}

// Replayed with another model, a sub-agent that names its own model still
// answers from the recording (that model, though configured, is not
// asked), while the top-level agent asks the new model.
func TestReplayWithAnotherModelKeepsSubAgentModels(t *testing.T) {
	model := &script{turns: map[string][]string{
		"Summarise the region":   {"```clojure\n(return {:best (:name (tool/best_customer {:region \"north\"}))})\n```"},
		"Find the best customer": {"```clojure\n(return {:name (:name (first (sort-by :id (tool/list_customers {:region ctx/region}))))})\n```"},
	}}
	env := startFleetWith(t, llm.Registry{"default": model, "sub": model})
	m := &messages.Mission{Agent: &messages.AgentSpec{
		Prompt: "Summarise the region.", Signature: "{best :string}", Tools: []string{"best_customer"},
		SubAgents: map[string]*messages.AgentSpec{"best_customer": {LLM: "sub",
			Prompt: "Find the best customer of {{region}}.", Signature: "(region :string) -> {name :string}",
			Tools: []string{"list_customers"}}},
	}, Tools: []string{"list_customers"}}
	step := runMission(t, env, m)
	if !step.Ok() {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	other := &script{turns: map[string][]string{
		"Summarise the region": {"```clojure\n(return {:best (str \"the best: \" (:name (tool/best_customer {:region \"north\"})))})\n```"},
	}}
	r, _ := replayStored(t, env.client, m.ID, agentrun.ReplayOptions{Model: "other", Models: llm.Registry{"other": other, "sub": failModel}})
	if !r.Step.Ok() || r.Served != 1 || r.Missed != 0 {
		t.Fatalf("replay: fail %+v, served %d, missed %d", r.Step.Fail, r.Served, r.Missed)
	}
	want := "the best: " + step.Return.(map[string]any)["best"].(string)
	if got := r.Step.Return.(map[string]any)["best"]; got != want {
		t.Errorf("best = %v, want %q", got, want)
	}
	if len(r.Divergences) == 0 || r.Divergences[0].Path != "return" {
		t.Errorf("divergences %v, want the return first", r.Divergences)
	}
}
