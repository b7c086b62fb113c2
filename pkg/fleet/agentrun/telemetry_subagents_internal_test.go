package agentrun

import (
	"reflect"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A run's telemetry reads the mission's own table of sub-agents rather
// than a copy of its names: a mission without sub-agents holds no table
// while it waits, one with them shares the mission's.
func TestRunTelemetrySharesTheMissionsSubAgents(t *testing.T) {
	r := New(Config{Models: llm.Registry{"default": &countingModel{}}})
	for _, subs := range []map[string]*messages.AgentSpec{nil, {"helper": {Prompt: "help with {{q}}", Signature: "(q :string) -> :string"}}} {
		m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
			Agent: &messages.AgentSpec{Prompt: "answer", SubAgents: subs}}
		ar, step, err := r.prepare(t.Context(), m, &fleet.RunEnv{})
		if ar == nil {
			t.Fatalf("mission with %d sub-agents not prepared: %+v, %v", len(subs), step, err)
		}
		tel := ar.opts.Observer.(*observer).tel
		if got, want := reflect.ValueOf(tel.subAgents).UnsafePointer(), reflect.ValueOf(subs).UnsafePointer(); got != want {
			t.Errorf("with %d sub-agents the telemetry holds a table of its own (%d names)", len(subs), len(tel.subAgents))
		}
		if _, ok := tel.subAgents["helper"]; ok != (len(subs) > 0) {
			t.Errorf("with %d sub-agents the telemetry knows helper: %v", len(subs), ok)
		}
		ar.end.cancel()
	}
}
