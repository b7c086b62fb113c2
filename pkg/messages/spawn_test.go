package messages

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// An agent's spawn_agent catalogue is checked with the spec, and its tools
// are remote tools the mission must allow.
func TestSpawnSpec(t *testing.T) {
	a := &AgentSpec{Prompt: "p", Tools: []string{"search"},
		SpawnAgent: &SpawnSpec{ToolSets: map[string][]string{"email": {"list_emails", "read_email"}, "calendar": {"find_slots", "search"}}}}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := a.RemoteTools(), []string{"search", "find_slots", "list_emails", "read_email"}; !reflect.DeepEqual(got, want) {
		t.Errorf("RemoteTools = %v, want %v", got, want)
	}
	m := &Mission{ID: NewMissionID(), Kind: KindAgent, Agent: a, Tools: []string{"search", "list_emails"}}
	if got := m.UnallowedTools(); !reflect.DeepEqual(got, []string{"find_slots", "read_email"}) {
		t.Errorf("UnallowedTools = %v", got)
	}
	for _, c := range []struct {
		spec *AgentSpec
		want string
	}{
		{&AgentSpec{Prompt: "p", SpawnAgent: &SpawnSpec{}}, `agent.spawn_agent.tool_sets: empty`},
		{&AgentSpec{Prompt: "p", SpawnAgent: &SpawnSpec{ToolSets: map[string][]string{"a": nil}}}, `agent.spawn_agent.tool_sets["a"]: empty`},
		{&AgentSpec{Prompt: "p", SpawnAgent: &SpawnSpec{ToolSets: map[string][]string{`a"b`: {"x"}}}}, `agent.spawn_agent.tool_sets["a\"b"]: "a\"b" is not a valid tool set name`},
		{&AgentSpec{Prompt: "p", SpawnAgent: &SpawnSpec{ToolSets: map[string][]string{"a": {"x y"}}}}, `agent.spawn_agent.tool_sets["a"][0]: "x y" is not a valid tool name`},
		{&AgentSpec{Prompt: "p", SpawnAgent: &SpawnSpec{ToolSets: map[string][]string{"a": {"return"}}}}, `"return" is not a valid tool name`},
		{&AgentSpec{Prompt: "p", Tools: []string{"spawn_agent"}, SpawnAgent: &SpawnSpec{ToolSets: map[string][]string{"a": {"x"}}}}, `agent.spawn_agent: the agent already has a tool named spawn_agent`},
		{&AgentSpec{Prompt: "p", SpawnAgent: &SpawnSpec{ToolSets: map[string][]string{"a": {"x"}}, Limits: Limits{MaxCostUSD: math.NaN()}}}, `agent.spawn_agent.max_cost_usd: NaN is not a finite number`},
	} {
		err := c.spec.Validate()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate: %v, want %s", err, c.want)
		}
	}
}

// TestRemoteToolsAllocations: listing the remote tools of an agent with no
// sub-agents and no spawn_agent allocates only the list.
func TestRemoteToolsAllocations(t *testing.T) {
	a := &AgentSpec{Name: "a", Tools: []string{"get_order"}}
	if n := testing.AllocsPerRun(100, func() {
		if got := a.RemoteTools(); len(got) != 1 || got[0] != "get_order" {
			t.Fatalf("remote tools %v", got)
		}
	}); n > 1 {
		t.Fatalf("%.0f allocations, want at most 1", n)
	}
}

// TestUnallowedToolsOfAPlainAgent: an agent with no sub-agent and no
// spawn_agent tool sets is checked against the mission's tools in place,
// with the same answer as from its RemoteTools, and with no allocation
// when every tool is allowed.
func TestUnallowedToolsOfAPlainAgent(t *testing.T) {
	for _, c := range []struct{ tools, allowed []string }{
		{nil, nil},
		{[]string{"get_customer"}, []string{"get_customer"}},
		{[]string{"b", "a", "b", "c"}, []string{"c"}},
		{[]string{"x", "y"}, nil},
	} {
		m := &Mission{Kind: KindAgent, Agent: &AgentSpec{Prompt: "p", Tools: c.tools}, Tools: c.allowed}
		var want []string
		for _, n := range m.Agent.RemoteTools() {
			if !slices.Contains(m.Tools, n) {
				want = append(want, n)
			}
		}
		slices.Sort(want)
		if got := m.UnallowedTools(); !reflect.DeepEqual(got, want) {
			t.Errorf("tools %q allowed %q: UnallowedTools = %q, want %q", c.tools, c.allowed, got, want)
		}
	}
	m := &Mission{Kind: KindAgent, Agent: &AgentSpec{Prompt: "p", Tools: []string{"get_customer", "list_orders"}},
		Tools: []string{"list_orders", "get_customer"}}
	if n := testing.AllocsPerRun(100, func() { _ = m.UnallowedTools() }); n != 0 {
		t.Errorf("UnallowedTools: %v allocations, want 0", n)
	}
}
