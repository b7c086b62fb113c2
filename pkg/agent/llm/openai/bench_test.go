package openai_test

import (
	"context"
	"os"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/fakeserver"
	"github.com/ptcfleet/ptc/pkg/agent/llm/openai"
)

func benchClient(b *testing.B, file, contentType string) *openai.Client {
	b.Helper()
	data, err := os.ReadFile("testdata/" + file)
	if err != nil {
		b.Fatal(err)
	}
	c, err := openai.New(openai.Config{Model: "m", BaseURL: "http://bench/v1", APIKey: "k", HTTPClient: fakeserver.Fixed(200, contentType, string(data))})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func benchRequest() llm.Request {
	req := llm.Request{System: "You write PTC-Lisp.", Tools: []llm.ToolSpec{{Name: "search", InputSchema: map[string]any{"type": "object"}}}}
	for range 5 {
		req.Messages = append(req.Messages, llm.UserText("Turn feedback with a result preview of some size."), llm.AssistantText("```clojure\n(return 1)\n```"))
	}
	req.Messages = append(req.Messages, llm.UserText("go"))
	return req
}

// BenchmarkComplete encodes a 11-message request and decodes a tool-call
// response through an in-memory transport (no network).
func BenchmarkComplete(b *testing.B) {
	c := benchClient(b, "chat_tool_calls.json", "application/json")
	req := benchRequest()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream decodes the tool-call SSE fixture into a Response.
func BenchmarkStream(b *testing.B) {
	c := benchClient(b, "stream_tool_calls.sse", "text/event-stream")
	req := benchRequest()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llm.Complete(ctx, c, req, true); err != nil {
			b.Fatal(err)
		}
	}
}
