package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/httpx"
)

type chunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string    `json:"content"`
			Refusal   *string    `json:"refusal"`
			ToolCalls []toolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// source reads a chat-completions event stream.
func (c *Client) source(ctx context.Context, resp *http.Response) llm.EventSource {
	return &source{Events: c.http.Events(ctx, resp), c: c, started: map[int]bool{}}
}

// source turns chat-completion chunks into llm events.
type source struct {
	*httpx.Events
	c        *Client
	began    bool
	finished bool // a finish_reason arrived
	refused  bool // the answer is a refusal
	started  map[int]bool
}

func (s *source) Next() (llm.Event, error) { return s.Pop(s.read) }

func (s *source) read() error {
	ev, err := s.Read()
	if errors.Is(err, io.EOF) {
		s.End()
		if !s.finished {
			return s.Cut("[DONE]")
		}
		return nil
	}
	if err != nil {
		return err
	}
	if string(ev.Data) == "[DONE]" {
		s.End()
		s.finished = true
		return nil
	}
	var ch chunk
	if err := json.Unmarshal(ev.Data, &ch); err != nil {
		return s.Malformed(err)
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		typ, code, msg := parseAPIError(ch.Error)
		return &llm.ProviderError{Provider: s.c.http.Provider, Type: typ, Code: code, RequestID: s.ReqID,
			Message: s.c.http.Key.Scrub(msg), Retryable: streamErrRetryable(typ, code)}
	}
	if !s.began {
		s.began = true
		s.Push(llm.MessageStart{ID: ch.ID, Model: ch.Model})
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue // n > 1 is not supported; only the first choice is read
		}
		d := choice.Delta
		if d.Content != nil && *d.Content != "" {
			s.Push(llm.TextDelta{Text: *d.Content})
		}
		if d.Refusal != nil && *d.Refusal != "" {
			s.refused = true
			s.Push(llm.TextDelta{Text: *d.Refusal})
		}
		for i, tc := range d.ToolCalls {
			idx := i
			if tc.Index != nil {
				idx = *tc.Index
			}
			if !s.started[idx] {
				s.started[idx] = true
				s.Push(llm.ToolUseStart{Index: idx, ID: tc.ID, Name: tc.Function.Name})
			}
			if tc.Function.Arguments != "" {
				s.Push(llm.ToolUseDelta{Index: idx, PartialJSON: tc.Function.Arguments})
			}
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			s.finished = true
			stop := stopReason(*choice.FinishReason)
			if *choice.FinishReason == "stop" && len(s.started) > 0 {
				stop = llm.StopToolUse // some servers say "stop" after tool calls
			}
			if s.refused {
				stop = llm.StopRefusal // as Complete reports a refusal
			}
			s.Push(llm.MessageDelta{StopReason: stop})
		}
	}
	if ch.Usage != nil {
		s.Push(llm.MessageDelta{Usage: ch.Usage.toLLM()})
	}
	return nil
}
