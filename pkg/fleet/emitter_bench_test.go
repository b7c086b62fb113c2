package fleet

import (
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// BenchmarkEmitterMission emits the events of a compiled mission with one
// tool call (started, program, tool call, tool result, final) as the
// worker does, batched, and publishes them: the emitter's share of a
// mission's CPU and allocations.
func BenchmarkEmitterMission(b *testing.B) {
	nc := embeddedConn(b)
	args := map[string]any{"id": int64(42), "name": "customer name"}
	result := map[string]any{"rows": []any{map[string]any{"id": int64(1), "total": 12.5}, map[string]any{"id": int64(2), "total": 3.25}}}
	step := &messages.Step{Return: map[string]any{"total": 15.75}}
	id := messages.NewMissionID()
	b.ReportAllocs()
	for b.Loop() {
		em := &emitter{nc: nc, sub: messages.DefaultSubmitter, missionID: id, worker: "w1", attempt: 1, delay: time.Hour}
		em.Emit(&messages.Event{Kind: messages.EventStarted})
		em.Emit(&messages.Event{Kind: messages.EventProgram, Turn: 1, Program: "(call \"lookup\" {:id 42 :name \"customer name\"})"})
		em.Emit(&messages.Event{Kind: messages.EventToolCall, Turn: 1, Tool: "lookup", CallID: "c1", Args: args})
		em.Emit(&messages.Event{Kind: messages.EventToolResult, Turn: 1, Tool: "lookup", CallID: "c1", Result: result})
		em.Emit(&messages.Event{Kind: messages.EventFinal, Step: step})
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
}
