package agentrun

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
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
