package agentrun

import (
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestMissingModelAllocations: checking the models of an agent with no
// sub-agents sorts no names.
func TestMissingModelAllocations(t *testing.T) {
	models := llm.Registry{"m": nil}
	a := &messages.AgentSpec{Name: "a", LLM: "m"}
	if n := testing.AllocsPerRun(100, func() {
		if got := missingModel(models, "", a) + missingModel(models, "m", a); got != "" {
			t.Fatalf("missing %q", got)
		}
	}); n > 2 {
		t.Fatalf("%.0f allocations, want at most 2", n)
	}
}
