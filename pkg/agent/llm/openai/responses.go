package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/httpx"
)

// ResponsesProvider names the Responses API's provider blocks (reasoning
// items) in llm.ProviderBlock.
const ResponsesProvider = "openai-responses"

// ResponsesClient is an llm.Model and llm.Streamer for OpenAI's Responses
// API (POST {base}/responses), which serves the models that chat
// completions does not (the codex and -pro families). Requests are
// stateless (store: false); the model's reasoning items come back
// encrypted and travel to the next turn as llm.ProviderBlocks, so a
// reasoning model keeps its reasoning across tool calls. Build it with
// NewResponses; safe for concurrent use. Its String and every fmt form of
// it leave out the key.
type ResponsesClient struct {
	httpx.Provider
	http *httpx.Client
}

// NewResponses validates cfg and returns a Responses API client.
// NoStreamUsage does not apply.
func NewResponses(cfg Config) (*ResponsesClient, error) {
	hc, base, h, err := setup(cfg)
	if err != nil {
		return nil, err
	}
	c := &ResponsesClient{http: hc}
	c.Provider = httpx.NewProvider("openai.ResponsesClient", cfg.Model, &httpx.Endpoint{HTTP: hc, URL: base + "/responses", Headers: h,
		Body: c.body, DecodeErr: decodeError, Decode: c.decode, Source: c.source, Streamed: cfg.Stream})
	return c, nil
}

var responsesReserved = []string{"model", "input", "instructions", "tools", "stream", "store", "include"}

type responsesTool struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
}

func (c *ResponsesClient) body(req llm.Request, stream bool) (map[string]any, error) {
	input, err := responsesInput(req.Messages)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"model": c.Model(), "input": input, "store": false,
		"include": []string{"reasoning.encrypted_content"}}
	if req.System != "" {
		body["instructions"] = req.System
	}
	if len(req.Tools) > 0 {
		tools := make([]responsesTool, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = responsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: httpx.InputSchema(t)}
		}
		body["tools"] = tools
	}
	if err := httpx.MergeOpts("openai responses", body, req.Opts, responsesReserved...); err != nil {
		return nil, err
	}
	setCacheKey(body, req)
	if stream {
		body["stream"] = true
	}
	return body, nil
}

// responsesInput translates the conversation into input items: messages,
// function_call and function_call_output items, and the reasoning items
// this API returned earlier, unchanged.
func responsesInput(msgs []llm.Message) ([]any, error) {
	out := []any{}
	for i, m := range msgs {
		var text []string
		flush := func() {
			if len(text) > 0 {
				out = append(out, map[string]any{"role": string(m.Role), "content": strings.Join(text, "\n")})
				text = nil
			}
		}
		for _, blk := range m.Content {
			switch b := blk.(type) {
			case llm.Text:
				text = append(text, b.Text)
			case llm.ProviderBlock:
				if b.Provider == ResponsesProvider && json.Valid(b.Raw) {
					flush()
					out = append(out, b.Raw)
				}
			case llm.ToolUse:
				if m.Role != llm.RoleAssistant {
					return nil, fmt.Errorf("openai responses: messages[%d]: a user message cannot hold a tool call", i)
				}
				flush()
				input := b.Input
				if input == nil {
					input = map[string]any{}
				}
				args, err := json.Marshal(input)
				if err != nil {
					return nil, fmt.Errorf("openai responses: messages[%d]: tool call %q input: %w", i, b.Name, err)
				}
				out = append(out, map[string]any{"type": "function_call", "call_id": b.ID, "name": b.Name, "arguments": string(args)})
			case llm.ToolResult:
				if m.Role != llm.RoleUser {
					return nil, fmt.Errorf("openai responses: messages[%d]: an assistant message cannot hold a tool result", i)
				}
				flush()
				out = append(out, map[string]any{"type": "function_call_output", "call_id": b.ToolUseID, "output": b.Content})
			}
		}
		flush()
	}
	return out, nil
}

