package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/httpx"
)

// DefaultBaseURL is the OpenAI API's base URL.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Client. Model is required; the rest is optional.
type Config struct {
	// Model is the model name sent in each request ("gpt-4.1-mini").
	Model string
	// BaseURL is the API root; "/chat/completions" is appended
	// (default DefaultBaseURL).
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" when not empty (local
	// servers need none).
	APIKey llm.Secret
	// Headers are extra request headers (OpenRouter's HTTP-Referer and
	// X-Title, an organization header, ...). They cannot replace
	// Authorization or Content-Type.
	Headers map[string]string
	// HTTPClient sends the requests (default: one with dial, TLS and
	// response header timeouts; per-call deadlines come from the context).
	// Requests carry a User-Agent naming the project and its version unless
	// Headers set one.
	HTTPClient *http.Client
	// Provider names the provider in errors (default "openai").
	Provider string
	// Stream makes Complete stream the answer over the wire and return it
	// whole: the response headers arrive at once and a long answer keeps
	// the connection busy, so proxies and load balancers that cut idle
	// connections do not cut it. Response.Raw is then nil.
	Stream bool
	// NoStreamUsage leaves out stream_options.include_usage when streaming,
	// for servers that reject it.
	NoStreamUsage bool
}

// Client is an llm.Model and llm.Streamer for a chat-completions API. Build
// it with New; safe for concurrent use. Its String,
// "openai:gpt-4.1-mini@https://api.openai.com/v1/chat/completions", and
// every fmt form of it leave out the key.
type Client struct {
	httpx.Provider
	http    *httpx.Client
	noUsage bool
}

// New validates cfg and returns a client. Errors name the field.
func New(cfg Config) (*Client, error) {
	hc, base, h, err := setup(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{http: hc, noUsage: cfg.NoStreamUsage}
	c.Provider = httpx.NewProvider("openai.Client", cfg.Model, &httpx.Endpoint{HTTP: hc, URL: base + "/chat/completions", Headers: h,
		Body: c.body, DecodeErr: decodeError, Decode: c.decode, Source: c.source, Streamed: cfg.Stream})
	return c, nil
}

// setup validates what both OpenAI APIs share: the model, base URL and
// headers; it returns the HTTP client and the base URL without its
// trailing slash.
func setup(cfg Config) (*httpx.Client, string, http.Header, error) {
	provider := cfg.Provider
	if provider == "" {
		provider = "openai"
	}
	return httpx.Setup{Name: "openai", Provider: provider, Model: cfg.Model, BaseURL: cfg.BaseURL, DefaultBaseURL: DefaultBaseURL,
		Headers: cfg.Headers, Reserved: []string{"Authorization", "Content-Type"}, HTTPClient: cfg.HTTPClient,
		Key: cfg.APIKey, AuthHeader: "Authorization", AuthPrefix: "Bearer "}.Client()
}

// wire types

type message struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type tool struct {
	Type     string      `json:"type"`
	Function functionDef `json:"function"`
}

type functionDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
}

type usage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *usage) toLLM() llm.Usage {
	if u == nil {
		return llm.Usage{}
	}
	out := llm.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CacheReadTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}

type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

type response struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   *string    `json:"content"`
			Refusal   *string    `json:"refusal"`
			ToolCalls []toolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

var reserved = []string{"model", "messages", "tools", "stream", "stream_options"}

// body builds the request body.
func (c *Client) body(req llm.Request, stream bool) (map[string]any, error) {
	msgs, err := toWire(req)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"model": c.Model(), "messages": msgs}
	if len(req.Tools) > 0 {
		tools := make([]tool, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = tool{Type: "function", Function: functionDef{Name: t.Name, Description: t.Description, Parameters: httpx.InputSchema(t)}}
		}
		body["tools"] = tools
	}
	if err := httpx.MergeOpts("openai", body, req.Opts, reserved...); err != nil {
		return nil, err
	}
	setCacheKey(body, req)
	if stream {
		body["stream"] = true
		if !c.noUsage {
			body["stream_options"] = map[string]any{"include_usage": true}
		}
	}
	return body, nil
}

func str(s string) *string { return &s }

