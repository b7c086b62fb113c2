package openai_test

import (
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/fakeserver"
	"github.com/ptcfleet/ptc/pkg/agent/llm/openai"
)

func fuzzConfig(contentType, body string) openai.Config {
	return openai.Config{Model: "m", BaseURL: "http://fuzz/v1", HTTPClient: fakeserver.Fixed(200, contentType, body)}
}

func fuzzChat(t *testing.T, contentType, body string) *openai.Client {
	c, err := openai.New(fuzzConfig(contentType, body))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fuzzResponses(t *testing.T, contentType, body string) *openai.ResponsesClient {
	c, err := openai.NewResponses(fuzzConfig(contentType, body))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func FuzzStream(f *testing.F) {
	fakeserver.AddCorpus(f, "stream_text.sse", "stream_tool_calls.sse", "stream_error.sse", "stream_truncated.sse", "stream_malformed.sse")
	f.Add("data: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":5,\"function\":{\"arguments\":\"{}\"}}]}}]}\n\ndata: [DONE]\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		fakeserver.CheckStream(t, fuzzChat(t, "text/event-stream", body))
	})
}

func FuzzComplete(f *testing.F) {
	fakeserver.AddCorpus(f, "chat_text.json", "chat_tool_calls.json", "chat_refusal.json", "chat_bad_tool_args.json", "chat_no_choices.json", "error_in_200.json")
	f.Fuzz(func(t *testing.T, body string) {
		fakeserver.CheckComplete(t, fuzzChat(t, "application/json", body))
	})
}

func FuzzResponses(f *testing.F) {
	fakeserver.AddCorpus(f, "responses_tool_call.json", "responses_text.json", "responses_refusal.json")
	f.Fuzz(func(t *testing.T, body string) {
		fakeserver.CheckComplete(t, fuzzResponses(t, "application/json", body))
	})
}

func FuzzResponsesStream(f *testing.F) {
	fakeserver.AddCorpus(f, "responses_stream.sse")
	f.Add("data: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"function_call\",\"arguments\":\"[\"}]}}\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		fakeserver.CheckStream(t, fuzzResponses(t, "text/event-stream", body))
	})
}
