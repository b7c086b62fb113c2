package messages

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// EventVersion is the version of the Event layout.
const EventVersion = 1

// Event kinds; each is the last token of EventSubject.
const (
	// EventStarted: a worker took the mission (Attempt, Worker set).
	EventStarted = "started"
	// EventTurnStarted and EventTurnFinished bracket one turn (Turn set).
	EventTurnStarted  = "turn_started"
	EventTurnFinished = "turn_finished"
	// EventLLMRequest: a request to the model is about to be sent.
	EventLLMRequest = "llm_request"
	// EventProgram: the model wrote a program (Program set).
	EventProgram = "program"
	// EventToolCall: a tool call is starting (Tool, CallID, Args set).
	EventToolCall = "tool_call"
	// EventToolResult: a tool call finished (Result or Error set).
	EventToolResult = "tool_result"
	// EventPlan: the state of an agent's plan (Plan set), when the run
	// starts and after each step a program marks done (Data["step"]: its
	// id).
	EventPlan = "plan"
	// EventEmit: a program streamed a value out with (emit v) (Result
	// set).
	EventEmit = "emit"
	// EventApprovalRequested: the mission is suspended at a tool call
	// that waits for approval (Tool, Args, Turn, Program set; Data holds
	// the Approval record's other fields).
	EventApprovalRequested = "approval_requested"
	// EventApprovalDecided: a person approved or denied a call, or its
	// deadline passed (Tool set; Data holds the decision).
	EventApprovalDecided = "approval_decided"
	// EventFinal: the mission ended (Step set); the last event.
	EventFinal = "final"
	// EventBudget: a fleet-wide budget the mission spends from reached 80
	// or 100 percent (Data: budget, scope, window, period, percent,
	// max_cost_usd, max_tokens); announced once per budget and period,
	// on the mission whose model call reached it.
	EventBudget = "budget"
	// EventQuotaWait: the mission waits for its submitter's running
	// quota (Data: submitter, max_running, running, retry_at); it is
	// parked and queued again at retry_at.
	EventQuotaWait = "quota_wait"
)

// FirewallMask replaces the value of every firewalled key (a map key that
// starts with "_") in events.
const FirewallMask = "<Firewalled>"

// Event is one progress event of a running mission, published on
// EventSubject(MissionID, Kind). Events are for watchers (people, UIs);
// values are masked with Masked before they are published.
type Event struct {
	Version   int       `msgpack:"v"`
	MissionID string    `msgpack:"mission_id"`
	Kind      string    `msgpack:"kind"`
	Time      time.Time `msgpack:"time"`
	// Attempt is the delivery attempt of the mission (1 for the first).
	Attempt int    `msgpack:"attempt,omitempty"`
	Worker  string `msgpack:"worker,omitempty"`
	Turn    int    `msgpack:"turn,omitempty"`
	Program string `msgpack:"program,omitempty"`
	Tool    string `msgpack:"tool,omitempty"`
	CallID  string `msgpack:"call_id,omitempty"`
	// Args and Result are a tool call's arguments and result.
	Args   map[string]any `msgpack:"args,omitempty"`
	Result any            `msgpack:"result"`
	// Error is a failed turn's or tool call's error text.
	Error    string        `msgpack:"error,omitempty"`
	Duration time.Duration `msgpack:"duration,omitempty"`
	// Step is the final Step (EventFinal only), without trace and memory.
	Step *Step `msgpack:"step,omitempty"`
	// Plan is the state of an agent's plan (EventPlan only).
	Plan []PlanStep `msgpack:"plan,omitempty"`
	// Data holds anything else worth showing.
	Data map[string]any `msgpack:"data,omitempty"`
}

// ValidEventKind reports whether k is one of the Event* kinds.
func ValidEventKind(k string) bool {
	switch k {
	case EventStarted, EventTurnStarted, EventTurnFinished, EventLLMRequest,
		EventProgram, EventToolCall, EventToolResult, EventPlan, EventEmit, EventFinal,
		EventApprovalRequested, EventApprovalDecided, EventBudget, EventQuotaWait:
		return true
	}
	return false
}

