package anthropic_test

import (
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/anthropic"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/fakeserver"
)

func fuzzClient(t *testing.T, contentType, body string) *anthropic.Client {
	c, err := anthropic.New(anthropic.Config{Model: "m", BaseURL: "http://fuzz", HTTPClient: fakeserver.Fixed(200, contentType, body)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func FuzzStream(f *testing.F) {
	fakeserver.AddCorpus(f, "stream_text.sse", "stream_tool_use.sse", "stream_error_overloaded.sse", "stream_truncated.sse", "stream_malformed.sse", "stream_bad_tool_json.sse")
	f.Add("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	f.Add("data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		fakeserver.CheckStream(t, fuzzClient(t, "text/event-stream", body))
	})
}

func FuzzComplete(f *testing.F) {
	fakeserver.AddCorpus(f, "message_text.json", "message_tool_use.json", "error_overloaded.json")
	f.Fuzz(func(t *testing.T, body string) {
		fakeserver.CheckComplete(t, fuzzClient(t, "application/json", body))
	})
}
