package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/httpx"
)

// Defaults of Config.
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultVersion   = "2023-06-01"
	DefaultMaxTokens = 4096
)

// Config configures a Client. Model is required.
type Config struct {
	// Model is the model name ("claude-sonnet-4-5").
	Model string
	// BaseURL is the API root; "/v1/messages" is appended
	// (default DefaultBaseURL).
	BaseURL string
	// APIKey is sent in the x-api-key header.
	APIKey llm.Secret
	// Version is the anthropic-version header (default DefaultVersion).
	Version string
	// MaxTokens is the max_tokens sent when the request's Opts have none
	// (default DefaultMaxTokens).
	MaxTokens int
	// Headers are extra request headers (anthropic-beta, ...). They cannot
	// replace x-api-key, anthropic-version or Content-Type.
	Headers map[string]string
	// Stream makes Complete stream the answer over the wire and return it
	// whole: the response headers arrive at once and a long answer keeps
	// the connection busy, so proxies and load balancers that cut idle
	// connections do not cut it. Response.Raw is then nil.
	Stream bool
	// HTTPClient sends the requests (default: one with dial, TLS and
	// response header timeouts). Requests carry a User-Agent naming the
	// project and its version unless Headers set one.
	HTTPClient *http.Client
}

// Client is an llm.Model and llm.Streamer for the Messages API. Build it
// with New; safe for concurrent use. Its String,
// "anthropic:claude-sonnet-4-5@https://api.anthropic.com/v1/messages", and
// every fmt form of it leave out the key.
type Client struct {
	httpx.Provider
	maxTokens int
	http      *httpx.Client
}

// New validates cfg and returns a client. Errors name the field.
func New(cfg Config) (*Client, error) {
	hc, base, h, err := httpx.Setup{Name: "anthropic", Provider: "anthropic", Model: cfg.Model, BaseURL: cfg.BaseURL,
		DefaultBaseURL: DefaultBaseURL, Headers: cfg.Headers, Reserved: []string{"X-Api-Key", "Anthropic-Version", "Content-Type"},
		HTTPClient: cfg.HTTPClient, Key: cfg.APIKey, AuthHeader: "X-Api-Key"}.Client()
	if err != nil {
		return nil, err
	}
	if cfg.MaxTokens < 0 {
		return nil, httpx.ConfigError("anthropic", "MaxTokens must be positive, got %d", cfg.MaxTokens)
	}
	maxTokens := cfg.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	version := cfg.Version
	if version == "" {
		version = DefaultVersion
	}
	h.Set("Anthropic-Version", version)
	c := &Client{maxTokens: maxTokens, http: hc}
	c.Provider = httpx.NewProvider("anthropic.Client", cfg.Model, &httpx.Endpoint{HTTP: hc, URL: base + "/v1/messages", Headers: h,
		Body: c.body, DecodeErr: decodeError, Decode: c.decode, Source: c.source, Streamed: cfg.Stream})
	return c, nil
}

// MaxOutputTokens is the max_tokens sent when a request's Opts have none
// (llm.OutputLimiter: a budget reserves it for each call).
func (c *Client) MaxOutputTokens() int { return c.maxTokens }

// wire types

type block struct {
	Type string `json:"type"`
	// text
	Text *string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input *map[string]any `json:"input,omitempty"` // a pointer: an empty input must still be sent
	// tool_result
	ToolUseID string  `json:"tool_use_id,omitempty"`
	Content   *string `json:"content,omitempty"`
	IsError   bool    `json:"is_error,omitempty"`
	// system block
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type cacheControl struct {
	Type string `json:"type"`
}

type message struct {
	Role string `json:"role"`
	// Content holds blocks, and json.RawMessage for provider blocks sent
	// back exactly as they came.
	Content []any `json:"content"`
}

// blockType is the type of a content element of message.
func blockType(c any) string {
	switch b := c.(type) {
	case block:
		return b.Type
	case json.RawMessage:
		var t struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &t)
		return t.Type
	}
	return ""
}

type tool struct {
	Name         string         `json:"name"`
	Description  string         `json:"description,omitempty"`
	InputSchema  map[string]any `json:"input_schema"`
	CacheControl *cacheControl  `json:"cache_control,omitempty"`
}

type usage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
}

// toLLM normalises usage: InputTokens is the whole prompt. When the
// payload has no input_tokens (a message_delta carrying output only), the
// input fields stay zero, which a stream treats as "unchanged".
func (u *usage) toLLM() llm.Usage {
	if u == nil {
		return llm.Usage{}
	}
	out := llm.Usage{OutputTokens: u.OutputTokens}
	if u.InputTokens != nil {
		out.InputTokens = *u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		out.CacheWriteTokens = u.CacheCreationInputTokens
		out.CacheReadTokens = u.CacheReadInputTokens
	}
	return out
}

type respBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type response struct {
	ID         string            `json:"id"`
	Type       string            `json:"type"`
	Model      string            `json:"model"`
	Content    []json.RawMessage `json:"content"`
	StopReason string            `json:"stop_reason"`
	Usage      *usage            `json:"usage"`
	Error      *apiError         `json:"error"`
}

type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

var reserved = []string{"model", "messages", "system", "tools", "stream"}

