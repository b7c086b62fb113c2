package anthropic_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/anthropic"
)

// Streaming from the Messages API (an httptest server plays Anthropic):
// finished tool calls are reported as they complete, and the stream
// accumulates the final response.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":20,"cache_read_input_tokens":1800,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"search","input":{}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"go\"}"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":12}}`,
			`{"type":"message_stop"}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", ev)
		}
	}))
	defer srv.Close()

	client, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", BaseURL: srv.URL, APIKey: "sk-ant-example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	stream, err := client.Stream(context.Background(), llm.Request{
		System: "You answer with tools.", CacheSystem: true,
		Messages: []llm.Message{llm.UserText("Find Go repos")},
		Tools:    []llm.ToolSpec{{Name: "search", InputSchema: map[string]any{"type": "object"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stream.Close()
	for stream.Next() {
		if end, ok := stream.Current().(llm.ToolUseEnd); ok {
			fmt.Println("tool call:", end.ToolUse.Name, end.ToolUse.Input["query"])
		}
	}
	if err := stream.Err(); err != nil {
		fmt.Println(err)
		return
	}
	resp := stream.Response()
	fmt.Println(resp.StopReason, resp.Usage.InputTokens, resp.Usage.CacheReadTokens, resp.Usage.OutputTokens)
	fmt.Println(strings.Contains(fmt.Sprintf("%v %+v %#v", client, client, client), "sk-ant-example")) // the key is never printed
	// Output:
	// tool call: search go
	// tool_use 1820 1800 12
	// false
}
