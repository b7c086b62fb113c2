package agentrun

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// serveWhoami serves the tool whoami, which answers the id of the mission
// calling it.
func serveWhoami(t *testing.T, srv *fleettest.Server) {
	t.Helper()
	svc, err := fleet.NewToolService(srv.Conn(), fleet.ToolServiceConfig{Name: "who"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	err = svc.Register("whoami", fleet.ToolSpec{Signature: "() -> :string", Description: "The calling mission's id."},
		func(ctx context.Context, _ map[string]any) (any, error) {
			ci, _ := fleet.CallInfoFrom(ctx)
			return ci.MissionID, nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

func whoamiMission(limits messages.Limits) *messages.Mission {
	return &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Tools: []string{"whoami"}, Limits: limits,
		Agent: &messages.AgentSpec{Prompt: "Say who you are.", Signature: ":string", Tools: []string{"whoami"},
			SystemPrefix: "You are a test.", Limits: messages.Limits{MaxTurns: 3}}}
}

func missionBox(t *testing.T, srv *fleettest.Server, m *messages.Mission) *fleet.Toolbox {
	t.Helper()
	box, err := fleet.NewToolbox(srv.Conn(), fleet.ToolboxConfig{Tools: m.Tools, MissionID: m.ID})
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// Missions of one spec (and limits) share the agent built once: its
// signature, template and system prompt, which is the one agent.New gives;
// each calls its own tools and runs under its own limits, concurrently.
func TestRunnerBuildsAnAgentSpecOnce(t *testing.T) {
	srv := fleettest.Start(t)
	serveWhoami(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := New(Config{})
	first := whoamiMission(messages.Limits{})
	fresh, err := BuildAgent(ctx, first, missionBox(t, srv, first))
	if err != nil {
		t.Fatal(err)
	}
	pv, err := agent.PreviewPrompt(fresh, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	missions := make([]*messages.Mission, n)
	agents := make([]*agent.Agent, n)
	for i := range missions {
		missions[i] = whoamiMission(messages.Limits{})
		agents[i], err = buildAgent(ctx, missions[i], missionBox(t, srv, missions[i]), &turnTracker{}, r.agents)
		if err != nil {
			t.Fatal(err)
		}
	}
	if r.agents.len() != 1 {
		t.Fatalf("%d agents kept for one spec, want 1", r.agents.len())
	}
	key, _ := agentKey(first)
	kept := r.agents.get(key)
	for i, a := range agents {
		if a.Signature() != kept.Signature() {
			t.Fatalf("mission %d does not share the kept agent's signature", i)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := llmtest.New(llmtest.Code("(return (tool/whoami {}))"))
			st, err := a.Run(ctx, agent.RunOptions{Model: m})
			switch {
			case err != nil:
				errs[i] = err
			case st.Return != missions[i].ID:
				errs[i] = fmt.Errorf("mission %d: the tool answered %v, want its own id %s", i, st.Return, missions[i].ID)
			case m.Requests()[0].System != pv.System:
				errs[i] = fmt.Errorf("mission %d sent the system prompt\n%s\nwant agent.New's\n%s", i, m.Requests()[0].System, pv.System)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// what the Runner keeps calls no mission's tool
	st, _ := kept.Run(ctx, agent.RunOptions{Model: llmtest.New(llmtest.Code("(return (tool/whoami {}))"), llmtest.Code("(return 1)"))})
	if st == nil || len(st.Trace) == 0 || len(st.Trace[0].ToolCalls) == 0 || !strings.Contains(st.Trace[0].ToolCalls[0].Error, errUnboundTool.Error()) {
		t.Fatalf("the kept agent's tool call: %+v, want %v", st, errUnboundTool)
	}

	// other limits, or any other field of the spec, are another agent
	other := whoamiMission(messages.Limits{ProgramTimeout: 7 * time.Second})
	a, err := buildAgent(ctx, other, missionBox(t, srv, other), &turnTracker{}, r.agents)
	if err != nil {
		t.Fatal(err)
	}
	if a.Spec().ProgramTimeout != 7*time.Second || a.Signature() == kept.Signature() {
		t.Fatalf("a mission with other limits got limits %+v, shared signature %v", a.Spec().Limits, a.Signature() == kept.Signature())
	}
	if pv, _ := agent.PreviewPrompt(a, nil); !strings.Contains(pv.System, "7 s a program") {
		t.Fatalf("the system prompt of other limits:\n%s", pv.System)
	}
	changes := []func(*messages.AgentSpec){
		func(w *messages.AgentSpec) { w.Prompt += "!" },
		func(w *messages.AgentSpec) { w.Signature = ":any" },
		func(w *messages.AgentSpec) { w.SystemPrefix = "" },
		func(w *messages.AgentSpec) { w.LLMOpts = map[string]any{"temperature": 0.5} },
		func(w *messages.AgentSpec) { w.ToolCatalog = []messages.ToolSchema{{Name: "later"}} },
		func(w *messages.AgentSpec) { w.Name = "named" },
	}
	for i, change := range changes {
		m := whoamiMission(messages.Limits{})
		change(m.Agent)
		if _, err := buildAgent(ctx, m, missionBox(t, srv, m), &turnTracker{}, r.agents); err != nil {
			t.Fatal(err)
		}
		if got, want := r.agents.len(), 3+i; got != want {
			t.Fatalf("change %d: %d agents kept, want %d", i, got, want)
		}
	}
}

// A spec that does not build is not kept, and its error is the one of an
// uncached build; specs with sub-agents are built per mission.
func TestAgentCacheKeepsOnlyWhatBuilds(t *testing.T) {
	ctx := context.Background()
	r := New(Config{})
	bad := &messages.Mission{Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "{{x}}", Signature: "(y :int) -> :int"}}
	for range 2 {
		_, err := buildAgent(ctx, bad, nil, &turnTracker{}, r.agents)
		_, want := BuildAgent(ctx, bad, nil)
		if err == nil || err.Error() != want.Error() {
			t.Fatalf("err = %v, want %v", err, want)
		}
	}
	sub := &messages.Mission{Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "p",
		SubAgents: map[string]*messages.AgentSpec{"helper": {Prompt: "help"}}}}
	if _, err := buildAgent(ctx, sub, nil, &turnTracker{}, r.agents); err != nil {
		t.Fatal(err)
	}
	if n := r.agents.len(); n != 0 {
		t.Fatalf("%d agents kept, want 0", n)
	}
}

func TestAgentCacheBounds(t *testing.T) {
	c := newAgentCache()
	a, err := agent.New(agent.Spec{Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range agentCacheEntries + 10 {
		c.put("spec "+strconv.Itoa(i), a)
	}
	if c.len() != agentCacheEntries || len(c.order) != agentCacheEntries || c.get("spec 9") != nil || c.get("spec 10") == nil {
		t.Fatalf("%d kept (order %d); spec 9 kept %v, spec 10 kept %v", c.len(), len(c.order), c.get("spec 9") != nil, c.get("spec 10") != nil)
	}
	big := strings.Repeat("x", agentCacheBytes/2)
	c.put(big+"1", a)
	c.put(big+"2", a)
	if c.bytes > agentCacheBytes || c.get(big+"1") != nil || c.get(big+"2") == nil {
		t.Fatalf("bytes %d (bound %d); first big kept %v", c.bytes, agentCacheBytes, c.get(big+"1") != nil)
	}
	c.put(strings.Repeat("x", agentCacheBytes+1), a)
	if c.get(strings.Repeat("x", agentCacheBytes+1)) != nil {
		t.Fatal("a key over the byte bound is kept")
	}
}

// agentKey: equal specs (maps filled in any order) give equal keys, any
// difference another key (an integer option is not the float of the same
// value, nor are other limits the same), and a key costs the encoding and
// its string.
func TestAgentKey(t *testing.T) {
	withOpts := func(opts ...any) *messages.Mission {
		m := whoamiMission(messages.Limits{})
		m.Agent.LLMOpts = map[string]any{}
		for i := 0; i+1 < len(opts); i += 2 {
			m.Agent.LLMOpts[opts[i].(string)] = opts[i+1]
		}
		return m
	}
	key := func(m *messages.Mission) string {
		k, ok := agentKey(m)
		if !ok {
			t.Fatalf("no key for %+v", m.Agent)
		}
		return k
	}
	base := key(withOpts("temperature", 0.5, "max_tokens", int64(100), "top_p", 0.9))
	for range 20 {
		if key(withOpts("top_p", 0.9, "max_tokens", int64(100), "temperature", 0.5)) != base {
			t.Fatal("equal specs give different keys")
		}
	}
	if key(withOpts("temperature", 0.5, "max_tokens", 100.0, "top_p", 0.9)) == base {
		t.Fatal("an integer option and its float give one key")
	}
	other := withOpts("temperature", 0.5, "max_tokens", int64(100), "top_p", 0.9)
	other.Limits.MaxTurns = 2
	if key(other) == base {
		t.Fatal("other limits give the same key")
	}
	m := withOpts("temperature", 0.5)
	limit := 3.0
	if fleettest.Race {
		limit = 8 // sync.Pool drops some of what it is given
	}
	if n := testing.AllocsPerRun(100, func() { key(m) }); n > limit {
		t.Fatalf("%.0f allocations per key, want at most %.0f", n, limit)
	}
}

// Finding the agent kept for a mission's spec encodes its key into a kept
// buffer and looks it up without a copy: no allocation; a spec not kept
// gets the key agentKey gives.
func TestAgentCacheFindAllocations(t *testing.T) {
	c := newAgentCache()
	m := whoamiMission(messages.Limits{})
	kept, key, ok := c.find(m)
	if kept != nil || !ok {
		t.Fatalf("find in an empty cache = %v, %v", kept, ok)
	}
	if want, _ := agentKey(m); key != want {
		t.Fatal("find's key is not agentKey's")
	}
	a, err := agent.New(agent.Spec{Prompt: "p", Signature: "() -> :any"})
	if err != nil {
		t.Fatal(err)
	}
	c.put(key, a)
	if kept, _, _ := c.find(m); kept != a {
		t.Fatal("the kept agent is not found")
	}
	if fleettest.Race {
		t.Skip("sync.Pool drops some of what it is given")
	}
	// a copy of the spec, the encoding and its string made it 3
	if n := testing.AllocsPerRun(100, func() { c.find(m) }); n != 0 {
		t.Fatalf("%.0f allocations to find a kept agent, want 0", n)
	}
}
