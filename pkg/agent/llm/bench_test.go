package llm_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// BenchmarkStreamCollect accumulates a 200-delta answer with two tool calls.
func BenchmarkStreamCollect(b *testing.B) {
	evs := []llm.Event{llm.MessageStart{ID: "m", Model: "x", Usage: llm.Usage{InputTokens: 1000}}}
	for i := range 200 {
		evs = append(evs, llm.TextDelta{Text: fmt.Sprintf("token%d ", i)})
	}
	for i := range 2 {
		evs = append(evs, llm.ToolUseStart{Index: i, ID: "c", Name: "search"},
			llm.ToolUseDelta{Index: i, PartialJSON: `{"query": "go`}, llm.ToolUseDelta{Index: i, PartialJSON: `lang", "limit": 10}`},
			llm.ToolUseEnd{Index: i})
	}
	evs = append(evs, llm.MessageDelta{StopReason: llm.StopToolUse, Usage: llm.Usage{OutputTokens: 220}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llm.Collect(llm.StreamOf(evs...)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRetryOverhead measures WithRetry around a model that succeeds at
// once (the common path).
func BenchmarkRetryOverhead(b *testing.B) {
	resp := &llm.Response{Content: "ok"}
	m := llm.WithRetry(llm.Func(func(context.Context, llm.Request) (*llm.Response, error) { return resp, nil }), llm.RetryPolicy{})
	req := llm.Request{Messages: []llm.Message{llm.UserText("x")}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestClone deep-copies a 10-turn conversation (what the
// scripted model does per call).
func BenchmarkRequestClone(b *testing.B) {
	req := llm.Request{System: "sys", Opts: map[string]any{"temperature": 0.1}}
	for i := range 10 {
		req.Messages = append(req.Messages, llm.UserText(fmt.Sprintf("turn %d feedback", i)),
			llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text{Text: "(return 1)"},
				llm.ToolUse{ID: "c", Name: "t", Input: map[string]any{"a": []any{1, 2, map[string]any{"b": "c"}}}}}})
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = req.Clone()
	}
}
