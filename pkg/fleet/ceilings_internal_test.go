package fleet

import (
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Checking a mission within the ceilings, every worker's first step with
// each mission, allocates nothing: a limit's path is put together only to
// describe a limit over its ceiling.
func TestCeilingCheckOfAMissionWithinAllocatesNothing(t *testing.T) {
	c := Ceilings{MissionTimeout: time.Minute, MaxTurns: 20, ProgramMemory: 16 << 20, MaxData: 64 << 20, EmitRate: 100,
		MaxCostUSD: 5, MaxTokens: 1000, LLMRetryAttempts: 5, LLMRetryMaxDelay: time.Second}
	m := &messages.Mission{Limits: messages.Limits{MissionTimeout: 30 * time.Second, MaxData: 1 << 20},
		Agent: &messages.AgentSpec{Prompt: "p", Limits: messages.Limits{MaxTurns: 5, ProgramMemory: 1 << 20},
			LLMRetry: &messages.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond}, LLMOpts: map[string]any{"temperature": 0.2}}}
	if over := c.check(m); over != "" {
		t.Fatalf("within the ceilings: %s", over)
	}
	if n := testing.AllocsPerRun(100, func() { _ = c.check(m) }); n != 0 {
		t.Fatalf("%.1f allocations per check of a mission within the ceilings, want 0", n)
	}
	m.Agent.MaxTurns = 21
	if over, want := c.check(m), "mission.agent.max_turns 21 is over this worker's ceiling of 20"; over != want {
		t.Fatalf("over: %q, want %q", over, want)
	}
}
