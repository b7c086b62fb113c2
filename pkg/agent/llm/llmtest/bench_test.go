package llmtest_test

import (
	"context"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

// BenchmarkScriptedComplete is the per-call cost of the scripted model on
// a 5-message conversation (request recording included), the floor under
// the agent's loop benchmarks.
func BenchmarkScriptedComplete(b *testing.B) {
	req := llm.Request{System: "sys", Messages: []llm.Message{llm.UserText("a"), llm.AssistantText("b"), llm.UserText("c"), llm.AssistantText("d"), llm.UserText("e")}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m := llmtest.New(llmtest.Code("(return 1)").WithUsage(10, 2))
		if _, err := m.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
