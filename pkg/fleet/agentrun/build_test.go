package agentrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A mission's limits replace its agent's, limit by limit; the rest keep
// the agent's value or the default.
func TestBuildAgentMissionLimits(t *testing.T) {
	m := &messages.Mission{Kind: messages.KindAgent,
		Agent: &messages.AgentSpec{Prompt: "p", Limits: messages.Limits{MaxTurns: 2, LLMTimeout: time.Minute,
			PromptLimit: messages.PromptLimit{List: 9}}},
		Limits: messages.Limits{LLMTimeout: -1, ProgramTimeout: 5 * time.Second, PromptLimit: messages.PromptLimit{String: 40}}}
	a, err := agentrun.BuildAgent(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := messages.DefaultLimits()
	want.MaxTurns, want.LLMTimeout, want.ProgramTimeout = 2, -1, 5*time.Second
	want.PromptLimit = messages.PromptLimit{List: 9, String: 40}
	if got := a.Spec().Limits; got != want {
		t.Errorf("limits\n got %+v\nwant %+v", got, want)
	}
}
