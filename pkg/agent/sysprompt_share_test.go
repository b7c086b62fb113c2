package agent

import (
	"testing"
	"unsafe"
)

// Agents whose specs differ only where the system prompt does not show
// (their mission prompt) share one copy of the prompt; an agent whose
// prompt differs keeps its own.
func TestAgentsOfOnePromptShareIt(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "mission 1: count the items", Signature: "{n :int}"})
	b := mustNew(t, Spec{Prompt: "mission 2: count the items", Signature: "{n :int}"})
	c := mustNew(t, Spec{Prompt: "mission 3: count the items", Signature: "{n :int}", Limits: Limits{MaxTurns: 1}})
	pa, pb, pc := a.sysPrompt(), b.sysPrompt(), c.sysPrompt()
	if pa != pb || len(pa) == 0 {
		t.Fatalf("the two agents' system prompts differ:\n%s\n---\n%s", pa, pb)
	}
	if unsafe.StringData(pa) != unsafe.StringData(pb) {
		t.Errorf("the two agents each hold a copy of their %d-byte system prompt", len(pa))
	}
	if pc == pa {
		t.Fatalf("a single-turn agent has the multi-turn prompt")
	}
	if unsafe.StringData(pc) == unsafe.StringData(pa) {
		t.Errorf("a different prompt shares its bytes")
	}
}
