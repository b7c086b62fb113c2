package openai_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/fakeserver"
	"github.com/ptcfleet/ptc/pkg/agent/llm/openai"
)

var update = flag.Bool("update", false, "rewrite golden request files")

const testKey = llm.Secret("sk-test-SECRET-0123456789")

type reply = fakeserver.Reply

func newServer(t *testing.T, replies ...reply) *fakeserver.Server {
	t.Helper()
	return fakeserver.New(t, "X-Request-Id", replies...)
}

func newClient(t *testing.T, fs *fakeserver.Server, mod func(*openai.Config)) *openai.Client {
	t.Helper()
	cfg := openai.Config{Model: "gpt-4.1-mini", BaseURL: fs.URL + "/v1", APIKey: testKey, HTTPClient: fs.Client()}
	if mod != nil {
		mod(&cfg)
	}
	c, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func simpleReq() llm.Request {
	return llm.Request{System: "You write PTC-Lisp.", Messages: []llm.Message{llm.UserText("Count the repos")}, Turn: 1, Prompt: "Count the repos"}
}

func TestCompleteText(t *testing.T) {
	fs := newServer(t, reply{File: "chat_text.json"})
	c := newClient(t, fs, func(cfg *openai.Config) {
		cfg.Headers = map[string]string{"HTTP-Referer": "https://ptc.example", "X-Title": "ptc"}
	})
	resp, err := c.Complete(context.Background(), simpleReq())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "```clojure\n(return {:count 3})\n```" || resp.StopReason != llm.StopEndTurn || resp.Model != "gpt-4.1-mini-2025-04-14" ||
		resp.ID != "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT" || resp.RequestID != "req_1" || len(resp.Raw) == 0 {
		t.Errorf("response = %+v", resp)
	}
	if resp.Usage != (llm.Usage{InputTokens: 1117, OutputTokens: 12, CacheReadTokens: 1024}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
	r := fs.Requests()[0]
	if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
		t.Errorf("request line %s %s", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey.Reveal() {
		t.Errorf("Authorization = %q", got)
	}
	if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("HTTP-Referer") != "https://ptc.example" || r.Header.Get("X-Title") != "ptc" {
		t.Errorf("headers = %v", r.Header)
	}
	want := `{"messages":[{"content":"You write PTC-Lisp.","role":"system"},{"content":"Count the repos","role":"user"}],"model":"gpt-4.1-mini"}`
	if got := fakeserver.Canonical(t, r.Raw); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
}

// A full native tool-call round: the model calls two tools, the loop sends
// the results back, the model answers. The second request is checked
// against a golden file written from the API reference.
func TestToolCallRound(t *testing.T) {
	fs := newServer(t, reply{File: "chat_tool_calls.json"}, reply{File: "chat_text.json"})
	c := newClient(t, fs, nil)
	req := llm.Request{
		System:   "Answer with tools.",
		Messages: []llm.Message{llm.UserText("Weather in Boston?")},
		Tools: []llm.ToolSpec{
			{Name: "get_current_weather", Description: "Current weather", InputSchema: map[string]any{
				"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
				"required": []any{"location"}}},
			{Name: "ping"},
		},
		Opts: map[string]any{"temperature": 0.2, "max_completion_tokens": 512},
	}
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != llm.StopToolUse || len(resp.ToolCalls) != 2 || resp.Content != "" {
		t.Fatalf("response = %+v", resp)
	}
	tc := resp.ToolCalls[0]
	if tc.ID != "call_abc123" || tc.Name != "get_current_weather" || tc.Input["location"] != "Boston, MA" || tc.Input["days"] != int64(2) {
		t.Errorf("tool call = %+v", tc)
	}
	if resp.ToolCalls[1].Input == nil || len(resp.ToolCalls[1].Input) != 0 {
		t.Errorf("ping input = %#v", resp.ToolCalls[1].Input)
	}
	req.Messages = append(req.Messages, resp.Message(), llm.Message{Role: llm.RoleUser, Content: []llm.Block{
		llm.ToolResult{ToolUseID: "call_abc123", Content: `{"temp_f": 41}`},
		llm.ToolResult{ToolUseID: "call_def456", Content: `{"error": "ping failed"}`, IsError: true},
		llm.Text{Text: "Turn 2 of 5 (3 remaining)"},
	}})
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	fakeserver.Golden(t, *update, "request_tool_round.golden.json", fs.Requests()[1].Raw)
}

func TestCompleteRefusalAndStopAfterTools(t *testing.T) {
	fs := newServer(t, reply{File: "chat_refusal.json"},
		reply{Body: `{"id":"x","model":"llama3","choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"t","arguments":""}}]},"finish_reason":"stop"}]}`})
	c := newClient(t, fs, nil)
	resp, err := c.Complete(context.Background(), simpleReq())
	if err != nil || resp.StopReason != llm.StopRefusal || !strings.Contains(resp.Content, "cannot help") {
		t.Fatalf("refusal = %+v, %v", resp, err)
	}
	resp, err = c.Complete(context.Background(), simpleReq())
	if err != nil || resp.StopReason != llm.StopToolUse || len(resp.ToolCalls[0].Input) != 0 {
		t.Fatalf("stop after tools = %+v, %v", resp, err)
	}
}

func TestCompleteErrors(t *testing.T) {
	tests := []struct {
		name       string
		rep        reply
		status     int
		typ, code  string
		msg        string
		retryable  bool
		retryAfter time.Duration
	}{
		{"400 invalid request", reply{Status: 400, File: "error_invalid_request.json"}, 400, "invalid_request_error", "invalid_value", "Invalid value for 'temperature'", false, 0},
		{"401 key scrubbed", reply{Status: 401, File: "error_invalid_key.json"}, 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: [redacted]", false, 0},
		{"404 ollama string error", reply{Status: 404, File: "error_ollama.json"}, 404, "", "", `model "llama9" not found`, false, 0},
		{"429 retry-after", reply{Status: 429, File: "error_rate_limit.json", Headers: map[string]string{"Retry-After": "3"}}, 429, "requests", "rate_limit_exceeded", "Rate limit reached", true, 3 * time.Second},
		{"429 retry-after-ms", reply{Status: 429, File: "error_rate_limit.json", Headers: map[string]string{"Retry-After-Ms": "120", "Retry-After": "1"}}, 429, "requests", "rate_limit_exceeded", "Rate limit reached", true, 120 * time.Millisecond},
		{"429 insufficient quota is not retried", reply{Status: 429, File: "error_insufficient_quota.json", Headers: map[string]string{"Retry-After": "3"}}, 429, "insufficient_quota", "insufficient_quota", "exceeded your current quota", false, 0},
		{"500 html body", reply{Status: 500, Body: "<html>Internal Server Error</html>"}, 500, "", "", "<html>Internal Server Error</html>", true, 0},
		{"503 empty body", reply{Status: 503}, 503, "", "", "Service Unavailable", true, 0},
		{"200 with error body", reply{File: "error_in_200.json"}, 200, "", "502", "Provider returned error", false, 0},
		{"malformed json", reply{Body: `{"id": "x", "choices": [`}, 0, "malformed_response", "", "cannot decode response", false, 0},
		{"no choices", reply{File: "chat_no_choices.json"}, 0, "malformed_response", "", "no choices in response", false, 0},
		{"bad tool arguments", reply{File: "chat_bad_tool_args.json"}, 0, "invalid_tool_call", "", `tool call "search": malformed tool input json`, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newServer(t, tt.rep)
			c := newClient(t, fs, nil)
			resp, err := c.Complete(context.Background(), simpleReq())
			var pe *llm.ProviderError
			if resp != nil || !errors.As(err, &pe) {
				t.Fatalf("Complete = %v, %v", resp, err)
			}
			if pe.StatusCode != tt.status || pe.Type != tt.typ || pe.Code != tt.code || !strings.Contains(pe.Message, tt.msg) ||
				pe.Retryable != tt.retryable || pe.RetryAfter != tt.retryAfter || pe.Provider != "openai" {
				t.Errorf("error = %#v", pe)
			}
			if tt.status != 0 && pe.RequestID != "req_1" {
				t.Errorf("request id = %q", pe.RequestID)
			}
			if _, ok := llm.Classify(err); ok != tt.retryable {
				t.Errorf("Classify retryable = %v", ok)
			}
			if strings.Contains(err.Error(), testKey.Reveal()) || strings.Contains(fmt.Sprintf("%+v %#v", err, pe), testKey.Reveal()) {
				t.Errorf("key leaked: %v", err)
			}
		})
	}
}

func TestTransportErrors(t *testing.T) {
	fs := newServer(t)
	url := fs.URL
	fs.Close() // connection refused from now on
	c, err := openai.New(openai.Config{Model: "m", BaseURL: url, APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), simpleReq())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Type != "connection_error" || !pe.Retryable || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %#v", err)
	}
	if class, ok := llm.Classify(err); !ok || class != llm.ClassConnection {
		t.Errorf("class = %q %v", class, ok)
	}

	// A server that never answers: the caller's deadline wins and is
	// returned as the context error, not as a provider failure.
	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer slow.Close()
	defer close(block)
	c, _ = openai.New(openai.Config{Model: "m", BaseURL: slow.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Complete(ctx, simpleReq()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}

	// A client-side timeout (http.Client.Timeout) is a retryable timeout.
	c, _ = openai.New(openai.Config{Model: "m", BaseURL: slow.URL, HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
	_, err = c.Complete(context.Background(), simpleReq())
	if !errors.As(err, &pe) || pe.Type != "timeout" || !pe.Retryable {
		t.Errorf("err = %v", err)
	}
}

func TestRetriesAgainstServer(t *testing.T) {
	fs := newServer(t,
		reply{Status: 429, File: "error_rate_limit.json", Headers: map[string]string{"Retry-After": "2"}},
		reply{Status: 500, Body: `{"error":{"message":"boom","type":"server_error"}}`},
		reply{File: "chat_text.json"},
	)
	var waits []time.Duration
	m := llm.WithRetry(newClient(t, fs, nil), llm.RetryPolicy{
		Sleep:  func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
		Jitter: func(d time.Duration) time.Duration { return d },
	})
	resp, err := m.Complete(context.Background(), simpleReq())
	if err != nil || !strings.Contains(resp.Content, "return") {
		t.Fatalf("Complete = %v, %v", resp, err)
	}
	if len(fs.Requests()) != 3 || fmt.Sprint(waits) != "[2s 2s]" {
		t.Errorf("requests %d waits %v (want Retry-After 2s, then exponential 2s)", len(fs.Requests()), waits)
	}
	// A 400 is not retried.
	fs = newServer(t, reply{Status: 400, File: "error_invalid_request.json"}, reply{File: "chat_text.json"})
	m = llm.WithRetry(newClient(t, fs, nil), llm.RetryPolicy{Sleep: func(context.Context, time.Duration) error { return nil }})
	if _, err := m.Complete(context.Background(), simpleReq()); err == nil || len(fs.Requests()) != 1 {
		t.Errorf("400 retried: %d requests, err %v", len(fs.Requests()), err)
	}
}

func TestStreamText(t *testing.T) {
	fs := newServer(t, reply{File: "stream_text.sse", SSE: true})
	c := newClient(t, fs, nil)
	st, err := c.Stream(context.Background(), simpleReq())
	if err != nil {
		t.Fatal(err)
	}
	var deltas []string
	for st.Next() {
		if d, ok := st.Current().(llm.TextDelta); ok {
			deltas = append(deltas, d.Text)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	resp := st.Response()
	if resp.Content != "```clojure\n(return 42)\n```" || len(deltas) != 2 || resp.StopReason != llm.StopEndTurn || resp.ID != "chatcmpl-123" {
		t.Errorf("response = %+v deltas %q", resp, deltas)
	}
	if resp.Usage != (llm.Usage{InputTokens: 1117, OutputTokens: 9, CacheReadTokens: 1024}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
	r := fs.Requests()[0]
	if r.Body["stream"] != true || r.Header.Get("Accept") != "text/event-stream" {
		t.Errorf("stream request = %v %v", r.Body, r.Header)
	}
	if so, _ := r.Body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options = %v", r.Body["stream_options"])
	}
}

// A refusal streamed sets the refusal stop reason, as Complete does.
func TestStreamRefusal(t *testing.T) {
	fs := newServer(t, reply{File: "stream_refusal.sse", SSE: true})
	c := newClient(t, fs, nil)
	st, err := c.Stream(context.Background(), simpleReq())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := llm.Collect(st)
	if err != nil || resp.StopReason != llm.StopRefusal || !strings.Contains(resp.Content, "cannot help") {
		t.Fatalf("refusal = %+v, %v", resp, err)
	}
}

// Requests name the project and its version; a client built without an
// HTTP client gets one with transport timeouts.
func TestUserAgentAndDefaultHTTPClient(t *testing.T) {
	var ua string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua = r.Header.Get("User-Agent")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(srv.Close)
	c, err := openai.New(openai.Config{Model: "m", BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), simpleReq()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ua, "ptc/") || !strings.Contains(ua, "github.com/ptcfleet/ptc") {
		t.Errorf("User-Agent = %q", ua)
	}
}

func TestStreamToolCalls(t *testing.T) {
	fs := newServer(t, reply{File: "stream_tool_calls.sse", SSE: true}, reply{File: "stream_text.sse", SSE: true})
	c := newClient(t, fs, func(cfg *openai.Config) { cfg.NoStreamUsage = true })
	resp, err := llm.Complete(context.Background(), c, simpleReq(), true)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != llm.StopToolUse || len(resp.ToolCalls) != 2 || resp.Usage.InputTokens != 74 || resp.Usage.OutputTokens != 25 {
		t.Fatalf("response = %+v", resp)
	}
	if tc := resp.ToolCalls[0]; tc.ID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" || tc.Name != "get_weather" || tc.Input["location"] != "Paris, France" {
		t.Errorf("tool call 0 = %+v", tc)
	}
	if tc := resp.ToolCalls[1]; tc.ID != "call_2" || tc.Name != "ping" || len(tc.Input) != 0 {
		t.Errorf("tool call 1 = %+v", tc)
	}
	if _, ok := fs.Requests()[0].Body["stream_options"]; ok {
		t.Error("NoStreamUsage must leave out stream_options")
	}
}

func TestStreamFailures(t *testing.T) {
	tests := []struct {
		name      string
		rep       reply
		typ       string
		msg       string
		retryable bool
	}{
		{"error event", reply{File: "stream_error.sse", SSE: true}, "server_error", "The server had an error", true},
		{"truncated", reply{File: "stream_truncated.sse", SSE: true}, "connection_error", "stream ended before [DONE]", true},
		{"malformed chunk", reply{File: "stream_malformed.sse", SSE: true}, "malformed_response", "cannot decode response", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newServer(t, tt.rep)
			st, err := newClient(t, fs, nil).Stream(context.Background(), simpleReq())
			if err != nil {
				t.Fatal(err)
			}
			resp, err := llm.Collect(st)
			var pe *llm.ProviderError
			if resp != nil || !errors.As(err, &pe) || pe.Type != tt.typ || !strings.Contains(pe.Message, tt.msg) || pe.Retryable != tt.retryable {
				t.Fatalf("Collect = %v, %#v", resp, err)
			}
			if st.Response().Content == "" && tt.name != "malformed chunk" {
				t.Error("the partial text should stay readable")
			}
		})
	}
	// A failed stream request reports the status before any event.
	fs := newServer(t, reply{Status: 429, File: "error_rate_limit.json", Headers: map[string]string{"Retry-After": "1"}})
	_, err := newClient(t, fs, nil).Stream(context.Background(), simpleReq())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 429 || pe.RetryAfter != time.Second {
		t.Fatalf("err = %v", err)
	}
}

func TestConfigAndRequestValidation(t *testing.T) {
	bad := []struct {
		cfg  openai.Config
		want string
	}{
		{openai.Config{}, "Model is required"},
		{openai.Config{Model: "m", BaseURL: "localhost:11434"}, "must be an absolute http or https URL"},
		{openai.Config{Model: "m", BaseURL: "ftp://x"}, "must be an absolute http or https URL"},
		{openai.Config{Model: "m", Headers: map[string]string{"authorization": "x"}}, "Headers cannot set authorization"},
	}
	for _, tt := range bad {
		if _, err := openai.New(tt.cfg); !errors.Is(err, llm.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
	c, err := openai.New(openai.Config{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := []struct {
		req  llm.Request
		want string
	}{
		{llm.Request{Opts: map[string]any{"messages": 1}}, `llm_opts key "messages" is set by the client`},
		{llm.Request{Messages: []llm.Message{{Role: "system"}}}, `messages[0]: unknown role "system"`},
		{llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.ToolUse{Name: "x"}}}}}, "messages[0]: a user message cannot hold a tool call"},
		{llm.Request{Messages: []llm.Message{llm.UserText("a"), {Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolResult{}}}}}, "messages[1]: an assistant message cannot hold a tool result"},
		{llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse{Name: "x", Input: map[string]any{"f": func() {}}}}}}}, `messages[0]: tool call "x" input`},
	}
	for _, tt := range reqs {
		if _, err := c.Complete(context.Background(), tt.req); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Complete = %v, want %q", err, tt.want)
		}
	}
}

