package anthropic_test

import (
	"context"
	"os"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/anthropic"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/fakeserver"
)

// BenchmarkStream decodes the tool-use SSE fixture (thinking, text, two
// tool calls) into a Response through an in-memory transport.
func BenchmarkStream(b *testing.B) {
	data, err := os.ReadFile("testdata/stream_tool_use.sse")
	if err != nil {
		b.Fatal(err)
	}
	c, err := anthropic.New(anthropic.Config{Model: "m", BaseURL: "http://bench", APIKey: "k", HTTPClient: fakeserver.Fixed(200, "text/event-stream", string(data))})
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{System: "s", CacheSystem: true, Messages: []llm.Message{llm.UserText("x")}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llm.Complete(ctx, c, req, true); err != nil {
			b.Fatal(err)
		}
	}
}
