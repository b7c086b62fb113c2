package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/openai"
)

func newResponsesClient(t *testing.T, url string, mod func(*openai.Config)) *openai.ResponsesClient {
	t.Helper()
	cfg := openai.Config{Model: "gpt-5-codex", BaseURL: url + "/v1", APIKey: testKey}
	if mod != nil {
		mod(&cfg)
	}
	c, err := openai.NewResponses(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A tool round over the Responses API: the function call is decoded, and
// the reasoning item goes back with the next request unchanged, before the
// call and its output.
func TestResponsesToolRoundCarriesReasoning(t *testing.T) {
	fs := newServer(t, reply{File: "responses_tool_call.json"}, reply{File: "responses_text.json"})
	c := newResponsesClient(t, fs.URL, nil)
	req := llm.Request{System: "Answer with tools.", Messages: []llm.Message{llm.UserText("Weather in Paris?")},
		Tools: []llm.ToolSpec{{Name: "get_weather", Description: "weather of a city"}},
		Opts:  map[string]any{"reasoning": map[string]any{"effort": "medium"}, "max_output_tokens": 4000}}
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != llm.StopToolUse || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_4kqEBU2uW3y8oFzGbf9yTnSv" ||
		resp.ToolCalls[0].Input["location"] != "Paris, France" || len(resp.Provider) != 1 || resp.Usage.OutputTokens != 84 {
		t.Fatalf("response = %+v", resp)
	}
	next := req
	next.Messages = append(next.Messages, resp.Message(),
		llm.ToolResults(llm.ToolResult{ToolUseID: "call_4kqEBU2uW3y8oFzGbf9yTnSv", Content: `{"temp_c":18}`}))
	final, err := c.Complete(context.Background(), next)
	if err != nil || final.Content != "It is 18 °C in Paris." || final.StopReason != llm.StopEndTurn || final.Usage.CacheReadTokens != 64 {
		t.Fatalf("final = %+v, %v", final, err)
	}

	first := fs.Requests()[0]
	if first.Path != "/v1/responses" || first.Body["store"] != false || first.Body["instructions"] != "Answer with tools." ||
		first.Header.Get("Authorization") != "Bearer "+testKey.Reveal() {
		t.Errorf("first request = %s %v", first.Path, first.Body)
	}
	if inc, _ := first.Body["include"].([]any); len(inc) != 1 || inc[0] != "reasoning.encrypted_content" {
		t.Errorf("include = %v", first.Body["include"])
	}
	if tools, _ := first.Body["tools"].([]any); len(tools) != 1 || tools[0].(map[string]any)["type"] != "function" || tools[0].(map[string]any)["name"] != "get_weather" {
		t.Errorf("tools = %v", first.Body["tools"])
	}
	input := fs.Requests()[1].Body["input"].([]any)
	var reasoning any
	var whole map[string]any
	_ = json.Unmarshal(mustRead(t, "responses_tool_call.json"), &whole)
	reasoning = whole["output"].([]any)[0]
	want := []any{
		map[string]any{"role": "user", "content": "Weather in Paris?"},
		reasoning,
		map[string]any{"type": "function_call", "call_id": "call_4kqEBU2uW3y8oFzGbf9yTnSv", "name": "get_weather", "arguments": `{"location":"Paris, France"}`},
		map[string]any{"type": "function_call_output", "call_id": "call_4kqEBU2uW3y8oFzGbf9yTnSv", "output": `{"temp_c":18}`},
	}
	if !reflect.DeepEqual(input, want) {
		t.Errorf("second input =\n%v\nwant\n%v", input, want)
	}
}

func TestResponsesRefusalAndStream(t *testing.T) {
	fs := newServer(t, reply{File: "responses_refusal.json"}, reply{File: "responses_stream.sse", SSE: true})
	c := newResponsesClient(t, fs.URL, nil)
	resp, err := c.Complete(context.Background(), simpleReq())
	if err != nil || resp.StopReason != llm.StopRefusal || !strings.Contains(resp.Content, "can't help") {
		t.Fatalf("refusal = %+v, %v", resp, err)
	}
	st, err := c.Stream(context.Background(), simpleReq())
	if err != nil {
		t.Fatal(err)
	}
	var deltas int
	for st.Next() {
		if _, ok := st.Current().(llm.TextDelta); ok {
			deltas++
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	got := st.Response()
	if got.Content != "```clojure\n(return 42)\n```" || deltas != 2 || got.ID != "resp_4" || got.StopReason != llm.StopEndTurn ||
		got.Usage != (llm.Usage{InputTokens: 300, OutputTokens: 40, CacheReadTokens: 256}) || len(got.Provider) != 1 {
		t.Fatalf("streamed = %+v (deltas %d)", got, deltas)
	}
	if fs.Requests()[1].Body["stream"] != true {
		t.Errorf("stream flag not sent")
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A Responses stream cut before response.completed ends with a retryable
// connection error, after the text that did arrive.
func TestResponsesStreamTruncated(t *testing.T) {
	full, err := os.ReadFile("testdata/responses_stream.sse")
	if err != nil {
		t.Fatal(err)
	}
	cut, _, _ := strings.Cut(string(full), "event: response.completed")
	fs := newServer(t, reply{Body: cut, SSE: true})
	st, err := newResponsesClient(t, fs.URL, nil).Stream(context.Background(), simpleReq())
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for st.Next() {
		if d, ok := st.Current().(llm.TextDelta); ok {
			text += d.Text
		}
	}
	var pe *llm.ProviderError
	if !errors.As(st.Err(), &pe) || pe.Type != "connection_error" || !pe.Retryable || pe.Message != "stream ended before response.completed" {
		t.Fatalf("err = %v", st.Err())
	}
	if text != "```clojure\n(return 42)\n```" {
		t.Errorf("text before the cut = %q", text)
	}
}
