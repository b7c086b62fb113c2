package agent

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// runAsync runs a with RunAsync and returns what done heard, failing when
// done is called more than once; returnedFirst says whether RunAsync had
// returned when done was called. It closes returned (when not nil) once
// RunAsync returns: a model that waits for it answers only then.
func runAsync(t *testing.T, a *Agent, opts RunOptions, returned chan struct{}) (step *messages.Step, err error, returnedFirst bool) {
	t.Helper()
	type result struct {
		step     *messages.Step
		err      error
		returned bool
	}
	var back, calls atomic.Int32
	res := make(chan result, 2)
	a.RunAsync(context.Background(), opts, func(step *messages.Step, err error) {
		calls.Add(1)
		res <- result{step, err, back.Load() == 1}
	})
	back.Store(1)
	if returned != nil {
		close(returned)
	}
	var r result
	select {
	case r = <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("done was not called")
	}
	time.Sleep(10 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Fatalf("done was called %d times", n)
	}
	return r.step, r.err, r.returned
}

// A run of RunAsync ends as Run's does: its Step, its turns and its
// failures are Run's; the caller's goroutine returns once the first model
// call is under way.
func TestRunAsyncEndsAsRun(t *testing.T) {
	turns := func() llm.Model {
		return llm.Func(func(_ context.Context, req llm.Request) (*llm.Response, error) {
			if req.Turn == 1 {
				return &llm.Response{Content: "```clojure\n(def n (count ctx/items))\nn\n```"}, nil
			}
			return &llm.Response{Content: "```clojure\n(return {:n n})\n```"}, nil
		})
	}
	a := mustNew(t, Spec{Prompt: "Count the items", Signature: "{n :int}", Limits: Limits{MaxTurns: 3}})
	opts := RunOptions{Model: turns(), Context: map[string]any{"items": records(4)}, Trace: TraceOn}
	want, werr := a.Run(context.Background(), opts)
	got, gerr, _ := runAsync(t, a, opts, nil)
	if werr != nil || gerr != nil || !got.Ok() || fmt.Sprint(got.Return) != fmt.Sprint(want.Return) ||
		got.Usage.Requests != want.Usage.Requests || got.Usage.Turns != want.Usage.Turns || len(got.Trace) != len(want.Trace) {
		t.Fatalf("RunAsync: %+v %v\nRun: %+v %v", got, gerr, want, werr)
	}

	t.Run("turns run out", func(t *testing.T) {
		a := mustNew(t, Spec{Prompt: "Count the items", Signature: "{n :int}", Limits: Limits{MaxTurns: 2}})
		opts := opts
		opts.Model = llm.Func(func(context.Context, llm.Request) (*llm.Response, error) {
			return &llm.Response{Content: "```clojure\n(def n 1)\nn\n```"}, nil
		})
		step, err, _ := runAsync(t, a, opts, nil)
		if step.Fail == nil || step.Fail.Reason != ReasonMaxTurns || err == nil || step.Usage.Requests != 2 {
			t.Fatalf("%+v %v; want max_turns after 2 requests", step, err)
		}
	})
	t.Run("no model", func(t *testing.T) {
		// the run ends before any model call: done is called before
		// RunAsync returns
		step, err, returnedFirst := runAsync(t, a, RunOptions{Context: opts.Context}, nil)
		if step.Fail == nil || err == nil || returnedFirst {
			t.Fatalf("%+v %v (RunAsync returned before done: %v)", step, err, returnedFirst)
		}
	})
	t.Run("panic", func(t *testing.T) {
		returned := make(chan struct{})
		boom := llm.Func(func(context.Context, llm.Request) (*llm.Response, error) {
			<-returned
			panic("boom")
		})
		step, err, returnedFirst := runAsync(t, a, RunOptions{Model: boom, Context: opts.Context}, returned)
		if step.Fail == nil || step.Fail.Reason != "internal_error" || err == nil || !returnedFirst {
			t.Fatalf("%+v %v (RunAsync returned before done: %v); want internal_error after RunAsync returned", step, err, returnedFirst)
		}
	})
	t.Run("text", func(t *testing.T) {
		a := mustText(t, Spec{Prompt: "Add {{a}} and {{b}}", Signature: "(a :int, b :int) -> {result :int}", Limits: Limits{MaxTurns: 2}})
		returned := make(chan struct{})
		m := llm.Func(func(context.Context, llm.Request) (*llm.Response, error) {
			<-returned
			return &llm.Response{Content: `{"result": 5}`, StopReason: llm.StopEndTurn}, nil
		})
		step, err, returnedFirst := runAsync(t, a, RunOptions{Model: m, Context: map[string]any{"a": 2, "b": 3}}, returned)
		if err != nil || fmt.Sprint(step.Return) != "map[result:5]" || !returnedFirst {
			t.Fatalf("%+v %v (RunAsync returned before done: %v)", step, err, returnedFirst)
		}
	})
}
