package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/httpx"
)

type streamEvent struct {
	Type         string    `json:"type"`
	Message      *response `json:"message"`
	Index        int       `json:"index"`
	ContentBlock *struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
	} `json:"delta"`
	Usage *usage    `json:"usage"`
	Error *apiError `json:"error"`
}

// source reads a Messages API event stream.
func (c *Client) source(ctx context.Context, resp *http.Response) llm.EventSource {
	return &source{Events: c.http.Events(ctx, resp), c: c, tools: map[int]bool{}}
}

type source struct {
	*httpx.Events
	c       *Client
	tools   map[int]bool // indexes of open tool_use blocks
	stopped bool         // message_stop arrived
	// thinking holds the open thinking blocks by index, rebuilt from their
	// deltas so they can be sent back whole.
	thinking map[int]*thinkingBlock
}

// thinkingBlock is a thinking or redacted_thinking block as the Messages
// API wants it back.
type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

func (s *source) Next() (llm.Event, error) {
	for {
		if s.stopped {
			return nil, io.EOF
		}
		raw, err := s.Read()
		if errors.Is(err, io.EOF) {
			return nil, s.Cut("message_stop")
		}
		if err != nil {
			return nil, err
		}
		var ev streamEvent
		if err := json.Unmarshal(raw.Data, &ev); err != nil {
			return nil, s.Malformed(err)
		}
		if out, err := s.convert(ev); err != nil || out != nil {
			return out, err
		}
	}
}

// convert maps one event; (nil, nil) means "nothing to report".
func (s *source) convert(ev streamEvent) (llm.Event, error) {
	switch ev.Type {
	case "message_start":
		if ev.Message == nil {
			return nil, s.Malformed(errors.New("message_start without message"))
		}
		u := ev.Message.Usage.toLLM()
		u.OutputTokens = 0 // the final count arrives in message_delta
		return llm.MessageStart{ID: ev.Message.ID, Model: ev.Message.Model, Usage: u}, nil
	case "content_block_start":
		if ev.ContentBlock == nil {
			return nil, s.Malformed(errors.New("content_block_start without content_block"))
		}
		switch ev.ContentBlock.Type {
		case "thinking", "redacted_thinking":
			if s.thinking == nil {
				s.thinking = map[int]*thinkingBlock{}
			}
			cb := ev.ContentBlock
			s.thinking[ev.Index] = &thinkingBlock{Type: cb.Type, Thinking: cb.Thinking, Signature: cb.Signature, Data: cb.Data}
		case "tool_use":
			s.tools[ev.Index] = true
			return llm.ToolUseStart{Index: ev.Index, ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name}, nil
		case "text":
			if ev.ContentBlock.Text != "" {
				return llm.TextDelta{Text: ev.ContentBlock.Text}, nil
			}
		}
	case "content_block_delta":
		if ev.Delta == nil {
			return nil, s.Malformed(errors.New("content_block_delta without delta"))
		}
		switch ev.Delta.Type {
		case "text_delta":
			return llm.TextDelta{Text: ev.Delta.Text}, nil
		case "input_json_delta":
			if ev.Delta.PartialJSON == "" {
				return nil, nil
			}
			return llm.ToolUseDelta{Index: ev.Index, PartialJSON: ev.Delta.PartialJSON}, nil
		case "thinking_delta", "signature_delta":
			if tb := s.thinking[ev.Index]; tb != nil {
				tb.Thinking += ev.Delta.Thinking
				tb.Signature += ev.Delta.Signature
			}
		}
		// citations_delta: not part of the answer
	case "content_block_stop":
		if tb := s.thinking[ev.Index]; tb != nil {
			delete(s.thinking, ev.Index)
			raw, err := json.Marshal(tb)
			if err != nil {
				return nil, s.Malformed(err)
			}
			return llm.ProviderBlockEnd{Block: llm.ProviderBlock{Provider: "anthropic", Type: tb.Type, Raw: raw}}, nil
		}
		if s.tools[ev.Index] {
			delete(s.tools, ev.Index)
			return llm.ToolUseEnd{Index: ev.Index}, nil
		}
	case "message_delta":
		md := llm.MessageDelta{Usage: ev.Usage.toLLM()}
		if ev.Delta != nil {
			md.StopReason = llm.StopReason(ev.Delta.StopReason)
		}
		return md, nil
	case "message_stop":
		s.stopped = true
	case "error":
		e := ev.Error
		if e == nil {
			e = &apiError{Type: "api_error", Message: "error event without details"}
		}
		return nil, s.c.streamError(s.ReqID, e)
	}
	// ping and unknown event types are skipped.
	return nil, nil
}
