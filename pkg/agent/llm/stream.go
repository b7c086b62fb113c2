package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Event is one streaming event. The set is sealed: MessageStart, TextDelta,
// ToolUseStart, ToolUseDelta, ToolUseEnd, ProviderBlockEnd and
// MessageDelta.
type Event interface {
	isEvent()
}

// MessageStart opens a streamed message.
type MessageStart struct {
	ID    string
	Model string
	// Usage holds the counts known at the start (the prompt tokens, for
	// Anthropic); zero fields are unknown.
	Usage Usage
}

// TextDelta carries the next piece of the answer's text.
type TextDelta struct {
	Text string
}

// ToolUseStart opens tool call number Index (the provider's block or call
// index) with its id and tool name.
type ToolUseStart struct {
	Index int
	ID    string
	Name  string
}

// ToolUseDelta carries the next piece of the JSON input of tool call Index.
type ToolUseDelta struct {
	Index       int
	PartialJSON string
}

// ToolUseEnd closes tool call Index. The [Stream] fills ToolUse in from the
// accumulated deltas (with the decoded input) before the event reaches its
// caller, so finished tool calls are reported as they complete. A source
// that sent no deltas may set ToolUse.Input itself (a replayed response).
type ToolUseEnd struct {
	Index   int
	ToolUse ToolUse
}

// MessageDelta reports the stop reason and usage near the end of a message.
// Non-zero usage fields replace the accumulated ones (providers report
// running totals); an empty StopReason leaves the current one.
type MessageDelta struct {
	StopReason StopReason
	Usage      Usage
}

// ProviderBlockEnd carries a whole provider block (Anthropic thinking with
// its signature) once the provider finished sending it.
type ProviderBlockEnd struct {
	Block ProviderBlock
}

func (ProviderBlockEnd) isEvent() {}
func (MessageStart) isEvent()     {}
func (TextDelta) isEvent()        {}
func (ToolUseStart) isEvent()     {}
func (ToolUseDelta) isEvent()     {}
func (ToolUseEnd) isEvent()       {}
func (MessageDelta) isEvent()     {}

// EventSource produces the events of a Stream. Next returns io.EOF after the
// last event, or another error when the stream failed; Close releases the
// underlying connection and may be called at any time. Provider packages
// implement it over server-sent events.
type EventSource interface {
	Next() (Event, error)
	Close() error
}

// Stream is a stream of events from a model, read like a bufio.Scanner:
//
//	for s.Next() {
//		switch ev := s.Current().(type) { ... }
//	}
//	if err := s.Err(); err != nil { ... }
//	resp := s.Response()
//
// The stream accumulates the events into a Response as it goes. A Stream is
// not safe for concurrent use, except that Close may be called at any time
// from any goroutine, and more than once.
type Stream struct {
	src   EventSource
	cur   Event
	err   error
	done  bool
	close sync.Once
	cerr  error

	resp  Response
	text  strings.Builder
	tools map[int]*pendingTool
	order []int // tool indexes in start order
}

type pendingTool struct {
	id, name string
	input    strings.Builder
	ended    bool
	use      ToolUse
}

// NewStream returns a Stream reading from src.
func NewStream(src EventSource) *Stream {
	return &Stream{src: src, tools: map[int]*pendingTool{}}
}

// StreamOf returns a Stream that yields the given events and ends; it is
// meant for tests and scripted models.
func StreamOf(events ...Event) *Stream {
	return NewStream(&sliceSource{events: events})
}

type sliceSource struct {
	events []Event
	i      int
}

func (s *sliceSource) Next() (Event, error) {
	if s.i >= len(s.events) {
		return nil, io.EOF
	}
	ev := s.events[s.i]
	s.i++
	return ev, nil
}

func (s *sliceSource) Close() error { return nil }

// Next advances to the next event and reports whether there is one. It
// returns false at the end of the stream or on error; see Err.
func (s *Stream) Next() bool {
	if s.done {
		return false
	}
	ev, err := s.src.Next()
	if err != nil {
		s.done = true
		s.cur = nil
		if !errors.Is(err, io.EOF) {
			s.err = err
			return false
		}
		s.err = s.finish()
		return false
	}
	ev, err = s.apply(ev)
	if err != nil {
		s.done = true
		s.cur = nil
		s.err = err
		return false
	}
	s.cur = ev
	return true
}

// Current returns the event Next advanced to.
func (s *Stream) Current() Event { return s.cur }

// Err returns the error that ended the stream, or nil after a clean end.
func (s *Stream) Err() error { return s.err }

// Close releases the stream's connection. It is safe to call more than
// once and from another goroutine (to abandon a stream that Next is
// blocked on); later calls return the first call's result.
func (s *Stream) Close() error {
	s.close.Do(func() { s.cerr = s.src.Close() })
	return s.cerr
}

