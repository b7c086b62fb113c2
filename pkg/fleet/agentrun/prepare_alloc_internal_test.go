package agentrun

import (
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// Preparing a mission of an agent kept from an earlier one makes the
// run's telemetry and observer in one allocation and hands the observer
// over without boxing a copy of it.
func TestPrepareAllocations(t *testing.T) {
	r := New(Config{Models: llm.Registry{"default": &countingModel{}}})
	spec := &messages.AgentSpec{Prompt: "answer {{q}}", Signature: "(q :string) -> :string"}
	prepare := func() {
		m := &messages.Mission{ID: "01HZY8Q5J7Z4J0G6V9W5X3T2AB", Kind: messages.KindAgent, Agent: spec}
		ar, step, err := r.prepare(t.Context(), m, &fleet.RunEnv{})
		if ar == nil {
			t.Fatalf("mission not prepared: %+v, %v", step, err)
		}
		if _, ok := ar.opts.Observer.(*observer); !ok {
			t.Fatalf("observer %T, want *observer", ar.opts.Observer)
		}
		ar.end.cancel()
	}
	prepare() // the agent, kept
	n := testing.AllocsPerRun(100, prepare)
	t.Logf("%.0f allocations preparing a mission of a kept agent", n)
	if !raceOn && n > prepareKeptAllocs {
		t.Errorf("%.0f allocations preparing a mission of a kept agent, want at most %d", n, prepareKeptAllocs)
	}
}

// prepareKeptAllocs is what TestPrepareAllocations' prepare allocates
// (the mission of the test itself included): 6 with the turn tracker made
// apart from the telemetry and the observer, 7 with the telemetry and the
// observer's box made apart too.
const prepareKeptAllocs = 5