type responsesBody struct {
	ID                string            `json:"id"`
	Status            string            `json:"status"`
	Model             string            `json:"model"`
	Output            []json.RawMessage `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage *struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type outputItem struct {
	Type    string `json:"type"`
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Args    string `json:"arguments"`
	Content []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

func (c *ResponsesClient) decode(ctx context.Context, resp *http.Response) (*llm.Response, error) {
	reqID, data, err := c.http.Read(ctx, resp)
	if err != nil {
		return nil, err
	}
	out, err := c.response(reqID, data, true)
	if err != nil {
		return nil, err
	}
	out.Raw = json.RawMessage(data)
	return out, nil
}

// response converts a response object; withText false leaves the text out
// (a stream delivered it already).
func (c *ResponsesClient) response(reqID string, data []byte, withText bool) (*llm.Response, error) {
	var r responsesBody
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, c.http.Malformed(reqID, err)
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		typ, code, msg := parseAPIError(r.Error)
		return nil, &llm.ProviderError{Provider: c.http.Provider, Type: typ, Code: code, RequestID: reqID,
			Message: c.http.Key.Scrub(msg), Retryable: streamErrRetryable(typ, code)}
	}
	out := &llm.Response{Model: r.Model, ID: r.ID, RequestID: reqID, StopReason: llm.StopEndTurn}
	if r.Usage != nil {
		out.Usage = llm.Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens}
		if r.Usage.InputTokensDetails != nil {
			out.Usage.CacheReadTokens = r.Usage.InputTokensDetails.CachedTokens
		}
	}
	var text strings.Builder
	refused := false
	for _, raw := range r.Output {
		var it outputItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, c.http.Malformed(reqID, err)
		}
		switch it.Type {
		case "reasoning":
			out.Provider = append(out.Provider, llm.ProviderBlock{Provider: ResponsesProvider, Type: it.Type, Raw: raw})
		case "message":
			for _, part := range it.Content {
				switch part.Type {
				case "output_text":
					text.WriteString(part.Text)
				case "refusal":
					text.WriteString(part.Refusal)
					refused = true
				}
			}
		case "function_call":
			input, err := llm.DecodeToolInput(it.Args)
			if err != nil {
				return nil, &llm.ProviderError{Provider: c.http.Provider, Type: "invalid_tool_call", RequestID: reqID,
					Message: c.http.Key.Scrub(fmt.Sprintf("tool call %q: %v", it.Name, err))}
			}
			out.ToolCalls = append(out.ToolCalls, llm.ToolUse{ID: it.CallID, Name: it.Name, Input: input})
		}
	}
	if withText {
		out.Content = text.String()
	}
	switch {
	case refused:
		out.StopReason = llm.StopRefusal
	case len(out.ToolCalls) > 0:
		out.StopReason = llm.StopToolUse
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		out.StopReason = llm.StopMaxTokens
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter":
		out.StopReason = llm.StopRefusal
	}
	return out, nil
}

// source reads a Responses API event stream: text deltas as they come,
// the rest (reasoning items, function calls, stop reason, usage) from the
// final response object.
func (c *ResponsesClient) source(ctx context.Context, resp *http.Response) llm.EventSource {
	return &responsesSource{Events: c.http.Events(ctx, resp), c: c}
}

type responsesSource struct {
	*httpx.Events
	c       *ResponsesClient
	sawText bool
}

func (s *responsesSource) Next() (llm.Event, error) { return s.Pop(s.read) }

func (s *responsesSource) read() error {
	raw, err := s.Read()
	if errors.Is(err, io.EOF) {
		return s.Cut("response.completed")
	}
	if err != nil {
		return err
	}
	if string(raw.Data) == "[DONE]" {
		return nil
	}
	var ev struct {
		Type     string          `json:"type"`
		Delta    string          `json:"delta"`
		Response json.RawMessage `json:"response"`
		Message  string          `json:"message"`
		Code     string          `json:"code"`
	}
	if err := json.Unmarshal(raw.Data, &ev); err != nil {
		return s.Malformed(err)
	}
	switch ev.Type {
	case "response.created":
		var r responsesBody
		if json.Unmarshal(ev.Response, &r) == nil {
			s.Push(llm.MessageStart{ID: r.ID, Model: r.Model})
		}
	case "response.output_text.delta", "response.refusal.delta":
		if ev.Delta != "" {
			s.sawText = true
			s.Push(llm.TextDelta{Text: ev.Delta})
		}
	case "response.completed", "response.incomplete", "response.failed":
		r, err := s.c.response(s.ReqID, ev.Response, !s.sawText)
		if err != nil {
			return err
		}
		s.End()
		evs := llm.ResponseEvents(r)
		// MessageStart came with response.created; the whole usage follows
		s.Push(evs[1:]...)
		s.Push(llm.MessageDelta{Usage: r.Usage})
	case "error":
		return &llm.ProviderError{Provider: s.c.http.Provider, Type: "server_error", Code: ev.Code, RequestID: s.ReqID,
			Message: s.c.http.Key.Scrub(ev.Message), Retryable: streamErrRetryable("", ev.Code)}
	}
	return nil
}
