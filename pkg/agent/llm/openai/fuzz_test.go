package openai_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/openai"
)

// roundTripper answers every request with a fixed status and body.
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
	addFiles(f, "stream_text.sse", "stream_tool_calls.sse", "stream_error.sse", "stream_truncated.sse", "stream_malformed.sse")
	f.Add("data: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":5,\"function\":{\"arguments\":\"{}\"}}]}}]}\n\ndata: [DONE]\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		c, err := openai.New(openai.Config{Model: "m", BaseURL: "http://fuzz/v1", HTTPClient: fixedClient(200, "text/event-stream", body)})
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
	addFiles(f, "chat_text.json", "chat_tool_calls.json", "chat_refusal.json", "chat_bad_tool_args.json", "chat_no_choices.json", "error_in_200.json")
	f.Fuzz(func(t *testing.T, body string) {
		c, err := openai.New(openai.Config{Model: "m", BaseURL: "http://fuzz/v1", HTTPClient: fixedClient(200, "application/json", body)})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("x")}})
		checkResult(t, resp, err)
	})
}

func FuzzResponses(f *testing.F) {
	addFiles(f, "responses_tool_call.json", "responses_text.json", "responses_refusal.json")
	f.Fuzz(func(t *testing.T, body string) {
		c, err := openai.NewResponses(openai.Config{Model: "m", BaseURL: "http://fuzz/v1", HTTPClient: fixedClient(200, "application/json", body)})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("x")}})
		checkResult(t, resp, err)
	})
}

func FuzzResponsesStream(f *testing.F) {
	addFiles(f, "responses_stream.sse")
	f.Add("data: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"function_call\",\"arguments\":\"[\"}]}}\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		c, err := openai.NewResponses(openai.Config{Model: "m", BaseURL: "http://fuzz/v1", HTTPClient: fixedClient(200, "text/event-stream", body)})
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
