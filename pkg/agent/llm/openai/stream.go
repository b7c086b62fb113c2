package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/httpx"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/sse"
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
	return &source{ctx: ctx, c: c, resp: resp, rd: sse.NewReader(resp.Body),
		reqID: httpx.RequestID(resp.Header), started: map[int]bool{}}
}

// source turns chat-completion chunks into llm events.
type source struct {
	ctx      context.Context
	c        *Client
	resp     *http.Response
	rd       *sse.Reader
	reqID    string
	queue    []llm.Event
	began    bool
	finished bool // a finish_reason arrived
	refused  bool // the answer is a refusal
	done     bool
	started  map[int]bool
}

func (s *source) Next() (llm.Event, error) {
	for len(s.queue) == 0 {
		if s.done {
			return nil, io.EOF
		}
		if err := s.read(); err != nil {
			return nil, err
		}
	}
	ev := s.queue[0]
	s.queue = s.queue[1:]
	return ev, nil
}

func (s *source) Close() error { return s.resp.Body.Close() }

func (s *source) read() error {
	ev, err := s.rd.Next()
	if errors.Is(err, io.EOF) {
		s.done = true
		if !s.finished {
			return &llm.ProviderError{Provider: s.c.http.Provider, Type: "connection_error", RequestID: s.reqID,
				Message: "stream ended before [DONE]", Retryable: true}
		}
		return nil
	}
	if err != nil {
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		pe := s.c.http.Transport(err)
		pe.RequestID = s.reqID
		return pe
	}
	if string(ev.Data) == "[DONE]" {
		s.done, s.finished = true, true
		return nil
	}
	if len(ev.Data) == 0 {
		return nil
	}
	var ch chunk
	if err := json.Unmarshal(ev.Data, &ch); err != nil {
		return s.c.http.Malformed(s.reqID, err)
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		typ, code, msg := parseAPIError(ch.Error)
		return &llm.ProviderError{Provider: s.c.http.Provider, Type: typ, Code: code, RequestID: s.reqID,
			Message: s.c.http.Key.Scrub(msg), Retryable: streamErrRetryable(typ, code)}
	}
	if !s.began {
		s.began = true
		s.queue = append(s.queue, llm.MessageStart{ID: ch.ID, Model: ch.Model})
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue // n > 1 is not supported; only the first choice is read
		}
		d := choice.Delta
		if d.Content != nil && *d.Content != "" {
			s.queue = append(s.queue, llm.TextDelta{Text: *d.Content})
		}
		if d.Refusal != nil && *d.Refusal != "" {
			s.refused = true
			s.queue = append(s.queue, llm.TextDelta{Text: *d.Refusal})
		}
		for i, tc := range d.ToolCalls {
			idx := i
			if tc.Index != nil {
				idx = *tc.Index
			}
			if !s.started[idx] {
				s.started[idx] = true
				s.queue = append(s.queue, llm.ToolUseStart{Index: idx, ID: tc.ID, Name: tc.Function.Name})
			}
			if tc.Function.Arguments != "" {
				s.queue = append(s.queue, llm.ToolUseDelta{Index: idx, PartialJSON: tc.Function.Arguments})
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
			s.queue = append(s.queue, llm.MessageDelta{StopReason: stop})
		}
	}
	if ch.Usage != nil {
		s.queue = append(s.queue, llm.MessageDelta{Usage: ch.Usage.toLLM()})
	}
	return nil
}
