package messages

import (
	"reflect"
	"testing"
	"time"
)

// BenchmarkUnmarshal decodes a running status, a mission of a typical
// agent submission and the result of a one-turn agent mission.
func BenchmarkUnmarshal(b *testing.B) {
	now := time.Now()
	step := &Step{Version: StepVersion, Return: map[string]any{"n": int64(2)}, Signature: "{n :int}",
		Usage: Usage{InputTokens: 900, OutputTokens: 40, Requests: 1},
		Trace: []Turn{{Number: 1, Program: "(return {:n (+ 1 (:n (tool/get_customer {:id 1})))})", Result: map[string]any{"n": int64(2)},
			ToolCalls: []ToolCall{{Name: "get_customer", Args: map[string]any{"id": int64(1)}, Result: map[string]any{"n": int64(1), "name": "Ada"}}},
			StartedAt: now, Duration: time.Millisecond, Usage: Usage{InputTokens: 900, OutputTokens: 40, Requests: 1}}}}
	for _, c := range []struct {
		name   string
		data   []byte
		decode func([]byte) error
	}{
		{"Status", mustMarshal(b, &Status{Version: 1, MissionID: "01JB0000000000000000000000", Submitter: "s", State: StateRunning, Worker: "w1", Attempt: 1, StreamSeq: 7, UpdatedAt: now}),
			func(d []byte) error { var s Status; return Unmarshal(d, &s) }},
		{"Mission", mustMarshal(b, &Mission{Version: MissionVersion, ID: "01JB0000000000000000000000", Kind: KindAgent, CreatedAt: now,
			Agent: &AgentSpec{Prompt: "Mission {{n}}", Signature: "(n :int) -> {n :int}", Tools: []string{"get_customer"}},
			Tools: []string{"get_customer"}, Context: map[string]any{"n": int64(1)}}),
			func(d []byte) error { var m Mission; return Unmarshal(d, &m) }},
		{"Approval", mustMarshal(b, &Approval{Version: ApprovalVersion, MissionID: "01JB0000000000000000000000", Call: "1.3d6db6a8812d1fe0cb4050a3.0",
			State: ApprovalApproved, Tool: "refund", Service: "shop", Args: map[string]any{"order": "A-1", "amount": int64(500), "_card": FirewallMask},
			Turn: 1, Rule: "service shop: amount > 100", Priority: "normal", Submitter: "anonymous", RequestedAt: now, Deadline: now.Add(time.Hour),
			DecidedBy: "ann", DecidedAt: now}),
			func(d []byte) error { var a Approval; return Unmarshal(d, &a) }},
		{"Step", func() []byte {
			d, err := MarshalStep(step)
			if err != nil {
				b.Fatal(err)
			}
			return d
		}(),
			func(d []byte) error { _, err := UnmarshalStep(d); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.decode(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func mustMarshal(b *testing.B, v any) []byte {
	d, err := Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkNormalizeWalk walks decoded values: a Step of a one-call
// trace, a mission, and a tool response read as a struct of the caller's
// own (outside the messages' types).
func BenchmarkNormalizeWalk(b *testing.B) {
	type response struct {
		Version int              `msgpack:"v"`
		CallID  string           `msgpack:"call_id"`
		Result  []byte           `msgpack:"result"`
		Ref     *ObjectRef       `msgpack:"result_ref,omitempty"`
		Error   *ToolError       `msgpack:"error,omitempty"`
		Meta    map[string]any   `msgpack:"meta"`
		Items   []map[string]any `msgpack:"items"`
	}
	step := &Step{Version: StepVersion, Return: map[string]any{"n": int64(2)}, Signature: "{n :int}",
		Trace: []Turn{{Number: 1, Program: "(return 1)", Result: map[string]any{"n": int64(2)},
			ToolCalls: []ToolCall{{Name: "get_customer", Args: map[string]any{"id": int64(1)}, Result: map[string]any{"n": int64(1)}}}}}}
	mission := &Mission{Version: MissionVersion, ID: "01JB0000000000000000000000", Kind: KindAgent,
		Agent: &AgentSpec{Prompt: "p", Tools: []string{"get_customer"}}, Context: map[string]any{"n": int64(1)}}
	resp := &response{Version: 1, CallID: "1", Result: []byte{1}, Meta: map[string]any{"a": "b"}, Items: []map[string]any{{"x": int64(1)}}}
	for _, c := range []struct {
		name string
		v    any
	}{{"Step", step}, {"Mission", mission}, {"Response", resp}} {
		b.Run(c.name, func(b *testing.B) {
			rv := reflect.ValueOf(c.v)
			b.ReportAllocs()
			for b.Loop() {
				if err := normalizeValue(rv, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
