package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/anthropic"
	"github.com/ptcfleet/ptc/pkg/agent/llm/openai"
)

// providerServer answers the requests of one run in order and keeps their
// decoded JSON bodies.
type providerServer struct {
	mu      sync.Mutex
	bodies  []map[string]any
	replies []string
}

func (p *providerServer) handler(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body: %v", err)
		}
		p.mu.Lock()
		i := len(p.bodies)
		p.bodies = append(p.bodies, body)
		p.mu.Unlock()
		if i >= len(p.replies) {
			http.Error(w, `{"error":{"message":"script exhausted","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, p.replies[i])
	}
}

func jsonPath(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: not an object: %v", p, v)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at %v: not a list of > %d: %v", p, k, v)
			}
			v = l[k]
		}
	}
	return v
}

// The tool + JSON variant over the OpenAI chat-completions wire format: the
// tools go out as functions, the tool call comes back, its result goes out
// as a "tool" message with the call's id, and the JSON answer validates.
func TestTextModeOverOpenAI(t *testing.T) {
	ps := &providerServer{replies: []string{
		`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,
		  "tool_calls":[{"id":"call_1","type":"function","function":{"name":"add","arguments":"{\"a\":17,\"b\":25}"}}]},"finish_reason":"tool_calls"}],
		  "usage":{"prompt_tokens":80,"completion_tokens":10,"total_tokens":90}}`,
		`{"id":"c2","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"result\": 42}"},"finish_reason":"stop"}],
		  "usage":{"prompt_tokens":120,"completion_tokens":5,"total_tokens":125}}`,
	}}
	srv := httptest.NewServer(ps.handler(t))
	defer srv.Close()
	model, err := openai.New(openai.Config{Model: "gpt-test", BaseURL: srv.URL, APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	a := mustText(t, Spec{Prompt: "What is {{x}} + 25? Use the add tool.", Signature: "(x :int) -> {result :int}",
		Tools: map[string]Tool{"add": addTool()}})
	st, err := a.Run(bg, RunOptions{Model: model, Context: map[string]any{"x": int64(17)}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Return.(map[string]any)["result"] != int64(42) || st.Usage.InputTokens != 200 || st.Usage.OutputTokens != 15 {
		t.Fatalf("return %#v usage %+v", st.Return, st.Usage)
	}
	if len(ps.bodies) != 2 {
		t.Fatalf("%d requests", len(ps.bodies))
	}
	first := ps.bodies[0]
	if got := jsonPath(t, first, "tools", 0, "function", "name"); got != "add" {
		t.Fatalf("tool name = %v", got)
	}
	if got := jsonPath(t, first, "tools", 0, "function", "parameters", "required"); fmt.Sprint(got) != "[a b]" {
		t.Fatalf("required = %v", got)
	}
	if got := jsonPath(t, first, "messages", 1, "content"); got != "What is 17 + 25? Use the add tool." {
		t.Fatalf("user message = %v", got)
	}
	second := ps.bodies[1]
	if got := jsonPath(t, second, "messages", 2, "tool_calls", 0, "id"); got != "call_1" {
		t.Fatalf("assistant tool call = %v", got)
	}
	tool := jsonPath(t, second, "messages", 3)
	if jsonPath(t, tool, "role") != "tool" || jsonPath(t, tool, "tool_call_id") != "call_1" || jsonPath(t, tool, "content") != "42" {
		t.Fatalf("tool message = %v", tool)
	}
}

// The same over the Anthropic Messages wire format: tool_use in, a user
// message with a tool_result block out.
func TestTextModeOverAnthropic(t *testing.T) {
	ps := &providerServer{replies: []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[
		   {"type":"text","text":"Let me add."},
		   {"type":"tool_use","id":"toolu_1","name":"add","input":{"a":17,"b":25}}],
		 "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":50,"output_tokens":12}}`,
		`{"id":"msg_2","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"The sum is 42."}],
		 "stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":90,"output_tokens":8}}`,
	}}
	srv := httptest.NewServer(ps.handler(t))
	defer srv.Close()
	model, err := anthropic.New(anthropic.Config{Model: "claude-test", BaseURL: srv.URL, APIKey: "sk-ant-test"})
	if err != nil {
		t.Fatal(err)
	}
	a := mustText(t, Spec{Prompt: "What is 17 + 25?", Tools: map[string]Tool{"add": addTool()}})
	st, err := a.Run(bg, RunOptions{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	if st.Return != "The sum is 42." {
		t.Fatalf("return %#v", st.Return)
	}
	if got := jsonPath(t, ps.bodies[0], "tools", 0, "input_schema", "properties", "a", "type"); got != "integer" {
		t.Fatalf("input schema = %v", got)
	}
	res := jsonPath(t, ps.bodies[1], "messages", 2)
	if jsonPath(t, res, "role") != "user" || jsonPath(t, res, "content", 0, "type") != "tool_result" ||
		jsonPath(t, res, "content", 0, "tool_use_id") != "toolu_1" {
		t.Fatalf("tool result message = %v", res)
	}
	if c := jsonPath(t, res, "content", 0, "content"); fmt.Sprint(c) != "42" && fmt.Sprint(c) != "[map[text:42 type:text]]" {
		t.Fatalf("tool result content = %v", c)
	}
}