// Validate checks an event.
func (e *Event) Validate() error {
	if e == nil {
		return invalidf("event is nil")
	}
	if e.Version < 0 || e.Version > EventVersion {
		return invalidf("event.v: version %d not supported (max %d)", e.Version, EventVersion)
	}
	if !ValidMissionID(e.MissionID) {
		return invalidf("event.mission_id: %q is not a ULID", e.MissionID)
	}
	if !ValidEventKind(e.Kind) {
		return invalidf("event.kind: %q is not a known event kind", e.Kind)
	}
	if e.Kind == EventFinal && e.Step == nil {
		return invalidf("event.step: required for kind %q", EventFinal)
	}
	if e.Step != nil {
		if err := e.Step.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Masked returns a copy of e whose Args, Result, Data and Step values have
// every firewalled key masked (MaskFirewalled). The Step keeps Return, Fail,
// Usage and the scalar fields; its Trace and Memory are dropped. e is not
// modified; a value holding no firewalled key is shared with e, not
// copied, so the copy's values are to be read, not changed.
func (e *Event) Masked() *Event {
	cp := new(Event)
	e.MaskTo(cp)
	return cp
}

// MaskTo sets *dst to the copy of e Masked returns, so that a caller
// encoding events one at a time can reuse one Event.
func (e *Event) MaskTo(dst *Event) {
	*dst = *e
	if dst.Args != nil {
		dst.Args = maskShared(dst.Args).(map[string]any)
	}
	dst.Result = maskShared(dst.Result)
	if dst.Data != nil {
		dst.Data = maskShared(dst.Data).(map[string]any)
	}
	if dst.Step != nil {
		s := *dst.Step
		s.Return = maskShared(s.Return)
		s.Memory = nil
		s.Trace = nil
		if s.Fail != nil {
			f := *s.Fail
			if f.Details != nil {
				f.Details = maskShared(f.Details).(map[string]any)
			}
			s.Fail = &f
		}
		dst.Step = &s
	}
}

// maskShared is MaskFirewalled for a value only read: v itself when it
// holds no firewalled key (nor a Masker) at any depth, else its masked copy.
func maskShared(v any) any {
	if !holdsFirewalled(v, 0) {
		return v
	}
	return mask(v, 0)
}

// holdsFirewalled reports whether mask would change v.
func holdsFirewalled(v any, depth int) bool {
	if depth > maxDepth {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if strings.HasPrefix(k, "_") || holdsFirewalled(e, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holdsFirewalled(e, depth+1) {
				return true
			}
		}
	case Masker:
		return true
	}
	return false
}

// MaskFirewalled returns a deep copy of v (plain Go data) in which the value
// of every map key starting with "_" is replaced by FirewallMask, at any
// depth. A Masker masks itself. Other values than []any and map[string]any
// are returned as they are.
func MaskFirewalled(v any) any { return mask(v, 0) }

// Masker is a value that masks its own firewalled keys for MaskFirewalled:
// a tool result kept as its wire bytes (lisp.WireResult) returns itself
// when it holds no firewalled key, so an event carries the bytes unchanged.
type Masker interface {
	MaskFirewalled() any
}

func mask(v any, depth int) any {
	if depth > maxDepth {
		return FirewallMask
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if strings.HasPrefix(k, "_") {
				out[k] = FirewallMask
			} else {
				out[k] = mask(e, depth+1)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = mask(e, depth+1)
		}
		return out
	case Masker:
		return x.MaskFirewalled()
	}
	return v
}

// EncodeEventBatch is the payload of a message on EventBatchSubject: a
// msgpack array of the events, each as Marshal encodes it.
func EncodeEventBatch(events [][]byte) []byte {
	size := 5
	for _, e := range events {
		size += len(e)
	}
	out := AppendEventBatchHeader(make([]byte, 0, size), len(events))
	for _, e := range events {
		out = append(out, e...)
	}
	return out
}

// MaxEventBatchHeader is the most bytes AppendEventBatchHeader appends.
const MaxEventBatchHeader = 5

// AppendEventBatchHeader appends to dst the start of a batch of n events:
// the payload EncodeEventBatch returns is it and then the events' own
// encodings, one after another.
func AppendEventBatchHeader(dst []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(dst, 0x90|byte(n))
	case n <= math.MaxUint16:
		return append(dst, 0xdc, byte(n>>8), byte(n))
	default:
		return append(dst, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

// DecodeEventBatch decodes the payload of a message on EventBatchSubject
// that carries count events, in order. An element that is no valid Event
// is nil (its number is taken all the same); a payload that is not an
// array of exactly count elements is an error.
func DecodeEventBatch(data []byte, count int) ([]*Event, error) {
	var raw []msgpack.RawMessage
	if err := Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("messages: event batch: %w", err)
	}
	if len(raw) != count {
		return nil, invalidf("event batch: %d events, its subject says %d", len(raw), count)
	}
	out := make([]*Event, count)
	for i, r := range raw {
		var ev Event
		if Unmarshal(r, &ev) == nil && ev.Validate() == nil {
			out[i] = &ev
		}
	}
	return out, nil
}
