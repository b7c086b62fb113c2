package agentrun_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// script is a scripted model answering by turn, recording every request.
// Sub-agent requests are told apart by their prompt (req.Prompt).
type script struct {
	mu    sync.Mutex
	reqs  []llm.Request
	turns map[string][]string // prompt substring → replies by turn
}

func (s *script) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req.Clone())
	s.mu.Unlock()
	for key, replies := range s.turns {
		if strings.Contains(req.Prompt, key) {
			if req.Turn < 1 || req.Turn > len(replies) {
				return nil, fmt.Errorf("no reply for turn %d of %q", req.Turn, key)
			}
			return &llm.Response{Content: replies[req.Turn-1], Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}}, nil
		}
	}
	return nil, fmt.Errorf("no script for prompt %q", req.Prompt)
}

func (s *script) requests() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Request(nil), s.reqs...)
}

type fleetEnv struct {
	srv    *fleettest.Server
	client *fleet.Client
	model  *script
}

// startFleet runs an embedded JetStream server, the shop tools (unless
// noTools) and one worker whose runner uses the scripted model.
func startFleet(t *testing.T, model *script, noTools bool) *fleetEnv {
	t.Helper()
	env := startFleetModels(t, llm.Registry{"default": model}, noTools)
	env.model = model
	return env
}

// startFleetWith is startFleet with the shop tools and any models.
func startFleetWith(t *testing.T, models llm.Registry) *fleetEnv {
	t.Helper()
	return startFleetModels(t, models, false)
}

func startFleetModels(t *testing.T, models llm.Registry, noTools bool) *fleetEnv {
	t.Helper()
	srv := fleettest.Start(t)
	if !noTools {
		svc, err := fleet.NewToolService(srv.Conn(), fleet.ToolServiceConfig{Name: shop.ServiceName})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Stop(context.Background()) })
		if err := shop.Generate(200, 1000, 300).Register(svc); err != nil {
			t.Fatal(err)
		}
	}
	return startFleetOn(t, srv, models)
}

// startFleetOn starts one worker whose runner uses models, and a client, on
// srv.
func startFleetOn(t *testing.T, srv *fleettest.Server, models llm.Registry) *fleetEnv {
	t.Helper()
	return startFleetTimeout(t, srv, models, 2*time.Second)
}

