package agent

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A run whose next model call would pass its max_cost_usd ends with
// budget_exceeded before the call is made, keeping its trace and usage.
func TestMaxCostUSDEndsTheRun(t *testing.T) {
	m := llmtest.New(
		llmtest.Code(`(def x 1)`).WithUsage(19000, 500),
		llmtest.Code(`(return x)`).WithUsage(100, 10),
	)
	a := mustNew(t, Spec{Prompt: "Go", LLMOpts: map[string]any{"max_tokens": 1000},
		Limits: Limits{MaxTurns: 3, MaxCostUSD: 0.02}})
	st, err := a.Run(context.Background(), RunOptions{Model: llm.WithPrices(m, llm.Prices{Input: 1, Output: 1})})
	if !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("err = %v, want budget_exceeded", err)
	}
	if st.Fail.Reason != ReasonBudgetExceeded || !strings.Contains(st.Fail.Message, "max_cost_usd 0.02") {
		t.Errorf("fail = %+v", st.Fail)
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("the model got %d calls, want 1: the second does not fit", n)
	}
	if len(st.Trace) != 2 || st.Trace[0].Program == "" || st.Trace[1].Error == "" {
		t.Errorf("trace = %+v, want the first turn and the refused one", st.Trace)
	}
	if math.Abs(st.Usage.CostUSD-0.0195) > 1e-12 || st.Usage.InputTokens != 19000 {
		t.Errorf("usage = %+v, want the first call's", st.Usage)
	}
}

// Sub-agents spend from their caller's budget: the helper's call fills
// max_tokens and the caller's next turn ends the run.
func TestSubAgentsSpendFromTheSameBudget(t *testing.T) {
	sub := llmtest.New(llmtest.Code(`(return 7)`).WithUsage(3800, 100))
	parent := llmtest.New(
		llmtest.Code(`(def n (tool/helper {}))`).WithUsage(1000, 100),
		llmtest.Code(`(return n)`),
	)
	helper := mustNew(t, Spec{Name: "helper", Prompt: "Help", Model: sub, LLMOpts: map[string]any{"max_tokens": 100}})
	a := mustNew(t, Spec{Name: "main", Prompt: "Go", LLMOpts: map[string]any{"max_tokens": 100},
		Tools: map[string]Tool{"helper": helper.AsTool(ToolOptions{})}, Limits: Limits{MaxTokens: 5000}})
	st, err := a.Run(context.Background(), RunOptions{Model: parent})
	if !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("err = %v, want budget_exceeded; step %+v", err, st.Fail)
	}
	if !strings.Contains(st.Fail.Message, "max_tokens 5000") {
		t.Errorf("message %q does not name the budget", st.Fail.Message)
	}
	if len(sub.Requests()) != 1 || len(parent.Requests()) != 1 {
		t.Errorf("calls: helper %d, main %d; want 1 and 1", len(sub.Requests()), len(parent.Requests()))
	}
	if st.Usage.TotalTokens != 5000 {
		t.Errorf("usage = %+v, want both calls' 5000 tokens", st.Usage)
	}
}

// A cost bound cannot be checked against a model without prices: the call
// is refused, not made unbounded.
func TestMaxCostUSDRefusesAnUnpricedModel(t *testing.T) {
	m := llmtest.New(llmtest.Code(`(return 1)`))
	a := mustNew(t, Spec{Prompt: "Go", Limits: Limits{MaxCostUSD: 1}})
	st, err := a.Run(context.Background(), RunOptions{Model: m})
	if !errors.Is(err, ErrBudgetExceeded) || !strings.Contains(st.Fail.Message, "has no prices") {
		t.Fatalf("err = %v, fail %+v", err, st.Fail)
	}
	if len(m.Requests()) != 0 {
		t.Error("the unpriced model was called")
	}
}

// A mission's limits carry the budget through the wire form.
func TestBudgetFromWireLimits(t *testing.T) {
	var l messages.Limits
	if err := messages.Unmarshal(mustMarshal(t, messages.Limits{MaxCostUSD: 0.25, MaxTokens: 9}), &l); err != nil {
		t.Fatal(err)
	}
	if l.MaxCostUSD != 0.25 || l.MaxTokens != 9 {
		t.Fatalf("limits = %+v", l)
	}
	if got := (messages.Limits{MaxCostUSD: 1}).Override(messages.Limits{MaxCostUSD: 0.5}); got.MaxCostUSD != 0.5 {
		t.Errorf("override = %+v", got)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := messages.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Reservations in flight count: of many concurrent calls each estimated
// at 100 tokens against 1,000, at most 10 are admitted until one settles.
func TestLimitCountsReservationsInFlight(t *testing.T) {
	l := llm.NewLimit("b", 0, 1000)
	var mu sync.Mutex
	var held []llm.Reservation
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			r, err := l.Reserve(context.Background(), "m", llm.Estimate{InputTokens: 60, OutputTokens: 40})
			if err == nil {
				mu.Lock()
				held = append(held, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(held) != 10 {
		t.Fatalf("%d reservations admitted, want 10", len(held))
	}
	held[0].Settle(context.Background(), llm.Usage{InputTokens: 10, OutputTokens: 5})
	held[0].Settle(context.Background(), llm.Usage{InputTokens: 10, OutputTokens: 5}) // settled once
	if _, err := l.Reserve(context.Background(), "m", llm.Estimate{InputTokens: 60, OutputTokens: 25}); err != nil {
		t.Errorf("85 tokens should fit after a 100-token reservation settled at 15: %v", err)
	}
	if l.Spent().Total() != 15 {
		t.Errorf("spent %d, want 15", l.Spent().Total())
	}
}

// A max_cost_usd no run can be held to is a spec error naming the field.
func TestMaxCostUSDMustBeFinite(t *testing.T) {
	_, err := New(Spec{Prompt: "Go", Limits: Limits{MaxCostUSD: math.NaN()}})
	var ae *Error
	if !errors.As(err, &ae) || ae.Field != "limits" || !strings.Contains(ae.Msg, "max_cost_usd: NaN is not a finite number") {
		t.Fatalf("err = %v", err)
	}
}
