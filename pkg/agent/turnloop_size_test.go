package agent

import (
	"testing"
	"unsafe"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// A run's turn loop lives on the heap while the run waits on its model,
// thousands at once in a fleet worker: it points to its agent's retry
// policy (96 bytes) rather than holding a copy, which takes a PTC-Lisp
// turn loop from 552 bytes (a 576-byte block) to 464 (480), a text-mode
// one from 464 (480) to 376 (384).
func TestTurnLoopsPointToTheirAgentsRetryPolicy(t *testing.T) {
	if size := unsafe.Sizeof(turnLoop{}); size > 480 {
		t.Errorf("a turn loop takes %d bytes; want at most 480", size)
	}
	if size := unsafe.Sizeof(textLoop{}); size > 384 {
		t.Errorf("a text-mode turn loop takes %d bytes; want at most 384", size)
	}
	policy := &llm.RetryPolicy{MaxAttempts: 2, Retryable: []llm.ErrorClass{llm.ClassTimeout}}
	a := mustNew(t, Spec{Prompt: "answer", LLMRetry: policy})
	if a.retryPolicyOf() == policy {
		t.Fatal("the agent's runs point to the caller's retry policy, which may change after New")
	}
	policy.MaxAttempts, policy.Retryable[0] = 5, llm.ClassRateLimit
	if got := a.retryPolicyOf(); got.MaxAttempts != 2 || got.Retryable[0] != llm.ClassTimeout {
		t.Fatalf("the agent's retry policy changed with the caller's: %+v", *got)
	}
	if got := mustNew(t, Spec{Prompt: "answer"}).retryPolicyOf(); got.MaxAttempts != 0 || got.Retryable != nil {
		t.Fatalf("an agent whose spec sets no retry policy runs with %+v, want the defaults", *got)
	}
}
