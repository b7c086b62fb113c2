package agentrun_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A fleet mission's agent with a plan, llm_query and emitting programs:
// the model sees the plan and the query, the submitter's events carry the
// plan's progress and the emitted values (firewalled), and the query's
// usage is the mission's.
func TestPlanEmitAndLLMQueryInFleetMission(t *testing.T) {
	model := &script{turns: map[string][]string{
		"Sum the orders": {
			"```clojure\n(step-done \"1\" \"fetched 3 orders\")\n(emit {:partial 6 :_key ctx/_key})\n" +
				"(def l (llm-query {:prompt \"Label the total\" :signature \"{label :string}\" :input {:total 6}}))\n{:label (:label l)}\n```",
			"```clojure\n(step-done \"2\" \"summed\")\n(return {:total 6 :label label})\n```",
		},
		"Label the total": {`{"label": "small"}`},
	}}
	env := startFleet(t, model, true)
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Context: map[string]any{"_key": "k-9931-hidden"},
		Agent: &messages.AgentSpec{Prompt: "Sum the orders", Signature: "{total :int, label :string}", LLMQuery: true,
			Plan: []string{"Fetch the orders", "Sum them"}}}
	step := runMission(t, env, m)
	if step.Fail != nil {
		t.Fatalf("fail = %+v", step.Fail)
	}
	if fmt.Sprint(step.Return) != "map[label:small total:6]" {
		t.Fatalf("return %v", step.Return)
	}
	if step.Usage.Requests != 3 || step.Usage.InputTokens != 30 {
		t.Fatalf("usage %+v: the query's request is not counted", step.Usage)
	}
	reqs := model.requests()
	first := reqs[0].Messages[0].Text()
	if !strings.Contains(reqs[0].System, "- (emit value)") {
		t.Fatalf("system prompt lacks emit:\n%s", reqs[0].System)
	}
	for _, want := range []string{"## Plan\n1. [ ] Fetch the orders", "## Services\n- (llm-query {:prompt"} {
		if !strings.Contains(first, want) {
			t.Fatalf("first message lacks %q:\n%s", want, first)
		}
	}
	if q := reqs[1].Messages[0].Text(); !strings.Contains(q, "Label the total") || !strings.Contains(q, `{"total":6}`) {
		t.Fatalf("query request:\n%s", q)
	}
	if last := reqs[2].Messages[len(reqs[2].Messages)-1].Text(); !strings.Contains(last, "1. [x] Fetch the orders — fetched 3 orders") {
		t.Fatalf("turn 2 feedback:\n%s", last)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var plans, emits []*messages.Event
	err := env.client.Watch(ctx, m.ID, func(ev *messages.Event) error {
		switch ev.Kind {
		case messages.EventPlan:
			plans = append(plans, ev)
		case messages.EventEmit:
			emits = append(emits, ev)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 3 || plans[0].Tool != "" || plans[1].Tool != "1" || plans[2].Tool != "2" {
		t.Fatalf("plan events %+v", plans)
	}
	want := []messages.PlanStep{{ID: "1", Description: "Fetch the orders", Done: true, Summary: "fetched 3 orders"}, {ID: "2", Description: "Sum them"}}
	if !reflect.DeepEqual(plans[1].Plan, want) {
		t.Fatalf("plan after step 1: %+v", plans[1].Plan)
	}
	if len(emits) != 1 || emits[0].Turn != 1 {
		t.Fatalf("emit events %+v", emits)
	}
	if got := fmt.Sprint(emits[0].Result); got != "map[_key:<Firewalled> partial:6]" {
		t.Fatalf("emitted %s", got)
	}
}