func TestClientNeverPrintsKey(t *testing.T) {
	cfg := openai.Config{Model: "gpt-4.1-mini", APIKey: testKey}
	chat, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	responses, err := openai.NewResponses(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m interface {
			llm.Model
			Model() string
		}
		value      any
		str, goStr string
	}{
		{chat, *chat, "openai:gpt-4.1-mini@https://api.openai.com/v1/chat/completions",
			"openai.Client(openai:gpt-4.1-mini@https://api.openai.com/v1/chat/completions)"},
		{responses, *responses, "openai:gpt-4.1-mini@https://api.openai.com/v1/responses",
			"openai.ResponsesClient(openai:gpt-4.1-mini@https://api.openai.com/v1/responses)"},
	} {
		for _, s := range []string{fmt.Sprint(c.m), fmt.Sprintf("%v %+v %#v %s", c.m, c.m, c.m, c.m), fmt.Sprintf("%v %+v %#v", c.value, c.value, c.value)} {
			if strings.Contains(s, "SECRET") {
				t.Errorf("key leaked: %s", s)
			}
		}
		if got := fmt.Sprint(c.m); got != c.str || c.m.Model() != "gpt-4.1-mini" {
			t.Errorf("String = %s, Model = %s", got, c.m.Model())
		}
		if got := fmt.Sprintf("%#v", c.m); got != c.goStr || fmt.Sprintf("%#v", c.value) != c.goStr {
			t.Errorf("%%#v = %s, want %s", got, c.goStr)
		}
	}
}

