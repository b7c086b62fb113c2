package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/anthropic"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/fakeserver"
)

var update = flag.Bool("update", false, "rewrite golden request files")

const testKey = llm.Secret("sk-ant-api03-SECRET-0123456789")

type reply = fakeserver.Reply

func newServer(t *testing.T, replies ...reply) *fakeserver.Server {
	t.Helper()
	return fakeserver.New(t, "Request-Id", replies...)
}

func newClient(t *testing.T, fs *fakeserver.Server, mod func(*anthropic.Config)) *anthropic.Client {
	t.Helper()
	cfg := anthropic.Config{Model: "claude-sonnet-4-5", BaseURL: fs.URL, APIKey: testKey, HTTPClient: fs.Client()}
	if mod != nil {
		mod(&cfg)
	}
	c, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func simpleReq() llm.Request {
	return llm.Request{System: "You write PTC-Lisp.", Messages: []llm.Message{llm.UserText("Count the repos")}, Turn: 1}
}

func TestCompleteText(t *testing.T) {
	fs := newServer(t, reply{File: "message_text.json"})
	c := newClient(t, fs, func(cfg *anthropic.Config) {
		cfg.Headers = map[string]string{"anthropic-beta": "token-efficient-tools-2025-02-19"}
	})
	resp, err := c.Complete(context.Background(), simpleReq())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "```clojure\n(return {:count 3})\n```" || resp.StopReason != llm.StopEndTurn || resp.Model != "claude-sonnet-4-5-20250929" ||
		resp.ID != "msg_013Zva2CMHLNnXjNJJKqJ2EF" || resp.RequestID != "req_1" || len(resp.Raw) == 0 {
		t.Errorf("response = %+v", resp)
	}
	// input_tokens (57) counts only the uncached part; InputTokens is the whole prompt.
	if resp.Usage != (llm.Usage{InputTokens: 57 + 2048, OutputTokens: 14, CacheReadTokens: 2048}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
	r := fs.Requests()[0]
	if r.Method != http.MethodPost || r.Path != "/v1/messages" {
		t.Errorf("request line %s %s", r.Method, r.Path)
	}
	if r.Header.Get("X-Api-Key") != testKey.Reveal() || r.Header.Get("Anthropic-Version") != "2023-06-01" ||
		r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Anthropic-Beta") != "token-efficient-tools-2025-02-19" || r.Header.Get("Authorization") != "" {
		t.Errorf("headers = %v", r.Header)
	}
	want := `{"max_tokens":4096,"messages":[{"content":[{"text":"Count the repos","type":"text"}],"role":"user"}],"model":"claude-sonnet-4-5","system":"You write PTC-Lisp."}`
	if got := fakeserver.Canonical(t, r.Raw); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
}

// A tool round with the cacheable prefix (breakpoints on the last tool,
// the system prompt and the last message's last block); the second request
// is compared with a golden file written from the API reference.
func TestToolUseRound(t *testing.T) {
	fs := newServer(t, reply{File: "message_tool_use.json"}, reply{File: "message_text.json"})
	c := newClient(t, fs, nil)
	req := llm.Request{
		System:       "Answer with tools.",
		CacheSystem:  true,
		CacheHistory: true,
		Messages:     []llm.Message{llm.UserText("Weather in San Francisco?")},
		Tools: []llm.ToolSpec{
			{Name: "get_weather", Description: "Get the current weather in a given location", InputSchema: map[string]any{
				"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}}},
				"required": []any{"location"}}},
			{Name: "ping"},
		},
		Opts: map[string]any{"temperature": 0.2, "max_tokens": 1024},
	}
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != llm.StopToolUse || len(resp.ToolCalls) != 2 || resp.Content != "I'll check the weather in San Francisco." {
		t.Fatalf("response = %+v", resp)
	}
	if resp.Usage != (llm.Usage{InputTokens: 1620, OutputTokens: 71, CacheWriteTokens: 1500}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
	tc := resp.ToolCalls[0]
	if tc.ID != "toolu_01A09q90qw90lq917835lq9" || tc.Name != "get_weather" || tc.Input["location"] != "San Francisco, CA" || tc.Input["days"] != int64(3) {
		t.Errorf("tool call = %+v", tc)
	}
	req.Messages = append(req.Messages, resp.Message(), llm.Message{Role: llm.RoleUser, Content: []llm.Block{
		llm.ToolResult{ToolUseID: "toolu_01A09q90qw90lq917835lq9", Content: `{"temp_c": 15}`},
		llm.Text{Text: "Turn 2 of 5 (3 remaining)"}, // sent after the results
		llm.ToolResult{ToolUseID: "toolu_01B", Content: `{"error": "ping failed"}`, IsError: true},
	}})
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	fakeserver.Golden(t, *update, "request_tool_round.golden.json", fs.Requests()[1].Raw)
}

// Thinking and redacted_thinking blocks travel back to the API unchanged,
// signatures included, from a whole answer and from a stream.
func TestThinkingBlocksCarriedThroughHistory(t *testing.T) {
	thinking := `{"type":"thinking","thinking":"Check the tool first.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h=="}`
	redacted := `{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj"}`
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","stop_reason":"tool_use",
"usage":{"input_tokens":10,"output_tokens":5},"content":[` + thinking + `,` + redacted + `,
{"type":"tool_use","id":"toolu_1","name":"ping","input":{}}]}`
	fs := newServer(t, reply{Body: body}, reply{File: "message_text.json"}, reply{File: "stream_tool_use.sse", SSE: true}, reply{File: "message_text.json"})
	c := newClient(t, fs, nil)
	req := llm.Request{Messages: []llm.Message{llm.UserText("ping")}, Tools: []llm.ToolSpec{{Name: "ping"}}}
	resp, err := c.Complete(context.Background(), req)
	if err != nil || len(resp.Provider) != 2 || resp.Provider[1].Type != "redacted_thinking" {
		t.Fatalf("response = %+v, %v", resp, err)
	}
	next := req
	next.Messages = append(next.Messages, resp.Message(), llm.ToolResults(llm.ToolResult{ToolUseID: "toolu_1", Content: "pong"}))
	if _, err := c.Complete(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	sent := fs.Requests()[1].Body["messages"].([]any)[1].(map[string]any)["content"].([]any)
	want := []any{}
	for _, raw := range []string{thinking, redacted} {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			t.Fatal(err)
		}
		want = append(want, v)
	}
	if len(sent) != 3 || !reflect.DeepEqual(sent[:2], want) || sent[2].(map[string]any)["type"] != "tool_use" {
		t.Fatalf("assistant content sent back = %v", sent)
	}

	// the same from a stream: the block is rebuilt from its deltas
	st, err := c.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	sresp, err := llm.Collect(st)
	if err != nil || len(sresp.Provider) != 1 {
		t.Fatalf("stream response = %+v, %v", sresp, err)
	}
	var tb map[string]any
	if err := json.Unmarshal(sresp.Provider[0].Raw, &tb); err != nil || tb["thinking"] != "I need the weather." ||
		tb["signature"] != "EqQBCgIYAhIM1gbcDa9GJwZA2b3h" || tb["type"] != "thinking" {
		t.Fatalf("streamed thinking block = %s, %v", sresp.Provider[0].Raw, err)
	}
	next = req
	next.Messages = append(next.Messages, sresp.Message(), llm.ToolResults(llm.ToolResult{ToolUseID: sresp.ToolCalls[0].ID, Content: "{}"}))
	if _, err := c.Complete(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	first := fs.Requests()[3].Body["messages"].([]any)[1].(map[string]any)["content"].([]any)[0]
	if !reflect.DeepEqual(first, tb) {
		t.Fatalf("streamed thinking sent back as %v", first)
	}
}

func TestCompleteErrors(t *testing.T) {
	tests := []struct {
		name       string
		rep        reply
		status     int
		typ        string
		msg        string
		retryable  bool
		retryAfter time.Duration
		class      llm.ErrorClass
	}{
		{"400", reply{Status: 400, File: "error_invalid_request.json"}, 400, "invalid_request_error", "max_tokens: 100000 > 64000", false, 0, ""},
		{"401", reply{Status: 401, File: "error_authentication.json"}, 401, "authentication_error", "invalid x-api-key", false, 0, ""},
		{"429", reply{Status: 429, File: "error_rate_limit.json", Headers: map[string]string{"Retry-After": "12"}}, 429, "rate_limit_error", "exceed the rate limit", true, 12 * time.Second, llm.ClassRateLimit},
		{"529", reply{Status: 529, File: "error_overloaded.json"}, 529, "overloaded_error", "Overloaded", true, 0, llm.ClassOverloaded},
		{"500", reply{Status: 500, File: "error_api.json"}, 500, "api_error", "Internal server error", true, 0, llm.ClassServer},
		{"409 conflict", reply{Status: 409, Body: `{"type":"error","error":{"type":"api_error","message":"lock"}}`}, 409, "api_error", "lock", true, 0, llm.ClassConflict},
		{"x-should-retry false", reply{Status: 503, File: "error_api.json", Headers: map[string]string{"X-Should-Retry": "false"}}, 503, "api_error", "Internal", false, 0, ""},
		{"x-should-retry true", reply{Status: 400, File: "error_invalid_request.json", Headers: map[string]string{"X-Should-Retry": "true"}}, 400, "invalid_request_error", "max_tokens", true, 0, llm.ClassServer},
		{"proxy html 502", reply{Status: 502, Body: "<html><body>Bad Gateway</body></html>"}, 502, "", "Bad Gateway", true, 0, llm.ClassServer},
		{"malformed body", reply{Body: `{"type":"message","content":[{"type":"text","text":`}, 0, "malformed_response", "cannot decode response", false, 0, ""},
		{"wrong type", reply{Body: `{"type":"completion","completion":"hi"}`}, 0, "malformed_response", `unexpected response type "completion"`, false, 0, ""},
		{"error in 200", reply{File: "error_overloaded.json"}, 0, "overloaded_error", "Overloaded", true, 0, llm.ClassOverloaded},
		{"bad tool input", reply{Body: `{"type":"message","content":[{"type":"tool_use","id":"t","name":"x","input":[1]}]}`}, 0, "malformed_response", `tool_use "x": tool input must be a json object`, false, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newServer(t, tt.rep)
			resp, err := newClient(t, fs, nil).Complete(context.Background(), simpleReq())
			var pe *llm.ProviderError
			if resp != nil || !errors.As(err, &pe) {
				t.Fatalf("Complete = %v, %v", resp, err)
			}
			if pe.StatusCode != tt.status || pe.Type != tt.typ || !strings.Contains(pe.Message, tt.msg) || pe.Retryable != tt.retryable ||
				pe.RetryAfter != tt.retryAfter || pe.Provider != "anthropic" || pe.RequestID != "req_1" {
				t.Errorf("error = %#v", pe)
			}
			class, ok := llm.Classify(err)
			if ok != tt.retryable || class != tt.class {
				t.Errorf("Classify = %q %v, want %q", class, ok, tt.class)
			}
			if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, pe), "SECRET") {
				t.Errorf("key leaked: %v", err)
			}
		})
	}
}

func TestStreamText(t *testing.T) {
	fs := newServer(t, reply{File: "stream_text.sse", SSE: true})
	st, err := newClient(t, fs, nil).Stream(context.Background(), llm.Request{System: "s", CacheSystem: true, Messages: []llm.Message{llm.UserText("x")}})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for st.Next() {
		kinds = append(kinds, fmt.Sprintf("%T", st.Current()))
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if got := strings.Join(kinds, ","); got != "llm.MessageStart,llm.TextDelta,llm.TextDelta,llm.MessageDelta" {
		t.Errorf("events = %s", got)
	}
	resp := st.Response()
	if resp.Content != "```clojure\n(return 42)\n```" || resp.StopReason != llm.StopEndTurn || resp.ID != "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY" {
		t.Errorf("response = %+v", resp)
	}
	if resp.Usage != (llm.Usage{InputTokens: 25 + 2048, OutputTokens: 15, CacheReadTokens: 2048}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
	r := fs.Requests()[0]
	if r.Body["stream"] != true || r.Header.Get("Accept") != "text/event-stream" {
		t.Errorf("request = %v", r.Body)
	}
	want := `[{"cache_control":{"type":"ephemeral"},"text":"s","type":"text"}]`
	if sys := fakeserver.Canonical(t, mustJSON(t, r.Body["system"])); sys != want {
		t.Errorf("system = %s, want %s", sys, want)
	}
}

func TestStreamToolUse(t *testing.T) {
	fs := newServer(t, reply{File: "stream_tool_use.sse", SSE: true})
	st, err := newClient(t, fs, nil).Stream(context.Background(), simpleReq())
	if err != nil {
		t.Fatal(err)
	}
	var ended []llm.ToolUse
	for st.Next() {
		if e, ok := st.Current().(llm.ToolUseEnd); ok {
			ended = append(ended, e.ToolUse)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	resp := st.Response()
	if resp.Content != "Okay, let's check the weather for San Francisco, CA:" || resp.StopReason != llm.StopToolUse || len(resp.ToolCalls) != 2 {
		t.Fatalf("response = %+v", resp)
	}
	if tc := resp.ToolCalls[0]; tc.ID != "toolu_01T1x1fJ34qAmk2tNTrN7Up6" || tc.Input["location"] != "San Francisco, CA" || tc.Input["unit"] != "fahrenheit" {
		t.Errorf("tool call = %+v", tc)
	}
	if len(ended) != 2 || ended[1].Name != "ping" || len(ended[1].Input) != 0 {
		t.Errorf("ended = %+v", ended)
	}
	// message_delta's cumulative usage replaces the start's.
	if resp.Usage != (llm.Usage{InputTokens: 572, OutputTokens: 89, CacheWriteTokens: 100}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
}

func TestStreamFailures(t *testing.T) {
	tests := []struct {
		name      string
		file      string
		typ       string
		msg       string
		retryable bool
	}{
		{"overloaded event", "stream_error_overloaded.sse", "overloaded_error", "Overloaded", true},
		{"truncated", "stream_truncated.sse", "connection_error", "stream ended before message_stop", true},
		{"malformed event", "stream_malformed.sse", "malformed_response", "cannot decode response", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newServer(t, reply{File: tt.file, SSE: true})
			st, err := newClient(t, fs, nil).Stream(context.Background(), simpleReq())
			if err != nil {
				t.Fatal(err)
			}
			resp, err := llm.Collect(st)
			var pe *llm.ProviderError
			if resp != nil || !errors.As(err, &pe) || pe.Type != tt.typ || !strings.Contains(pe.Message, tt.msg) || pe.Retryable != tt.retryable || pe.RequestID != "req_1" {
				t.Fatalf("Collect = %v, %#v", resp, err)
			}
		})
	}
	fs := newServer(t, reply{File: "stream_bad_tool_json.sse", SSE: true})
	st, err := newClient(t, fs, nil).Stream(context.Background(), simpleReq())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Collect(st); err == nil || !strings.Contains(err.Error(), `tool call "search" (toolu_x): malformed tool input json`) {
		t.Errorf("bad tool json: %v", err)
	}
	// A refused stream request reports the status and Retry-After.
	fs = newServer(t, reply{Status: 529, File: "error_overloaded.json", Headers: map[string]string{"Retry-After": "1"}})
	_, err = newClient(t, fs, nil).Stream(context.Background(), simpleReq())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 529 || pe.RetryAfter != time.Second || !pe.Retryable {
		t.Errorf("err = %v", err)
	}
}

func TestRetryThroughOverload(t *testing.T) {
	fs := newServer(t, reply{Status: 529, File: "error_overloaded.json"}, reply{File: "message_text.json"})
	var waits []time.Duration
	m := llm.WithRetry(newClient(t, fs, nil), llm.RetryPolicy{
		BaseDelay: 500 * time.Millisecond,
		Sleep:     func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
		Jitter:    func(d time.Duration) time.Duration { return d },
	})
	// The server ignores "stream" and answers one JSON body: still a stream.
	resp, err := llm.Complete(context.Background(), m, simpleReq(), true)
	if err != nil || !strings.Contains(resp.Content, "(return {:count 3})") || resp.Usage.InputTokens != 57+2048 || len(waits) != 1 {
		t.Fatalf("JSON answer to a stream request = %+v, %v (waits %v)", resp, err, waits)
	}
	fs = newServer(t, reply{Status: 529, File: "error_overloaded.json"}, reply{File: "stream_text.sse", SSE: true})
	m.Model = newClient(t, fs, nil)
	resp, err = llm.Complete(context.Background(), m, simpleReq(), true)
	if err != nil || !strings.Contains(resp.Content, "(return 42)") || len(waits) != 2 || waits[1] != 500*time.Millisecond {
		t.Fatalf("resp %+v err %v waits %v", resp, err, waits)
	}
}

func TestValidation(t *testing.T) {
	bad := []struct {
		cfg  anthropic.Config
		want string
	}{
		{anthropic.Config{}, "Model is required"},
		{anthropic.Config{Model: "m", BaseURL: "api.anthropic.com"}, "must be an absolute http or https URL"},
		{anthropic.Config{Model: "m", MaxTokens: -1}, "MaxTokens must be positive"},
		{anthropic.Config{Model: "m", Headers: map[string]string{"x-api-key": "k"}}, "Headers cannot set x-api-key"},
	}
	for _, tt := range bad {
		if _, err := anthropic.New(tt.cfg); !errors.Is(err, llm.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
	c, _ := anthropic.New(anthropic.Config{Model: "m"})
	reqs := []struct {
		req  llm.Request
		want string
	}{
		{llm.Request{Opts: map[string]any{"system": "x"}}, `llm_opts key "system" is set by the client`},
		{llm.Request{Messages: []llm.Message{{Role: "tool"}}}, `messages[0]: unknown role "tool"`},
		{llm.Request{Messages: []llm.Message{llm.UserText("")}}, "messages[0]: user message has no content"},
		{llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.ToolUse{}}}}}, "a user message cannot hold a tool call"},
		{llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolResult{}}}}}, "an assistant message cannot hold a tool result"},
	}
	for _, tt := range reqs {
		if _, err := c.Complete(context.Background(), tt.req); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Complete = %v, want %q", err, tt.want)
		}
	}
}

func TestClientNeverPrintsKey(t *testing.T) {
	c, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s %v", c, c, c, c, *c), c.GoString()} {
		if strings.Contains(s, "SECRET") {
			t.Errorf("key leaked: %s", s)
		}
	}
	if c.String() != "anthropic:claude-sonnet-4-5@https://api.anthropic.com/v1/messages" {
		t.Errorf("String = %s", c)
	}
}

// A text block marked Cache gets a breakpoint of its own, in the middle of
// a message; the blocks around it get none.
func TestTextBlockBreakpoint(t *testing.T) {
	fs := newServer(t, reply{File: "message_text.json"})
	c := newClient(t, fs, nil)
	req := simpleReq()
	req.Messages = []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
		llm.Text{Text: "mission\n"}, llm.Text{Text: "turn 1\n", Cache: true}, llm.Text{Text: "last turn\n"}}}}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	want := `{"max_tokens":4096,"messages":[{"content":[{"text":"mission\n","type":"text"},{"cache_control":{"type":"ephemeral"},"text":"turn 1\n","type":"text"},{"text":"last turn\n","type":"text"}],"role":"user"}],"model":"claude-sonnet-4-5","system":"You write PTC-Lisp."}`
	if got := fakeserver.Canonical(t, fs.Requests()[0].Raw); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
}