// Response returns the response accumulated so far. After Next has returned
// false with a nil Err it is the complete response.
func (s *Stream) Response() *Response {
	r := s.resp
	r.Content = s.text.String()
	r.ToolCalls = nil
	for _, idx := range s.order {
		if t := s.tools[idx]; t.ended {
			r.ToolCalls = append(r.ToolCalls, ToolUse{ID: t.use.ID, Name: t.use.Name, Input: CloneMap(t.use.Input)})
		}
	}
	return &r
}

func (s *Stream) apply(ev Event) (Event, error) {
	switch e := ev.(type) {
	case MessageStart:
		if e.ID != "" {
			s.resp.ID = e.ID
		}
		if e.Model != "" {
			s.resp.Model = e.Model
		}
		mergeUsage(&s.resp.Usage, e.Usage)
	case TextDelta:
		s.text.WriteString(e.Text)
	case ProviderBlockEnd:
		s.resp.Provider = append(s.resp.Provider, e.Block)
	case ToolUseStart:
		if _, dup := s.tools[e.Index]; dup {
			return nil, fmt.Errorf("llm: stream: tool call %d started twice", e.Index)
		}
		s.tools[e.Index] = &pendingTool{id: e.ID, name: e.Name}
		s.order = append(s.order, e.Index)
	case ToolUseDelta:
		t, ok := s.tools[e.Index]
		if !ok || t.ended {
			return nil, fmt.Errorf("llm: stream: input delta for unknown tool call %d", e.Index)
		}
		t.input.WriteString(e.PartialJSON)
	case ToolUseEnd:
		t, ok := s.tools[e.Index]
		if !ok || t.ended {
			return nil, fmt.Errorf("llm: stream: end of unknown tool call %d", e.Index)
		}
		if t.input.Len() == 0 && e.ToolUse.Input != nil {
			// A source that knows the whole input (a replayed response).
			t.ended = true
			t.use = ToolUse{ID: t.id, Name: t.name, Input: CloneMap(e.ToolUse.Input)}
		} else if err := s.endTool(t); err != nil {
			return nil, err
		}
		e.ToolUse = ToolUse{ID: t.use.ID, Name: t.use.Name, Input: CloneMap(t.use.Input)}
		return e, nil
	case MessageDelta:
		if e.StopReason != "" {
			s.resp.StopReason = e.StopReason
		}
		mergeUsage(&s.resp.Usage, e.Usage)
	case nil:
		return nil, errors.New("llm: stream: nil event")
	}
	return ev, nil
}

func (s *Stream) endTool(t *pendingTool) error {
	input, err := DecodeToolInput(t.input.String())
	if err != nil {
		return fmt.Errorf("llm: stream: tool call %q (%s): %w", t.name, t.id, err)
	}
	t.ended = true
	t.use = ToolUse{ID: t.id, Name: t.name, Input: input}
	return nil
}

// finish closes tool calls the source never ended (OpenAI-style streams end
// them implicitly).
func (s *Stream) finish() error {
	for _, idx := range s.order {
		if t := s.tools[idx]; !t.ended {
			if err := s.endTool(t); err != nil {
				return err
			}
		}
	}
	return nil
}

func mergeUsage(dst *Usage, u Usage) {
	if u.InputTokens != 0 {
		dst.InputTokens = u.InputTokens
	}
	if u.OutputTokens != 0 {
		dst.OutputTokens = u.OutputTokens
	}
	if u.CacheReadTokens != 0 {
		dst.CacheReadTokens = u.CacheReadTokens
	}
	if u.CacheWriteTokens != 0 {
		dst.CacheWriteTokens = u.CacheWriteTokens
	}
	if u.CostUSD != 0 {
		dst.CostUSD = u.CostUSD
	}
}

// Collect reads s to its end, closes it and returns the accumulated
// Response, or the error that ended the stream.
func Collect(s *Stream) (*Response, error) {
	defer s.Close()
	for s.Next() {
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return s.Response(), nil
}

// DecodeToolInput decodes the JSON arguments of a tool call. Empty input
// (or whitespace) decodes to an empty map; anything but a JSON object is an
// error naming what was found.
func DecodeToolInput(s string) (map[string]any, error) {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}, nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("malformed tool input json: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("malformed tool input json: trailing data after the object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("tool input must be a json object, got %s", jsonKind(v))
	}
	if err := normalizeNumbers(m); err != nil {
		return nil, err
	}
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// normalizeNumbers turns every json.Number in the maps and slices of v,
// in place, into int64 when it is an integer that fits, else float64, so
// tool inputs are plain Go data. A number out of float64 range is an error.
func normalizeNumbers(v any) error {
	fix := func(e any) (any, error) {
		switch x := e.(type) {
		case json.Number:
			if i, err := x.Int64(); err == nil {
				return i, nil
			}
			f, err := x.Float64()
			if err != nil {
				return nil, fmt.Errorf("tool input number %s is out of range", x)
			}
			return f, nil
		case map[string]any, []any:
			return x, normalizeNumbers(x)
		}
		return e, nil
	}
	var err error
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if x[k], err = fix(e); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if x[i], err = fix(e); err != nil {
				return err
			}
		}
	}
	return nil
}
