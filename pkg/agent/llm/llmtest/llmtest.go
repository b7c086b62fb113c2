package llmtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// ModelName is the Response.Model of scripted replies.
const ModelName = "llmtest"

// Sentinel errors of the scripted model.
var (
	// ErrExhausted is returned (wrapped) by a call that finds no reply left.
	ErrExhausted = errors.New("llmtest: script exhausted")
	// ErrCheck is returned (wrapped) when a reply's Check rejects the request.
	ErrCheck = errors.New("llmtest: request check failed")
)

// Reply is one scripted answer. Build it with Text, Code, ToolCall, Error,
// Respond or Hang and refine it with the With* methods; the zero Reply
// answers with empty content.
type Reply struct {
	// Content is the answer text.
	Content string
	// ToolCalls are native tool calls; an empty ID is filled in as
	// "call_<call number>_<index>".
	ToolCalls []llm.ToolUse
	// Usage is reported as the response's token counts.
	Usage llm.Usage
	// StopReason defaults to tool_use when there are tool calls, else
	// end_turn.
	StopReason llm.StopReason
	// Err, when set, is returned instead of a response.
	Err error
	// Func, when set, computes the answer from the request (and overrides
	// the fields above).
	Func func(ctx context.Context, req llm.Request) (*llm.Response, error)
	// Check, when set, is called with the request; a non-nil error fails the
	// call with ErrCheck (and the test, when the model has a testing.TB).
	Check func(req llm.Request) error
	// Hang makes the call block until its context ends and return the
	// context's error (for timeout tests).
	Hang bool
}

// Text returns a reply answering content.
func Text(content string) Reply { return Reply{Content: content} }

// Code returns a reply holding src in a ```clojure fenced block, the way a
// model answers in PTC-Lisp mode.
func Code(src string) Reply { return Reply{Content: "```clojure\n" + src + "\n```"} }

// ToolCall returns a reply requesting one native tool call.
func ToolCall(name string, input map[string]any) Reply {
	return Reply{}.WithToolCall(name, input)
}

// Error returns a reply failing with err. Wrap err with llm.MarkRetryable,
// or use a *llm.ProviderError, to script an infrastructure error.
func Error(err error) Reply { return Reply{Err: err} }

// Respond returns a reply computed by fn from the request.
func Respond(fn func(ctx context.Context, req llm.Request) (*llm.Response, error)) Reply {
	return Reply{Func: fn}
}

// Hang returns a reply that blocks until the call's context ends.
func Hang() Reply { return Reply{Hang: true} }

// WithUsage returns r with the given input and output token counts.
func (r Reply) WithUsage(input, output int64) Reply {
	r.Usage.InputTokens, r.Usage.OutputTokens = input, output
	return r
}

// WithToolCall returns r with one more tool call.
func (r Reply) WithToolCall(name string, input map[string]any) Reply {
	if input == nil {
		input = map[string]any{}
	}
	r.ToolCalls = append(append([]llm.ToolUse(nil), r.ToolCalls...), llm.ToolUse{Name: name, Input: input})
	return r
}

// WithStopReason returns r with the given stop reason (max_tokens, to test
// truncated answers).
func (r Reply) WithStopReason(reason llm.StopReason) Reply {
	r.StopReason = reason
	return r
}

// Expect returns r with check run on the request it answers.
func (r Reply) Expect(check func(req llm.Request) error) Reply {
	r.Check = check
	return r
}

// Model is a scripted llm.Model (and llm.Streamer). The zero value has no
// replies; New is the usual constructor. Safe for concurrent use.
type Model struct {
	mu       sync.Mutex
	replies  []Reply
	next     int
	requests []llm.Request
	failures []error
	tb       testing.TB
}

// New returns a model answering with replies, in order.
func New(replies ...Reply) *Model {
	return &Model{replies: append([]Reply(nil), replies...)}
}

// NewT is New for tests: a failed Check also fails tb (with tb.Errorf), and
// at the end of the test tb fails if replies were left unused.
func NewT(tb testing.TB, replies ...Reply) *Model {
	tb.Helper()
	m := New(replies...)
	m.tb = tb
	tb.Cleanup(func() {
		if n := m.Remaining(); n > 0 {
			tb.Errorf("llmtest: %d scripted replies were not used (%d calls made)", n, m.Calls())
		}
	})
	return m
}

// Add appends replies to the script.
func (m *Model) Add(replies ...Reply) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replies = append(m.replies, replies...)
}

// Complete answers with the next scripted reply and records req.
func (m *Model) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	call := len(m.requests) + 1
	m.requests = append(m.requests, req.Clone())
	if m.next >= len(m.replies) {
		n := len(m.replies)
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: no reply left for call %d (%d scripted)", ErrExhausted, call, n)
	}
	r := m.replies[m.next]
	m.next++
	tb := m.tb
	m.mu.Unlock()

	if r.Check != nil {
		if err := r.Check(req.Clone()); err != nil {
			err = fmt.Errorf("%w: call %d: %w", ErrCheck, call, err)
			m.mu.Lock()
			m.failures = append(m.failures, err)
			m.mu.Unlock()
			if tb != nil {
				tb.Errorf("%v", err)
			}
			return nil, err
		}
	}
	if r.Hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if r.Func != nil {
		return r.Func(ctx, req.Clone())
	}
	if r.Err != nil {
		return nil, r.Err
	}
	resp := &llm.Response{Content: r.Content, Usage: r.Usage, StopReason: r.StopReason,
		Model: ModelName, ID: fmt.Sprintf("msg_%d", call)}
	for i, c := range r.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", call, i+1)
		}
		c.Input = llm.CloneMap(c.Input)
		resp.ToolCalls = append(resp.ToolCalls, c)
	}
	if resp.StopReason == "" {
		resp.StopReason = llm.StopEndTurn
		if len(resp.ToolCalls) > 0 {
			resp.StopReason = llm.StopToolUse
		}
	}
	return resp, nil
}

// Stream answers like Complete, as a stream: the text arrives in several
// deltas (split after spaces and newlines) so stream consumers are
// exercised.
func (m *Model) Stream(ctx context.Context, req llm.Request) (*llm.Stream, error) {
	resp, err := m.Complete(ctx, req)
	if err != nil {
		return nil, err
	}
	var evs []llm.Event
	for _, ev := range llm.ResponseEvents(resp) {
		if td, ok := ev.(llm.TextDelta); ok {
			for _, piece := range splitText(td.Text) {
				evs = append(evs, llm.TextDelta{Text: piece})
			}
			continue
		}
		evs = append(evs, ev)
	}
	return llm.StreamOf(evs...), nil
}

func splitText(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexAny(s, " \n")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// Requests returns deep copies of the requests received so far, in order.
func (m *Model) Requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]llm.Request, len(m.requests))
	for i, r := range m.requests {
		out[i] = r.Clone()
	}
	return out
}

// LastRequest returns a deep copy of the latest request, and false when
// there was none.
func (m *Model) LastRequest() (llm.Request, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.requests) == 0 {
		return llm.Request{}, false
	}
	return m.requests[len(m.requests)-1].Clone(), true
}

// Calls returns the number of calls made (including failed ones).
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// Remaining returns the number of replies not yet used.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.replies) - m.next
}

// Failures returns the errors of failed Checks so far.
func (m *Model) Failures() []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]error(nil), m.failures...)
}
