package agentrun_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// usageModel answers every call with the same program and usage.
type usageModel struct {
	code  string
	usage llm.Usage
	calls int
}

func (m *usageModel) Complete(context.Context, llm.Request) (*llm.Response, error) {
	m.calls++
	return &llm.Response{Content: "```clojure\n" + m.code + "\n```", Usage: m.usage}, nil
}

// startBudgetFleet runs one worker with ceilings whose models are reg.
func startBudgetFleet(t *testing.T, reg llm.Registry, c fleet.Ceilings) *fleet.Client {
	t.Helper()
	srv := fleettest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	w, err := fleet.NewWorker(srv.Conn(), fleet.WorkerConfig{Runner: agentrun.New(agentrun.Config{Models: reg}),
		Slots: 2, IdleWait: 100 * time.Millisecond, Ceilings: c})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	client, err := fleet.NewClient(ctx, srv.Conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func budgetMission(limits messages.Limits) *messages.Mission {
	return &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Limits: limits,
		Agent: &messages.AgentSpec{Prompt: "Count to three.", LLMOpts: map[string]any{"max_tokens": 100},
			Limits: messages.Limits{MaxTurns: 5}}}
}

// A fleet mission's max_cost_usd holds across its turns: the model call
// that does not fit is not made, and the Step fails budget_exceeded with
// its trace and usage; a worker's ceiling is the budget of a mission that
// sets none, and refuses one that asks for more.
func TestMissionMaxCostUSDInTheFleet(t *testing.T) {
	// a call reserves its prompt at $1 per million tokens and its 100
	// tokens of output at $100 per million (over $0.01) and costs
	// $0.00901: a second call does not fit under $0.015
	m := &usageModel{code: "(def n 1)", usage: llm.Usage{InputTokens: 10, OutputTokens: 90}}
	client := startBudgetFleet(t, llm.Registry{"default": llm.WithPrices(m, llm.Prices{Input: 1, Output: 100})},
		fleet.Ceilings{MaxCostUSD: 0.015})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, tc := range []struct {
		name   string
		limits messages.Limits
	}{{"own limit", messages.Limits{MaxCostUSD: 0.015}}, {"the ceiling as budget", messages.Limits{}}} {
		m.calls = 0
		step, err := client.Run(ctx, budgetMission(tc.limits))
		if err != nil {
			t.Fatal(err)
		}
		if step.Fail == nil || step.Fail.Reason != "budget_exceeded" || !strings.Contains(step.Fail.Message, "max_cost_usd 0.015") {
			t.Fatalf("%s: fail = %+v, want budget_exceeded naming max_cost_usd 0.015", tc.name, step.Fail)
		}
		if m.calls != 1 || step.Usage.OutputTokens != 90 || math.Abs(step.Usage.CostUSD-0.00901) > 1e-12 || len(step.Trace) != 2 {
			t.Errorf("%s: %d calls, usage %+v, %d turns traced; want 1 call, its usage, 2 turns", tc.name, m.calls, step.Usage, len(step.Trace))
		}
	}

	step, err := client.Run(ctx, budgetMission(messages.Limits{MaxCostUSD: 5}))
	if err != nil {
		t.Fatal(err)
	}
	if step.Fail == nil || step.Fail.Reason != fleet.ReasonOverLimit || !strings.Contains(step.Fail.Message, "mission.limits.max_cost_usd 5 is over this worker's ceiling of 0.015") {
		t.Errorf("fail = %+v, want over_limit naming max_cost_usd", step.Fail)
	}
}