// startFleetTimeout is startFleetOn whose worker waits toolTimeout for a
// tool's answer.
func startFleetTimeout(t *testing.T, srv *fleettest.Server, models llm.Registry, toolTimeout time.Duration) *fleetEnv {
	t.Helper()
	conn := srv.Conn
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	store := fleet.StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 2}
	w, err := fleet.NewWorker(conn(), fleet.WorkerConfig{
		Runner: agentrun.New(agentrun.Config{Models: models}),
		Slots:  2, Store: store, ToolTimeout: toolTimeout, IdleWait: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	client, err := fleet.NewClient(ctx, conn(), fleet.ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return &fleetEnv{srv: srv, client: client}
}

func runMission(t *testing.T, env *fleetEnv, m *messages.Mission) *messages.Step {
	t.Helper()
	if m.ID == "" {
		m.ID = messages.NewMissionID()
	}
	if m.Kind == "" {
		m.Kind = messages.KindAgent
	}
	// generous: a race build on a loaded machine runs the large-data
	// missions many times slower than they run here idle
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	step, err := env.client.Run(ctx, m)
	if err != nil {
		t.Fatalf("run mission: %v", err)
	}
	return step
}

func TestMissionWithToolCallsOverNATS(t *testing.T) {
	model := &script{turns: map[string][]string{"paid orders": {
		"```clojure\n(def paid (tool/list_orders {:status \"paid\"}))\n(count paid)\n```",
		"```clojure\n(let [c (tool/get_customer {:id (:customer_id (first paid))})]\n  (return {:n (count paid) :first_customer (:name c) :has_phone (some? (:_phone c))}))\n```",
	}}}
	env := startFleet(t, model, false)
	step := runMission(t, env, &messages.Mission{
		Agent: &messages.AgentSpec{
			Prompt:    "Count the paid orders and name the first customer.",
			Signature: "{n :int, first_customer :string, has_phone :bool}",
			Tools:     []string{"list_orders", "get_customer"},
		},
		Tools: []string{"list_orders", "get_customer"},
	})
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v\ntrace: %+v", step.Fail, step.Trace)
	}
	ret := step.Return.(map[string]any)
	want := 0
	for _, o := range shop.Generate(200, 1000, 300).Orders {
		if o.Status == "paid" {
			want++
		}
	}
	if ret["n"] != int64(want) || ret["first_customer"] == "" || ret["has_phone"] != true {
		t.Errorf("return = %v (want n=%d)", ret, want)
	}
	if step.Usage.Turns != 2 || step.Usage.ToolCalls != 2 || step.Usage.InputTokens != 20 {
		t.Errorf("usage = %+v", step.Usage)
	}
	var calls []string
	for _, turn := range step.Trace {
		for _, c := range turn.ToolCalls {
			calls = append(calls, c.Name)
		}
	}
	if strings.Join(calls, ",") != "list_orders,get_customer" {
		t.Errorf("traced tool calls = %v", calls)
	}
	// The firewall: the customer's phone never reaches the model.
	for _, req := range model.requests() {
		for _, msg := range req.Messages {
			for _, b := range msg.Content {
				if txt, ok := b.(llm.Text); ok && strings.Contains(txt.Text, "+1-555-") {
					t.Fatalf("a firewalled phone number reached the model: %s", txt.Text)
				}
			}
		}
	}
}

func TestToolServiceDownIsAnErrorTheModelSees(t *testing.T) {
	model := &script{turns: map[string][]string{"weather": {
		"```clojure\n(tool/weather {:city \"Oslo\"})\n```",
		"```clojure\n(return {:ok (some? ctx/fail)})\n```",
	}}}
	env := startFleet(t, model, true)
	step := runMission(t, env, &messages.Mission{
		Agent: &messages.AgentSpec{Prompt: "What is the weather?", Signature: "{ok :bool}", Tools: []string{"weather"}},
		Tools: []string{"weather"},
	})
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	if step.Return.(map[string]any)["ok"] != true {
		t.Errorf("ctx/fail was not set after the tool error: %v", step.Return)
	}
	reqs := model.requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	text := fmt.Sprint(last.Content)
	if !strings.Contains(text, "weather") || !strings.Contains(text, "unavailable") {
		t.Errorf("feedback does not tell the model the tool is unavailable: %s", text)
	}
}

// A mission whose agent names a tool the mission does not allow is
// invalid on arrival: the client refuses to submit it, and a worker's
// runner fails it with the names before any model call.
func TestUnallowedToolFailsTheMissionOnArrival(t *testing.T) {
	model := &script{turns: map[string][]string{"customer": {"```clojure\n(return 1)\n```"}}}
	env := startFleet(t, model, false)
	m := &messages.Mission{
		ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Agent: &messages.AgentSpec{Prompt: "Get customer 1.", Tools: []string{"get_customer", "list_orders", "best"},
			SubAgents: map[string]*messages.AgentSpec{"best": {Prompt: "Best customer.", Tools: []string{"list_customers"}}}},
		Tools: []string{"list_orders"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := env.client.Run(ctx, m)
	if !errors.Is(err, messages.ErrInvalid) || !strings.Contains(fmt.Sprint(err), "does not allow: get_customer, list_customers") {
		t.Fatalf("submit: err = %v, want an invalid mission naming get_customer and list_customers", err)
	}
	step, err := agentrun.New(agentrun.Config{Models: llm.Registry{"default": model}}).Run(ctx, m, fleet.RunEnv{})
	if err != nil || step.Fail == nil || step.Fail.Reason != fleet.ReasonInvalid ||
		step.Fail.Message != "the agent names tools the mission does not allow: get_customer, list_customers" {
		t.Fatalf("run: step %+v, err %v", step, err)
	}
	if n := len(model.requests()); n != 0 {
		t.Errorf("%d model calls for an invalid mission", n)
	}
}

func TestSubAgentInFleetMission(t *testing.T) {
	model := &script{turns: map[string][]string{
		"Summarise the region": {
			"```clojure\n(return {:best (:name (tool/best_customer {:region \"north\"}))})\n```",
		},
		"Find the best customer": {
			"```clojure\n(let [cs (tool/list_customers {:region ctx/region})]\n  (return {:name (:name (first (sort-by :id cs)))}))\n```",
		},
	}}
	env := startFleet(t, model, false)
	step := runMission(t, env, &messages.Mission{
		Agent: &messages.AgentSpec{
			Prompt: "Summarise the region.", Signature: "{best :string}",
			Tools: []string{"best_customer"},
			SubAgents: map[string]*messages.AgentSpec{"best_customer": {
				Prompt: "Find the best customer of {{region}}.", Signature: "(region :string) -> {name :string}",
				Description: "the best customer of a region", Tools: []string{"list_customers"},
			}},
		},
		Tools: []string{"list_customers"},
	})
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	if best, _ := step.Return.(map[string]any)["best"].(string); best == "" {
		t.Errorf("return = %v", step.Return)
	}
	calls := step.Trace[0].ToolCalls
	if len(calls) != 1 || calls[0].Name != "best_customer" || calls[0].Child == nil || calls[0].Child.Fail != nil {
		t.Fatalf("sub-agent call not traced with its child step: %+v", calls)
	}
	if step.Usage.Requests != 2 {
		t.Errorf("requests = %d, want 2 (parent and child)", step.Usage.Requests)
	}
}

func TestUnsupportedKindAndBadSpecFailCleanly(t *testing.T) {
	env := startFleet(t, &script{}, true)
	step := runMission(t, env, &messages.Mission{
		Agent: &messages.AgentSpec{Prompt: "Hi {{who}}", Signature: "{x :int}"},
	})
	if step.Fail == nil || step.Fail.Reason != "invalid_agent" || !strings.Contains(step.Fail.Message, "{{who}}") {
		t.Errorf("bad placeholder: fail = %+v", step.Fail)
	}
}

// A mission naming a model the worker lacks fails before any model call,
// saying which variable configures it and where it is read.
func TestMissingModelNamesItsVariable(t *testing.T) {
	env := startFleet(t, &script{}, true)
	for _, c := range []struct {
		m    *messages.Mission
		want string
	}{
		{&messages.Mission{Model: "fast", Agent: &messages.AgentSpec{Prompt: "x"}}, `model "fast" is not configured on this worker (configured: default)`},
		{&messages.Mission{Agent: &messages.AgentSpec{Prompt: "x", LLM: "big"}}, "here PTC_MODEL_BIG"},
		{&messages.Mission{Agent: &messages.AgentSpec{Prompt: "x", Tools: []string{"h"},
			SubAgents: map[string]*messages.AgentSpec{"h": {Prompt: "y", LLM: "haiku"}}}}, `model "haiku"`},
	} {
		step := runMission(t, env, c.m)
		if step.Fail == nil || step.Fail.Reason != "llm_not_found" || !strings.Contains(step.Fail.Message, c.want) ||
			!strings.Contains(step.Fail.Message, "PTC_MODEL_<NAME>=provider:model in its environment when it starts") {
			t.Errorf("fail = %+v, want %q", step.Fail, c.want)
		}
	}
	if n := len(env.model.requests()); n != 0 {
		t.Errorf("%d model calls, want none", n)
	}
}

func TestCompiledMissionRunsWithoutLLM(t *testing.T) {
	model := &script{} // answers nothing: any LLM request fails the mission
	env := startFleet(t, model, false)
	want := map[string]int64{}
	for _, o := range shop.Generate(200, 1000, 300).Orders {
		want[o.Status]++
	}
	step := runMission(t, env, &messages.Mission{
		Kind: messages.KindCompiled,
		Compiled: &messages.CompiledSpec{
			Program:   "(fn [{:keys [status min]}]\n  (count (filter #(>= (:total %) min) (tool/list_orders {:status status}))))",
			Signature: "(status :string, min :float) -> :int",
			Inputs: []map[string]any{
				{"status": "paid"}, {"status": "shipped"}, {"status": int64(42)}, {"status": "paid", "min": 1e12},
			},
		},
		Context: map[string]any{"min": 0.0},
		Tools:   []string{"list_orders"},
	})
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	if n := len(model.requests()); n != 0 {
		t.Fatalf("the model was asked %d times", n)
	}
	if step.Signature != agentrun.CompiledResultSignature {
		t.Fatalf("signature = %q", step.Signature)
	}
	res, ok := step.Return.([]any)
	if !ok || len(res) != 4 {
		t.Fatalf("return = %#v", step.Return)
	}
	entry := func(i int) map[string]any { return res[i].(map[string]any) }
	if entry(0)["value"] != want["paid"] || entry(1)["value"] != want["shipped"] || want["paid"] == 0 {
		t.Fatalf("counts = %v %v, want %d %d", entry(0), entry(1), want["paid"], want["shipped"])
	}
	if entry(3)["value"] != int64(0) {
		t.Fatalf("input 3 (shared min overridden) = %v", entry(3))
	}
	e, ok := entry(2)["error"].(map[string]any)
	if !ok || e["reason"] != "input_validation_error" || !strings.Contains(e["message"].(string), "status") || entry(2)["value"] != nil {
		t.Fatalf("input 2 = %#v, want an input_validation_error entry", entry(2))
	}
	if len(step.Warnings) != 1 || !strings.HasPrefix(step.Warnings[0], "input 2: input_validation_error") {
		t.Fatalf("warnings = %q", step.Warnings)
	}
	if step.Usage.ToolCalls != 3 {
		t.Fatalf("tool calls = %d, want 3", step.Usage.ToolCalls)
	}

	bad := []struct {
		name string
		spec *messages.CompiledSpec
		tool []string
		want string
	}{
		{"two arguments", &messages.CompiledSpec{Program: "(fn [a b] 1)"}, nil, "exactly one argument"},
		{"tool not in the mission", &messages.CompiledSpec{Program: "(fn [_] (tool/list_orders {}))"}, nil, "list_orders"},
		{"bad signature", &messages.CompiledSpec{Program: "(fn [_] 1)", Signature: "(x"}, nil, "signature"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			step := runMission(t, env, &messages.Mission{Kind: messages.KindCompiled, Compiled: tc.spec, Tools: tc.tool})
			if step.Fail == nil || step.Fail.Reason != "invalid_compiled" || !strings.Contains(step.Fail.Message, tc.want) {
				t.Fatalf("fail = %+v, want invalid_compiled mentioning %q", step.Fail, tc.want)
			}
		})
	}
}

func TestCompiledMissionTimeoutReportsEveryInput(t *testing.T) {
	env := startFleet(t, &script{}, true)
	step := runMission(t, env, &messages.Mission{
		Kind: messages.KindCompiled,
		Compiled: &messages.CompiledSpec{
			Program: "(fn [{:keys [n]}] (if (= n 0) (loop [] (recur)) n))",
			Inputs:  []map[string]any{{"n": int64(1)}, {"n": int64(0)}, {"n": int64(2)}},
		},
		Limits: messages.Limits{MissionTimeout: 300 * time.Millisecond},
	})
	if step.Fail == nil || step.Fail.Reason != "mission_timeout" {
		t.Fatalf("fail = %+v, want mission_timeout", step.Fail)
	}
	res, ok := step.Return.([]any)
	if !ok || len(res) != 3 {
		t.Fatalf("return = %#v", step.Return)
	}
	if v := res[0].(map[string]any)["value"]; v != int64(1) {
		t.Fatalf("input 0 = %v, want its value before the timeout", res[0])
	}
	for i := 1; i < 3; i++ {
		e, ok := res[i].(map[string]any)["error"].(map[string]any)
		if !ok || e["reason"] == nil || (i == 1 && e["reason"] != "timeout") {
			t.Fatalf("input %d = %#v, want an error entry", i, res[i])
		}
	}
	if e := res[2].(map[string]any)["error"].(map[string]any); e["reason"] != "mission_timeout" || !strings.Contains(e["message"].(string), "not run") {
		t.Fatalf("input 2 = %#v, want not run: mission_timeout", e)
	}
}

// A mission's program_memory bounds what each program run holds: over it
// the program stops with memory_limit (single-turn: the mission's failure
// reason); the same program passes under the default, and a negative
// mission limit lifts the agent's own. Compiled missions take it too.
func TestMissionProgramMemory(t *testing.T) {
	const prog = "```clojure\n(count (vec (range 100000)))\n```"
	model := &script{turns: map[string][]string{"Hold": {prog}}}
	env := startFleet(t, model, true)
	mission := func(agentLimit int64, l messages.Limits) *messages.Mission {
		return &messages.Mission{Agent: &messages.AgentSpec{Prompt: "Hold a vector.", Signature: ":int",
			Limits: messages.Limits{MaxTurns: 1, ProgramMemory: agentLimit}}, Limits: l}
	}
	step := runMission(t, env, mission(0, messages.Limits{ProgramMemory: 64 << 10}))
	if step.Fail == nil || step.Fail.Reason != "memory_limit" || !strings.Contains(step.Fail.Message, "more than 65536 bytes") {
		t.Fatalf("small program_memory: fail %+v, return %v; want memory_limit", step.Fail, step.Return)
	}
	for name, m := range map[string]*messages.Mission{
		"default":             mission(0, messages.Limits{}),
		"mission lifts agent": mission(64<<10, messages.Limits{ProgramMemory: -1}),
	} {
		if step := runMission(t, env, m); step.Fail != nil || step.Return != int64(100000) {
			t.Fatalf("%s: fail %+v, return %v", name, step.Fail, step.Return)
		}
	}

	compiled := func(l messages.Limits) *messages.Step {
		return runMission(t, env, &messages.Mission{Kind: messages.KindCompiled, Limits: l,
			Compiled: &messages.CompiledSpec{Program: "(fn [_] (count (vec (range 100000))))", Signature: ":int"}})
	}
	step = compiled(messages.Limits{ProgramMemory: 64 << 10})
	res, _ := step.Return.([]any)
	if step.Fail != nil || len(res) != 1 {
		t.Fatalf("compiled: fail %+v, return %#v", step.Fail, step.Return)
	}
	if e, _ := res[0].(map[string]any)["error"].(map[string]any); e == nil || e["reason"] != "memory_limit" {
		t.Fatalf("compiled with small program_memory: %#v, want a memory_limit entry", res[0])
	}
	step = compiled(messages.Limits{})
	if res, _ := step.Return.([]any); len(res) != 1 || res[0].(map[string]any)["value"] != int64(100000) {
		t.Fatalf("compiled with the default: %+v %#v", step.Fail, step.Return)
	}
}

// A mission's max_steps overrides the agent's step budget.
func TestMissionMaxSteps(t *testing.T) {
	model := &script{turns: map[string][]string{"Sum": {"```clojure\n(reduce + (range 100000))\n```"}}}
	env := startFleet(t, model, true)
	m := func(l messages.Limits) *messages.Mission {
		return &messages.Mission{Agent: &messages.AgentSpec{Prompt: "Sum.", Signature: ":int", Limits: messages.Limits{MaxTurns: 1}}, Limits: l}
	}
	if step := runMission(t, env, m(messages.Limits{MaxSteps: 10_000})); step.Fail == nil || step.Fail.Reason != "step_limit" {
		t.Fatalf("max_steps 10000: fail %+v, return %v; want step_limit", step.Fail, step.Return)
	}
	if step := runMission(t, env, m(messages.Limits{})); step.Fail != nil || step.Return != int64(4999950000) {
		t.Fatalf("default: fail %+v, return %v", step.Fail, step.Return)
	}
}

// A remote tool's reply crosses into the program once, from its bytes, and
// comes back unchanged: keys with '-', big integers, 1.0 as a float,
// nesting, from a msgpack and from a JSON tool service alike; the trace
// records the same data.
func TestToolReplyBytesReachTheProgramUnchanged(t *testing.T) {
	bodies, want := fleettest.ToolReplies(t)

	model := &script{turns: map[string][]string{"wire": {"```clojure\n(return {:mp (identity (tool/mp {})) :js (identity (tool/js {}))})\n```"}}}
	srv := fleettest.Start(t)
	svc, err := micro.AddService(srv.Conn(), micro.Config{Name: "wire", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	for name, body := range bodies {
		var hdr micro.Headers
		if name == "js" {
			hdr = micro.Headers{messages.HeaderContentType: {messages.ContentTypeJSON}}
		}
		err := svc.AddEndpoint(name, micro.HandlerFunc(func(r micro.Request) { _ = r.Respond(body, micro.WithHeaders(hdr)) }),
			micro.WithEndpointSubject("tool.wire."+name), micro.WithEndpointMetadata(map[string]string{fleet.MetaTool: name}))
		if err != nil {
			t.Fatal(err)
		}
	}
	env := startFleetOn(t, srv, llm.Registry{"default": model})
	step := runMission(t, env, &messages.Mission{
		Agent: &messages.AgentSpec{Prompt: "Fetch the wire records.", Tools: []string{"mp", "js"}},
		Tools: []string{"mp", "js"},
	})
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v\ntrace: %+v", step.Fail, step.Trace)
	}
	if got := step.Return; !reflect.DeepEqual(got, map[string]any{"mp": want, "js": want}) {
		t.Errorf("return = %#v\nwant both %#v", got, want)
	}
	n := 0
	for _, turn := range step.Trace {
		for _, c := range turn.ToolCalls {
			n++
			if !reflect.DeepEqual(c.Result, want) {
				t.Errorf("traced result of %s = %#v", c.Name, c.Result)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d traced tool calls, want 2", n)
	}
}

// A mission carrying a script runs on it on any worker, one with no model
// of that name included.
func TestScriptedMissionRunsOnAnyWorker(t *testing.T) {
	env := startFleet(t, &script{}, true)
	step := runMission(t, env, &messages.Mission{
		Script: []string{"```clojure\n(def n 20)\n```", "```clojure\n(return {:n (* 2 n)})\n```"},
		Agent:  &messages.AgentSpec{Prompt: "x", Signature: "{n :int}", Limits: messages.Limits{MaxTurns: 3}},
	})
	if step.Fail != nil {
		t.Fatalf("fail = %+v", step.Fail)
	}
	if ret, _ := step.Return.(map[string]any); fmt.Sprint(ret["n"]) != "40" {
		t.Errorf("return = %v", step.Return)
	}
	if n := len(env.model.requests()); n != 0 {
		t.Errorf("%d calls of the worker's own model, want none", n)
	}
}

// A fleet mission's agent spawns a child with a tool set it picks from its
// spawn_agent catalogue: the worker resolves the set's remote tools for
// the child, the parent's model never sees them as its own tools, and the
// child is traced as the call's Child with its usage added.
func TestSpawnAgentInFleetMission(t *testing.T) {
	model := &script{turns: map[string][]string{
		"Summarise the region": {
			"```clojure\n(return (tool/spawn_agent {:prompt \"Find the best customer of the north.\" :tools [\"customers\"] :signature \"{name :string}\"}))\n```",
		},
		"Find the best customer": {
			"```clojure\n(let [cs (tool/list_customers {:region \"north\"})]\n  (return {:name (:name (first (sort-by :id cs)))}))\n```",
		},
	}}
	env := startFleet(t, model, false)
	step := runMission(t, env, &messages.Mission{
		Agent: &messages.AgentSpec{
			Prompt: "Summarise the region.", Signature: "{name :string}",
			SpawnAgent: &messages.SpawnSpec{ToolSets: map[string][]string{
				"customers": {"list_customers"}, "orders": {"list_orders"}}},
		},
		Tools: []string{"list_customers", "list_orders"},
	})
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	if name, _ := step.Return.(map[string]any)["name"].(string); name == "" {
		t.Errorf("return = %v", step.Return)
	}
	calls := step.Trace[0].ToolCalls
	if len(calls) != 1 || calls[0].Name != "spawn_agent" || calls[0].Child == nil || calls[0].Child.Fail != nil ||
		calls[0].Child.Trace[0].ToolCalls[0].Name != "list_customers" {
		t.Fatalf("spawn not traced with its child step: %+v", calls)
	}
	if step.Usage.Requests != 2 {
		t.Errorf("requests = %d, want 2 (parent and child)", step.Usage.Requests)
	}
	reqs := model.requests()
	parent, child := fmt.Sprint(reqs[0].Messages[0].Content), fmt.Sprint(reqs[1].Messages[0].Content)
	if !strings.Contains(parent, `spawn_agent(prompt :string, tools ["customers" | "orders"](min 1)`) || strings.Contains(parent, "- list_customers(") {
		t.Errorf("parent's first message:\n%s", parent)
	}
	if !strings.Contains(child, "- list_customers(") || strings.Contains(child, "list_orders") || strings.Contains(child, "spawn_agent") {
		t.Errorf("child's first message:\n%s", child)
	}
}

// A model call that fails for good on the fleet's own store (a budget the
// worker could not read while a NATS node restarted) hands the mission
// back, to resume from its journal; a call the model failed fails the
// mission.
func TestModelCallFailingOnTheFleetsStoreHandsTheMissionBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	storeDown := llm.MarkRetryable(fmt.Errorf("%w: read budget account.day: nats: no responders available for request", fleet.ErrRetryable), llm.ClassConnection)
	for _, c := range []struct {
		err        error
		handedBack bool
	}{{storeDown, true}, {errors.New("the model refused"), false}} {
		model := llm.Func(func(context.Context, llm.Request) (*llm.Response, error) { return nil, c.err })
		m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
			Agent: &messages.AgentSpec{Prompt: "x", LLMRetry: &messages.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond}}}
		step, err := agentrun.New(agentrun.Config{Models: llm.Registry{"default": model}}).Run(ctx, m, fleet.RunEnv{})
		switch {
		case c.handedBack && (step != nil || !errors.Is(err, fleet.ErrRetryable)):
			t.Errorf("%v: step %+v, err %v; want no step and a retryable error", c.err, step, err)
		case !c.handedBack && (err != nil || step == nil || step.Fail == nil || step.Fail.Reason != "llm_error"):
			t.Errorf("%v: step %+v, err %v; want an llm_error step", c.err, step, err)
		}
	}
}
