package fleet_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// nested returns a value nested depth lists deep.
func nested(depth int) any {
	var v any = int64(1)
	for range depth {
		v = []any{v}
	}
	return v
}

// A Step that no reader could decode (nested deeper than MaxNesting, more
// values than its size allows) is not stored: the mission fails with
// unreadable_result naming the limit, keeping its usage, and every reader
// reads that. NaN and infinities are stored as they are, and a Step larger
// than a message is stored aside and read whole.
func TestUnreadableResultsRefused(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	// one byte per value: more values than a message of its size may hold
	// (messages.MaxValuesFor), well within the size a message may carry
	wide := make([]any, messages.MaxValues)
	for i := range wide {
		wide[i] = int64(1)
	}
	returns := map[string]any{
		"deep":  nested(600),
		"wide":  wide,
		"large": strings.Repeat("x", int(nc.MaxPayload())),
		"nan":   map[string]any{"avg": math.NaN(), "max": math.Inf(1), "min": math.Inf(-1)},
	}
	startWorker(t, nc, fleet.RunnerFunc(func(_ context.Context, m *messages.Mission, _ fleet.RunEnv) (*messages.Step, error) {
		return &messages.Step{Return: returns[m.Context["shape"].(string)], Usage: messages.Usage{Turns: 3, InputTokens: 99}}, nil
	}))
	for shape, want := range map[string]string{
		"deep": "nested deeper than 512 levels",
		"wide": "more than 262144 values",
	} {
		m := newMission()
		m.Context = map[string]any{"shape": shape}
		step, err := c.Run(testCtx(t), m)
		if err != nil {
			t.Fatalf("%s: %v", shape, err)
		}
		if step.Fail == nil || step.Fail.Reason != fleet.ReasonUnreadableResult || !strings.Contains(step.Fail.Message, want) ||
			step.Usage.Turns != 3 || step.Usage.InputTokens != 99 {
			t.Errorf("%s: %+v, usage %+v; want %s naming %q, the usage kept", shape, step.Fail, step.Usage, fleet.ReasonUnreadableResult, want)
		}
		if st := waitState(t, c, m.ID, messages.StateFailed); st.Reason != fleet.ReasonUnreadableResult {
			t.Errorf("%s: status reason %q", shape, st.Reason)
		}
		if _, err := c.Result(testCtx(t), m.ID); err != nil {
			t.Errorf("%s: stored result unreadable: %v", shape, err)
		}
	}
	m := newMission()
	m.Context = map[string]any{"shape": "large"}
	step, err := c.Run(testCtx(t), m)
	if err != nil || step.Fail != nil || step.Return != returns["large"] {
		t.Fatalf("large: %v, %v", step.Fail, err)
	}
	m = newMission()
	m.Context = map[string]any{"shape": "nan"}
	step, err = c.Run(testCtx(t), m)
	if err != nil || step.Fail != nil {
		t.Fatalf("nan: %+v, %v", step, err)
	}
	r := step.Return.(map[string]any)
	if !math.IsNaN(r["avg"].(float64)) || !math.IsInf(r["max"].(float64), 1) || !math.IsInf(r["min"].(float64), -1) {
		t.Errorf("nan: %v", r)
	}
}

// A Step whose trace (the tool results its programs read) no reader could
// decode is stored without its trace, keeping its answer or failure, with
// a warning naming why; only a Step unreadable without its trace fails
// with unreadable_result.
func TestUnreadableTraceDropped(t *testing.T) {
	_, nc := runJetStream(t)
	// encoding a Step of MaxValues values twice takes seconds in a loaded
	// race build: an AckWait of its own keeps this test about the trace
	store := testStore
	store.AckWait = 10 * time.Second
	c, err := fleet.NewClient(testCtx(t), nc, fleet.ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	// one byte per value: more values than a message of its size may hold
	// (messages.MaxValuesFor), well within the size a message may carry
	wide := make([]any, messages.MaxValues)
	for i := range wide {
		wide[i] = int64(1)
	}
	trace := []messages.Turn{{Number: 1, ToolCalls: []messages.ToolCall{{Name: "list_orders", Result: wide}},
		Error: "memory limit exceeded: tool results and the record of tool calls would hold 70000000 bytes"}}
	startWorker(t, nc, fleet.RunnerFunc(func(_ context.Context, m *messages.Mission, _ fleet.RunEnv) (*messages.Step, error) {
		if m.Context["fail"] == true {
			return &messages.Step{Trace: trace, Usage: messages.Usage{Turns: 2},
				Fail: &messages.Fail{Reason: "memory_limit", Message: "memory limit exceeded: tool results and the record of tool calls would hold 70000000 bytes"}}, nil
		}
		return &messages.Step{Return: int64(42), Trace: trace}, nil
	}), func(cfg *fleet.WorkerConfig) { cfg.Store = store })
	for _, fail := range []bool{true, false} {
		m := newMission()
		m.Context = map[string]any{"fail": fail}
		step, err := c.Run(testCtx(t), m)
		if err != nil {
			t.Fatal(err)
		}
		if len(step.Trace) != 0 || len(step.Warnings) != 1 || !strings.Contains(step.Warnings[0], "the trace is not stored") ||
			!strings.Contains(step.Warnings[0], "cannot be stored so that its readers can decode it") {
			t.Errorf("fail=%v: trace %d turns, warnings %q; want the trace dropped and said why", fail, len(step.Trace), step.Warnings)
		}
		switch {
		case fail && (step.Fail == nil || step.Fail.Reason != "memory_limit" || step.Usage.Turns != 2):
			t.Errorf("the failure was not kept: %+v", step.Fail)
		case !fail && (step.Fail != nil || step.Return != int64(42)):
			t.Errorf("the answer was not kept: %v, %+v", step.Return, step.Fail)
		}
	}
}