func (c *Client) body(req llm.Request, stream bool) (map[string]any, error) {
	msgs, err := toWire(req.Messages)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"model": c.Model(), "max_tokens": c.maxTokens, "messages": msgs}
	if req.System != "" {
		if req.CacheSystem {
			body["system"] = []block{{Type: "text", Text: &req.System, CacheControl: ephemeral}}
		} else {
			body["system"] = req.System
		}
	}
	if len(req.Tools) > 0 {
		tools := make([]tool, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = tool{Name: t.Name, Description: t.Description, InputSchema: httpx.InputSchema(t)}
		}
		if req.CacheSystem {
			tools[len(tools)-1].CacheControl = ephemeral
		}
		body["tools"] = tools
	}
	if req.CacheHistory {
		markLast(msgs)
	}
	if err := httpx.MergeOpts("anthropic", body, req.Opts, reserved...); err != nil {
		return nil, err
	}
	if stream {
		body["stream"] = true
	}
	return body, nil
}

// ephemeral is the cache_control of every breakpoint.
var ephemeral = &cacheControl{Type: "ephemeral"}

// markLast puts a cache breakpoint on the last block of the last message
// that the client built (provider blocks pass through unchanged and are
// skipped).
func markLast(msgs []message) {
	if len(msgs) == 0 {
		return
	}
	content := msgs[len(msgs)-1].Content
	for i := len(content) - 1; i >= 0; i-- {
		if b, ok := content[i].(block); ok {
			b.CacheControl = ephemeral
			content[i] = b
			return
		}
	}
}

func toWire(msgs []llm.Message) ([]message, error) {
	out := make([]message, 0, len(msgs))
	for i, m := range msgs {
		if m.Role != llm.RoleUser && m.Role != llm.RoleAssistant {
			return nil, fmt.Errorf("anthropic: messages[%d]: unknown role %q", i, m.Role)
		}
		wm := message{Role: string(m.Role)}
		for _, blk := range m.Content {
			switch b := blk.(type) {
			case llm.Text:
				if b.Text == "" {
					continue // the API rejects empty text blocks
				}
				tb := block{Type: "text", Text: &b.Text}
				if b.Cache {
					tb.CacheControl = ephemeral
				}
				wm.Content = append(wm.Content, tb)
			case llm.ToolUse:
				if m.Role != llm.RoleAssistant {
					return nil, fmt.Errorf("anthropic: messages[%d]: a user message cannot hold a tool call", i)
				}
				input := b.Input
				if input == nil {
					input = map[string]any{}
				}
				wm.Content = append(wm.Content, block{Type: "tool_use", ID: b.ID, Name: b.Name, Input: &input})
			case llm.ToolResult:
				if m.Role != llm.RoleUser {
					return nil, fmt.Errorf("anthropic: messages[%d]: an assistant message cannot hold a tool result", i)
				}
				wm.Content = append(wm.Content, block{Type: "tool_result", ToolUseID: b.ToolUseID, Content: &b.Content, IsError: b.IsError})
			case llm.ProviderBlock:
				if b.Provider == "anthropic" && json.Valid(b.Raw) {
					wm.Content = append(wm.Content, b.Raw) // thinking, signature included, unchanged
				}
			}
		}
		// The API wants a user turn's tool_result blocks before its text.
		slices.SortStableFunc(wm.Content, func(a, b any) int {
			return boolRank(blockType(b) == "tool_result") - boolRank(blockType(a) == "tool_result")
		})
		if len(wm.Content) == 0 {
			return nil, fmt.Errorf("anthropic: messages[%d]: %s message has no content (the API rejects empty messages)", i, m.Role)
		}
		out = append(out, wm)
	}
	return out, nil
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func decodeError(_ int, data []byte) (typ, code, msg string) {
	var env struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(data, &env) != nil || env.Error == nil {
		return "", "", ""
	}
	return env.Error.Type, "", env.Error.Message
}

// decode reads a complete (non-streamed) 2xx response.
func (c *Client) decode(ctx context.Context, resp *http.Response) (*llm.Response, error) {
	var r response
	reqID, data, err := c.http.DecodeJSON(ctx, resp, &r)
	if err != nil {
		return nil, err
	}
	if r.Type == "error" && r.Error != nil {
		return nil, c.streamError(reqID, r.Error)
	}
	if r.Type != "message" {
		return nil, c.http.Malformed(reqID, fmt.Errorf("unexpected response type %q", r.Type))
	}
	out := &llm.Response{Model: r.Model, ID: r.ID, RequestID: reqID, Usage: r.Usage.toLLM(),
		StopReason: llm.StopReason(r.StopReason), Raw: json.RawMessage(data)}
	var text strings.Builder
	for _, raw := range r.Content {
		var b respBlock
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, c.http.Malformed(reqID, err)
		}
		switch b.Type {
		case "thinking", "redacted_thinking":
			out.Provider = append(out.Provider, llm.ProviderBlock{Provider: "anthropic", Type: b.Type, Raw: raw})
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			input, err := llm.DecodeToolInput(string(b.Input))
			if err != nil {
				return nil, c.http.Malformed(reqID, fmt.Errorf("tool_use %q: %w", b.Name, err))
			}
			out.ToolCalls = append(out.ToolCalls, llm.ToolUse{ID: b.ID, Name: b.Name, Input: input})
		}
	}
	out.Content = text.String()
	return out, nil
}

// streamError builds the error for an error object in a 2xx body or an
// error event of a stream.
func (c *Client) streamError(reqID string, e *apiError) *llm.ProviderError {
	pe := &llm.ProviderError{Provider: "anthropic", Type: e.Type, Message: c.http.Key.Scrub(e.Message), RequestID: reqID}
	switch e.Type {
	case "overloaded_error", "api_error", "rate_limit_error", "timeout_error":
		pe.Retryable = true
	}
	return pe
}