// toWire translates our messages into chat-completions messages.
func toWire(req llm.Request) ([]message, error) {
	out := []message{} // never null on the wire
	if req.System != "" {
		out = append(out, message{Role: "system", Content: str(req.System)})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser:
			var text []string
			for _, blk := range m.Content {
				switch b := blk.(type) {
				case llm.Text:
					text = append(text, b.Text)
				case llm.ToolResult:
					out = append(out, message{Role: "tool", ToolCallID: b.ToolUseID, Content: str(b.Content)})
				case llm.ToolUse:
					return nil, fmt.Errorf("openai: messages[%d]: a user message cannot hold a tool call", i)
				}
			}
			if len(text) > 0 {
				out = append(out, message{Role: "user", Content: str(strings.Join(text, "\n"))})
			}
		case llm.RoleAssistant:
			am := message{Role: "assistant"}
			var text []string
			for _, blk := range m.Content {
				switch b := blk.(type) {
				case llm.Text:
					text = append(text, b.Text)
				case llm.ToolUse:
					input := b.Input
					if input == nil {
						input = map[string]any{}
					}
					args, err := json.Marshal(input)
					if err != nil {
						return nil, fmt.Errorf("openai: messages[%d]: tool call %q input: %w", i, b.Name, err)
					}
					am.ToolCalls = append(am.ToolCalls, toolCall{ID: b.ID, Type: "function", Function: functionCall{Name: b.Name, Arguments: string(args)}})
				case llm.ToolResult:
					return nil, fmt.Errorf("openai: messages[%d]: an assistant message cannot hold a tool result", i)
				}
			}
			if len(text) > 0 || len(am.ToolCalls) == 0 {
				am.Content = str(strings.Join(text, "\n"))
			}
			out = append(out, am)
		default:
			return nil, fmt.Errorf("openai: messages[%d]: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

// decodeError reads an error body: {"error": {"message", "type", "code"}}
// or the {"error": "text"} some compatible servers send.
func decodeError(_ int, data []byte) (typ, code, msg string) {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &env) != nil || len(env.Error) == 0 {
		return "", "", ""
	}
	return parseAPIError(env.Error)
}

func parseAPIError(raw json.RawMessage) (typ, code, msg string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return "", "", s
	}
	var e apiError
	if json.Unmarshal(raw, &e) != nil {
		return "", "", ""
	}
	code = strings.Trim(string(e.Code), `"`)
	if code == "null" {
		code = ""
	}
	return e.Type, code, e.Message
}

// decode reads a complete (non-streamed) 2xx response.
func (c *Client) decode(ctx context.Context, resp *http.Response) (*llm.Response, error) {
	var r response
	reqID, data, err := c.http.DecodeJSON(ctx, resp, &r)
	if err != nil {
		return nil, err
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		typ, code, msg := parseAPIError(r.Error)
		return nil, &llm.ProviderError{Provider: c.http.Provider, StatusCode: resp.StatusCode, Type: typ, Code: code,
			Message: c.http.Key.Scrub(msg), RequestID: reqID, Retryable: streamErrRetryable(typ, code)}
	}
	if len(r.Choices) == 0 {
		return nil, c.http.Malformed(reqID, errors.New("no choices in response"))
	}
	ch := r.Choices[0]
	out := &llm.Response{
		Model: r.Model, ID: r.ID, RequestID: reqID, Usage: r.Usage.toLLM(),
		StopReason: stopReason(ch.FinishReason), Raw: json.RawMessage(data),
	}
	if ch.Message.Content != nil {
		out.Content = *ch.Message.Content
	}
	if out.Content == "" && ch.Message.Refusal != nil && *ch.Message.Refusal != "" {
		out.Content = *ch.Message.Refusal
		out.StopReason = llm.StopRefusal
	}
	for _, tc := range ch.Message.ToolCalls {
		input, err := llm.DecodeToolInput(tc.Function.Arguments)
		if err != nil {
			return nil, c.invalidToolCall(reqID, tc.Function.Name, err)
		}
		out.ToolCalls = append(out.ToolCalls, llm.ToolUse{ID: tc.ID, Name: tc.Function.Name, Input: input})
	}
	if len(out.ToolCalls) > 0 && out.StopReason == llm.StopEndTurn {
		out.StopReason = llm.StopToolUse // some compatible servers say "stop" after tool calls
	}
	return out, nil
}

func (c *Client) invalidToolCall(reqID, name string, err error) *llm.ProviderError {
	return &llm.ProviderError{Provider: c.http.Provider, Type: "invalid_tool_call", RequestID: reqID,
		Message: c.http.Key.Scrub(fmt.Sprintf("tool call %q: %v", name, err))}
}

func stopReason(s string) llm.StopReason {
	switch s {
	case "stop":
		return llm.StopEndTurn
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "length":
		return llm.StopMaxTokens
	case "content_filter":
		return llm.StopRefusal
	}
	return llm.StopReason(s)
}

func streamErrRetryable(typ, code string) bool {
	switch {
	case strings.Contains(typ, "server_error"), strings.Contains(typ, "rate_limit"), strings.Contains(code, "rate_limit"),
		typ == "overloaded_error", code == "server_error":
		return true
	}
	return false
}

// setCacheKey sends req.CacheKey as prompt_cache_key, which routes requests
// sharing a prefix to the same cache, unless llm_opts set one.
func setCacheKey(body map[string]any, req llm.Request) {
	if _, set := body["prompt_cache_key"]; !set && req.CacheKey != "" {
		body["prompt_cache_key"] = req.CacheKey
	}
}
