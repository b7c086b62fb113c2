package llm

import (
	"context"
	"encoding/json"
	"slices"
)

// ToolSpec describes a tool offered to the model for native tool calling.
// InputSchema is a JSON Schema object ({"type": "object", "properties": ...});
// a nil schema is sent as an object schema without properties.
type ToolSpec struct {
	Name        string
	Description string
	InputSchema map[string]any
}

// Request is one call to a model. Only System and Messages are needed by
// every model; the other fields are optional.
//
// A Request is plain data; a Model must not modify it (clone first with
// [Request.Clone] if it needs to).
type Request struct {
	// System is the system prompt.
	System string
	// Messages is the conversation so far, oldest first.
	Messages []Message
	// Tools are offered for native tool calling (text mode); empty in
	// PTC-Lisp mode, where tools are called from programs.
	Tools []ToolSpec
	// Turn is the agent turn this request belongs to, counting from 1
	// (0 when unknown).
	Turn int
	// Prompt is the mission text (the expanded prompt template), for scripted
	// models and observers; providers do not send it separately.
	Prompt string
	// ToolNames are the names of the tools the agent's programs may call.
	ToolNames []string
	// Opts are the agent's llm_opts (temperature, max_tokens, top_p, ...).
	// Providers copy them into the request body as top-level fields.
	Opts map[string]any
	// CacheSystem asks the provider to mark the stable prefix, the tool
	// list and the static system prompt, as cacheable (Anthropic
	// cache_control breakpoints); providers that cache automatically
	// ignore it.
	CacheSystem bool
	// CacheHistory asks the provider to mark the conversation up to the
	// last message as cacheable too (Anthropic: a breakpoint on the last
	// block), so that the next turn, which repeats it, reads it from the
	// cache.
	CacheHistory bool
	// CacheKey names the requests that share a prefix (the agent), for
	// providers that route by it (OpenAI prompt_cache_key); "" sends none.
	CacheKey string
}

// Clone returns a deep copy of r.
func (r Request) Clone() Request {
	out := r
	if r.Messages != nil {
		out.Messages = make([]Message, len(r.Messages))
		for i, m := range r.Messages {
			out.Messages[i] = m.Clone()
		}
	}
	if r.Tools != nil {
		out.Tools = make([]ToolSpec, len(r.Tools))
		for i, t := range r.Tools {
			t.InputSchema = CloneMap(t.InputSchema)
			out.Tools[i] = t
		}
	}
	if r.ToolNames != nil {
		out.ToolNames = append([]string(nil), r.ToolNames...)
	}
	out.Opts = CloneMap(r.Opts)
	return out
}

// StopReason says why the model stopped generating.
type StopReason string

// The stop reasons providers report, normalised. A provider's other values
// are passed through unchanged.
const (
	StopEndTurn   StopReason = "end_turn"      // a natural end (OpenAI "stop")
	StopToolUse   StopReason = "tool_use"      // the model wants tool results (OpenAI "tool_calls")
	StopMaxTokens StopReason = "max_tokens"    // the output limit was hit (OpenAI "length")
	StopSequence  StopReason = "stop_sequence" // a stop sequence matched
	StopRefusal   StopReason = "refusal"       // the provider refused (OpenAI "content_filter")
)

// Usage counts the tokens of one response. Zero means unknown.
// InputTokens counts every prompt token, including the cached ones that
// CacheReadTokens and CacheWriteTokens break out.
type Usage struct {
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	// CostUSD is the estimated cost in US dollars, set by a model with
	// prices (WithPrices); 0 when unknown.
	CostUSD float64
}

// Total returns InputTokens + OutputTokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// Add adds o's counts to u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.CostUSD += o.CostUSD
}

// Response is what a model answered.
type Response struct {
	// Content is the text of the answer (all text blocks concatenated).
	Content string
	// ToolCalls are the tool calls the model requested, in order.
	ToolCalls []ToolUse
	// Provider holds the provider's blocks the loop does not interpret
	// (Anthropic thinking), to be sent back with the answer (Message).
	Provider []ProviderBlock
	// Usage holds the token counts, zero when unknown.
	Usage Usage
	// StopReason says why generation stopped (empty when unknown).
	StopReason StopReason
	// Model is the model that answered, as the provider names it.
	Model string
	// ID is the provider's response or message id, if any.
	ID string
	// RequestID is the provider's request id header, if any (for support).
	RequestID string
	// Raw is the provider's raw response body for traces (nil for streams and
	// scripted models).
	Raw json.RawMessage
}

// Message returns the assistant message to append to the conversation: the
// provider's blocks (thinking comes first), a text block (when Content is
// not empty), then the tool calls.
func (r *Response) Message() Message {
	m := Message{Role: RoleAssistant}
	for _, b := range r.Provider {
		b.Raw = slices.Clone(b.Raw)
		m.Content = append(m.Content, b)
	}
	if r.Content != "" {
		m.Content = append(m.Content, Text{Text: r.Content})
	}
	for _, c := range r.ToolCalls {
		c.Input = CloneMap(c.Input)
		m.Content = append(m.Content, c)
	}
	return m
}

// Model is a language model. Complete sends one request and returns the
// model's answer, or an error: a [*ProviderError] for provider and transport
// failures, ctx.Err() when the context ended, or any other error.
//
// Implementations must be safe for concurrent use and must not retain or
// modify req.
type Model interface {
	Complete(ctx context.Context, req Request) (*Response, error)
}

// Func adapts a function to the Model interface. A nil Func is not a valid
// model ([Registry.Lookup] reports it as invalid_llm).
type Func func(ctx context.Context, req Request) (*Response, error)

// Complete calls f(ctx, req).
func (f Func) Complete(ctx context.Context, req Request) (*Response, error) {
	return f(ctx, req)
}

// Streamer is implemented by models that can stream their answer. The
// returned Stream yields typed events; [Collect] reduces it to the Response
// Complete would have returned. Stream returns an error (and no stream) when
// the request failed before any event arrived.
type Streamer interface {
	Stream(ctx context.Context, req Request) (*Stream, error)
}

// Complete calls m, streaming when m implements Streamer and stream is true
// (the events are discarded; the accumulated Response is returned). It is a
// convenience for callers that do not care how the answer arrives.
func Complete(ctx context.Context, m Model, req Request, stream bool) (*Response, error) {
	if s, ok := m.(Streamer); ok && stream {
		st, err := s.Stream(ctx, req)
		if err != nil {
			return nil, err
		}
		return Collect(st)
	}
	return m.Complete(ctx, req)
}