func TestStreamJSONFallbackAndAbandon(t *testing.T) {
	fs := newServer(t, reply{File: "chat_tool_calls.json"})
	resp, err := llm.Complete(context.Background(), newClient(t, fs, nil), simpleReq(), true)
	if err != nil || len(resp.ToolCalls) != 2 || resp.ToolCalls[0].Input["days"] != int64(2) || resp.Usage.InputTokens != 82 {
		t.Fatalf("JSON answer to a stream request = %+v, %v", resp, err)
	}

	// Close from another goroutine unblocks a Next waiting on a silent server.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c, _ := openai.New(openai.Config{Model: "m", BaseURL: srv.URL})
	st, err := c.Stream(context.Background(), simpleReq())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MessageStart", "TextDelta"} {
		if !st.Next() {
			t.Fatalf("no %s event: %v", want, st.Err())
		}
	}
	done := make(chan bool)
	go func() { done <- st.Next() }()
	time.Sleep(20 * time.Millisecond)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case more := <-done:
		if more || st.Err() == nil {
			t.Errorf("Next after Close = %v, err %v", more, st.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Next")
	}
}

func TestConcurrentClient(t *testing.T) {
	replies := make([]reply, 20)
	for i := range replies {
		replies[i] = reply{File: "chat_tool_calls.json"}
	}
	fs := newServer(t, replies...)
	c := newClient(t, fs, nil)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			resp, err := c.Complete(context.Background(), simpleReq())
			if err != nil || len(resp.ToolCalls) != 2 {
				t.Errorf("Complete = %v, %v", resp, err)
			}
		})
	}
	wg.Wait()
	if n := len(fs.Requests()); n != 20 {
		t.Errorf("requests = %d", n)
	}
}

func TestEmptyConversationIsAnArray(t *testing.T) {
	fs := newServer(t, reply{File: "chat_text.json"})
	if _, err := newClient(t, fs, nil).Complete(context.Background(), llm.Request{}); err != nil {
		t.Fatal(err)
	}
	if got := fakeserver.Canonical(t, fs.Requests()[0].Raw); got != `{"messages":[],"model":"gpt-4.1-mini"}` {
		t.Errorf("body = %s", got)
	}
}

// Ollama sends a whole tool call in one chunk without an index, and may
// finish with "stop".
func TestStreamOllamaToolCall(t *testing.T) {
	fs := newServer(t, reply{File: "stream_ollama_tool.sse", SSE: true})
	resp, err := llm.Complete(context.Background(), newClient(t, fs, nil), simpleReq(), true)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != llm.StopToolUse || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_x1" || resp.ToolCalls[0].Input["city"] != "Oslo" || resp.Usage != (llm.Usage{}) {
		t.Errorf("response = %+v", resp)
	}
}
