package agentrun

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A mission's models are wrapped in one copy of the worker's registry, the
// journal around the budget around the metering, and the wrappers keep no
// copy of the mission's RunEnv: the run holds them while it waits on its
// model. Wrapping them in a copy of the registry per layer, the journal's
// owned check as the method value env.Owned (a copy of the RunEnv), took
// 6 allocations and 752 bytes a mission here; one copy takes 5 and 496.
func TestMissionModelsWrapOneRegistry(t *testing.T) {
	metrics, err := fleet.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	inner := &countingModel{}
	reg := llm.Registry{"default": inner}
	env := &fleet.RunEnv{Metrics: metrics, Budget: &fleet.MissionBudget{}, Journal: fleet.NewJournal(nil, "m1")}
	jm, ok := missionModels(reg, env)["default"].(*journaledModel)
	if !ok {
		t.Fatalf("the outer model is %T, want the journal's", missionModels(reg, env)["default"])
	}
	bm, ok := jm.inner.(interface{ Unwrap() llm.Model })
	if !ok {
		t.Fatalf("the journal wraps %T, want the budget's", jm.inner)
	}
	mm, ok := bm.Unwrap().(*meteredModel)
	if !ok || mm.inner != llm.Model(inner) || mm.metrics != metrics || jm.j != env.Journal {
		t.Fatalf("the budget wraps %T, want the metered model around the worker's", bm.Unwrap())
	}
	if err := jm.owned(t.Context()); err != nil {
		t.Fatalf("outside a worker the journal's owned check says %v", err)
	}
	if got := missionModels(reg, &fleet.RunEnv{}); len(got) != 1 || got["default"] != llm.Model(inner) {
		t.Fatalf("with nothing to wrap the registry is %v, want the worker's", got)
	}

	allocs := testing.AllocsPerRun(100, func() { missionModels(reg, env) })
	const n = 1000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		missionModels(reg, env)
	}
	runtime.ReadMemStats(&after)
	bytes := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.0f allocations, %.0f bytes a mission", allocs, bytes)
	if allocs > 5 || bytes > 600 {
		t.Errorf("wrapping a mission's models took %.0f allocations and %.0f bytes; want at most 5 and 600", allocs, bytes)
	}
}

// A mission whose agents all call its model gets that model wrapped alone,
// with no registry: none of its agents looks a model up by name. One whose
// agent or sub-agent names a model of its own gets the wrapped registry.
func TestMissionOfOneModelGetsNoRegistry(t *testing.T) {
	metrics, err := fleet.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	inner, other := &countingModel{}, &countingModel{}
	r := New(Config{Models: llm.Registry{"default": inner, "other": other}})
	env := &fleet.RunEnv{Metrics: metrics}
	prepare := func(spec *messages.AgentSpec) *agentRun {
		t.Helper()
		m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: spec}
		ar, step, err := r.prepare(t.Context(), m, env)
		if ar == nil {
			t.Fatalf("mission not prepared: %+v, %v", step, err)
		}
		t.Cleanup(ar.end.cancel)
		return ar
	}

	ar := prepare(&messages.AgentSpec{Prompt: "answer", SubAgents: map[string]*messages.AgentSpec{"helper": {Prompt: "help with {{q}}", Signature: "(q :string) -> :string"}}})
	mm, ok := ar.opts.Model.(*meteredModel)
	if ar.opts.Registry != nil || !ok || mm.inner != llm.Model(inner) || mm.name != "default" || ar.opts.LLM != "default" {
		t.Fatalf("a mission of one model runs with registry %v and model %T named %q; want no registry and the default model metered", ar.opts.Registry, ar.opts.Model, ar.opts.LLM)
	}

	for _, spec := range []*messages.AgentSpec{
		{Prompt: "answer", LLM: "other"},
		{Prompt: "answer", SubAgents: map[string]*messages.AgentSpec{"helper": {Prompt: "help with {{q}}", Signature: "(q :string) -> :string", LLM: "other"}}},
	} {
		ar := prepare(spec)
		if ar.opts.Model != nil || len(ar.opts.Registry) != 2 {
			t.Fatalf("a mission naming model other runs with model %T and a registry of %d; want the registry of 2", ar.opts.Model, len(ar.opts.Registry))
		}
		if mm, ok := ar.opts.Registry["other"].(*meteredModel); !ok || mm.inner != llm.Model(other) {
			t.Fatalf("the registry's other model is %T, want it metered", ar.opts.Registry["other"])
		}
	}
}
