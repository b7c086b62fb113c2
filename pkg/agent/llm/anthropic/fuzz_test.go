package anthropic_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/anthropic"
)

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func fixedClient(status int, contentType, body string) *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {contentType}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})}
}

func addFiles(f *testing.F, names ...string) {
	for _, n := range names {
		data, err := os.ReadFile("testdata/" + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
}

func checkResult(t *testing.T, resp *llm.Response, err error) {
	t.Helper()
	if (resp == nil) == (err == nil) {
		t.Fatalf("want exactly one of response and error: %v, %v", resp, err)
	}
	if resp != nil {
		for _, c := range resp.ToolCalls {
			if c.Input == nil {
				t.Fatalf("tool call %q has nil input", c.Name)
			}
		}
	}
}

func FuzzStream(f *testing.F) {
	addFiles(f, "stream_text.sse", "stream_tool_use.sse", "stream_error_overloaded.sse", "stream_truncated.sse", "stream_malformed.sse", "stream_bad_tool_json.sse")
	f.Add("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	f.Add("data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		c, err := anthropic.New(anthropic.Config{Model: "m", BaseURL: "http://fuzz", HTTPClient: fixedClient(200, "text/event-stream", body)})
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Stream(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("x")}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := llm.Collect(st)
		checkResult(t, resp, err)
	})
}

func FuzzComplete(f *testing.F) {
	addFiles(f, "message_text.json", "message_tool_use.json", "error_overloaded.json")
	f.Fuzz(func(t *testing.T, body string) {
		c, err := anthropic.New(anthropic.Config{Model: "m", BaseURL: "http://fuzz", HTTPClient: fixedClient(200, "application/json", body)})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("x")}})
		checkResult(t, resp, err)
	})
}
