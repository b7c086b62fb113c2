package agentrun_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/syncbuf"
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

// sizedModel answers (return 1) with usage below what a budget reserves
// for the request: a quarter token per byte of prompt, 50 tokens out.
type sizedModel struct{}

func (sizedModel) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Text())
	}
	return &llm.Response{Content: "```clojure\n(return 1)\n```", Usage: llm.Usage{InputTokens: int64(n / 4), OutputTokens: 50}}, nil
}

// A fleet-wide budget holds under concurrency: 8 workers run 500 missions
// of one submitter at once against a day budget worth 100 of them. What is
// spent stays within the budget (no reservation is in flight at the end),
// every other mission ends budget_exceeded naming the budget, and the 80%
// and 100% alerts are raised once each.
func TestFleetBudgetHoldsAcrossWorkers(t *testing.T) {
	srv := fleettest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	metrics, err := fleet.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	models := llm.Registry{"default": llm.WithPrices(sizedModel{}, llm.Prices{Input: 1, Output: 2})}
	// the workers' warnings and errors (a budget not settled says why)
	// are shown when the test fails
	var logs syncbuf.Buffer
	log := zerolog.New(&logs).With().Timestamp().Logger().Level(zerolog.WarnLevel)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker warnings and errors:\n%s", logs.String())
		}
	})
	const workers, slots = 8, 4
	for i := range workers {
		w, err := fleet.NewWorker(srv.Conn(), fleet.WorkerConfig{ID: fmt.Sprintf("w%d", i), Runner: agentrun.New(agentrun.Config{Models: models}),
			Slots: slots, IdleWait: 100 * time.Millisecond, Metrics: metrics, Tenant: "acme", Logger: &log})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Stop() })
	}
	nc := srv.Conn()
	// a mission is charged to the submitter its client submits as (its
	// NATS user; this server has none, so each client names its own)
	submitter := func(name string) *fleet.Client {
		c, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Submitter: name})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	client := submitter("alice")
	mission := func() *messages.Mission {
		return &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
			Agent: &messages.AgentSpec{Prompt: "Return one.", LLMOpts: map[string]any{"max_tokens": 100}}}
	}
	// what one mission costs, measured on a submitter without a budget
	probe, err := submitter("probe").Run(ctx, mission())
	if err != nil || probe.Fail != nil || probe.Usage.CostUSD <= 0 {
		t.Fatalf("probe mission: %v %+v", err, probe)
	}
	per := probe.Usage.CostUSD
	budget := 100 * per
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := fleet.SetBudget(ctx, js, fleet.BudgetLimit{Scope: fleet.BudgetSubmitterScope("alice"), Window: fleet.BudgetDay, MaxCostUSD: budget}); err != nil {
		t.Fatal(err)
	}

	const n = 500
	ids := make([]string, n)
	for i := range ids {
		m := mission()
		ids[i] = m.ID
		if _, err := client.Submit(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	succeeded, refused := 0, 0
	for _, id := range ids {
		st, err := client.Await(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case st.Fail == nil:
			succeeded++
		case st.Fail.Reason == "budget_exceeded" && strings.Contains(st.Fail.Message, "submitter alice's day budget: max_cost_usd"):
			refused++
		default:
			t.Fatalf("mission %s: %+v", id, st.Fail)
		}
	}
	// a settle that did not succeed within its try (a loaded machine)
	// is tried again in the background until it does
	var spend fleet.BudgetSpend
	for wait := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		list, err := fleet.ListBudgets(ctx, js, time.Now())
		if err != nil || len(list) != 1 {
			t.Fatalf("budgets: %v %+v", err, list)
		}
		if spend = list[0].Spend; len(spend.Held) == 0 || time.Since(wait) > time.Minute {
			break
		}
	}
	got := scrape(t, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Logf("%d succeeded, %d refused; spent $%.6f of $%.6f (one mission $%.6f); reserved at the end $%g; compare-and-set writes lost: %v reserving, %v settling; %d settles tried again in the background",
		succeeded, refused, spend.CostUSD, budget, per, spend.ReservedCostUSD,
		got["ptc_budget_conflicts_total{op=reserve,tenant=acme}"], got["ptc_budget_conflicts_total{op=settle,tenant=acme}"],
		strings.Count(logs.String(), "budget not settled yet"))
	if succeeded+refused != n || succeeded > 100 || succeeded < 50 {
		t.Errorf("%d succeeded, %d refused: want at most 100 (and most of them) to succeed", succeeded, refused)
	}
	if spend.CostUSD > budget+1e-9 || spend.ReservedCostUSD > 1e-9 || spend.ReservedTokens != 0 || len(spend.Held) != 0 {
		t.Errorf("spend %+v over the budget $%v, or reservations left held", spend, budget)
	}
	if math.Abs(spend.CostUSD-float64(succeeded)*per) > 1e-9 {
		t.Errorf("spent $%v, want the %d missions' $%v", spend.CostUSD, succeeded, float64(succeeded)*per)
	}
	// the alerts are events of the missions whose calls reached them
	alerts := map[int64]int{}
	for _, id := range ids {
		evs, err := client.Events(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Kind == messages.EventBudget && ev.Data["budget"] == "submitter alice's day budget" {
				p, _ := ev.Data["percent"].(int64)
				alerts[p]++
			}
		}
	}
	// (an alert a settle tried again in the background reaches is counted
	// but not published: its mission may have ended)
	background := strings.Count(logs.String(), "budget not settled yet") > 0
	for _, level := range []int64{80, 100} {
		if alerts[level] != 1 && !(background && alerts[level] == 0) {
			t.Errorf("budget events by percent: %v, want one at 80 and one at 100", alerts)
		}
	}
	if len(alerts) > 2 {
		t.Errorf("budget events by percent: %v, want one at 80 and one at 100", alerts)
	}
	got = scrape(t, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	for _, level := range []string{"80", "100"} {
		if v := got["ptc_budget_alerts_total{level="+level+",submitter=alice,tenant=acme,window=day}"]; v != 1 {
			t.Errorf("alerts at %s%% = %v, want 1", level, v)
		}
	}
	if v := got["ptc_spend_usd_total{model=default,submitter=alice,tenant=acme}"]; math.Abs(v-spend.CostUSD) > 1e-9 {
		t.Errorf("ptc_spend_usd_total{alice} = %v, want %v", v, spend.CostUSD)
	}
	if v := got["ptc_budget_refusals_total{submitter=alice,tenant=acme}"]; v != float64(refused) {
		t.Errorf("ptc_budget_refusals_total{alice} = %v, want %d", v, refused)
	}
}
