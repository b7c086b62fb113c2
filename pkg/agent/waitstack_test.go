package agent

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// growStack uses about n KB of its goroutine's stack, so that the stack
// has grown well past what a waiting run needs.
//
//go:noinline
func growStack(n int) byte {
	var buf [1000]byte
	buf[n%len(buf)] = byte(n)
	if n > 0 {
		return growStack(n-1) + buf[len(buf)-1-n%len(buf)]
	}
	return buf[0]
}

// Runs waiting on their model keep small stacks: the frames a run waits
// under (run, loop, callAndAnswer, callModel, the retry's) hold few bytes, so
// at GC the stack of a waiting run shrinks to 8 KB (a goroutine's stack
// halves at each GC while less than a quarter of it is in use). With the
// turn's state and the handling of the model's answer in the loop's own
// frame (3.9 KB) and the run's set-up in run's (1.3 KB), a PTC-Lisp run
// here waited under more than 8 KB of frames and kept 32 KB; with them in
// the text loop's own frames (2.5 KB and 0.9 KB), a text-mode run here
// waited under more than 4 KB and kept 16 KB.
func TestRunWaitingOnItsModelKeepsASmallStack(t *testing.T) {
	t.Run("lisp", func(t *testing.T) {
		a := mustNew(t, Spec{Prompt: "Count the items", Signature: "{n :int}", Limits: Limits{MaxTurns: 3}})
		first := &llm.Response{Content: "```clojure\n(def n (count ctx/items))\nn\n```"}
		last := &llm.Response{Content: "```clojure\n(return {:n n})\n```"}
		checkWaitingStack(t, a, map[string]any{"items": records(10)}, first, last, "map[n:10]")
	})
	t.Run("text", func(t *testing.T) {
		// the tool loop with a JSON answer: a tool call on the first
		// turn, the answer on the second
		a := mustText(t, Spec{Prompt: "Add {{a}} and {{b}}", Signature: "(a :int, b :int) -> {result :int}",
			Tools: map[string]Tool{"add": addTool()}, Limits: Limits{MaxTurns: 3}})
		first := &llm.Response{ToolCalls: []llm.ToolUse{{ID: "call_1", Name: "add", Input: map[string]any{"a": int64(2), "b": int64(3)}}},
			StopReason: llm.StopToolUse}
		last := &llm.Response{Content: `{"result": 5}`, StopReason: llm.StopEndTurn}
		checkWaitingStack(t, a, map[string]any{"a": 2, "b": 3}, first, last, "map[result:5]")
	})
}

// checkWaitingStack runs many runs of a at once, each with a stack grown
// past 32 KB beforehand; their model answers the first turn with first and
// then waits until every run waits on it, when the stacks are measured,
// before answering with last. Each run must return want.
func checkWaitingStack(t *testing.T, a *Agent, input map[string]any, first, last *llm.Response, want string) {
	const n = 200
	gate := make(chan struct{})
	var waiting, done sync.WaitGroup
	waiting.Add(n)
	done.Add(n)
	model := llm.Func(func(_ context.Context, req llm.Request) (*llm.Response, error) {
		if req.Turn == 1 {
			r := *first
			return &r, nil
		}
		waiting.Done()
		<-gate
		r := *last
		return &r, nil
	})
	opts := RunOptions{Model: model, Context: input, Trace: TraceOff}
	stacks := func() uint64 {
		for range 6 {
			runtime.GC()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.StackInuse
	}
	before := stacks()
	errs := make(chan error, n)
	for range n {
		go func() {
			defer done.Done()
			growStack(48)
			st, err := a.Run(context.Background(), opts)
			if err == nil && fmt.Sprint(st.Return) != want {
				err = fmt.Errorf("returned %v", st.Return)
			}
			errs <- err
		}()
	}
	waiting.Wait()
	per := float64(int64(stacks())-int64(before)) / n
	close(gate)
	done.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%.1f KB of stack per waiting run", per/1e3)
	// the race detector makes every frame larger: a waiting run keeps
	// 16 KB there, and 32 KB with large frames on the wait path
	limit := 12e3
	if raceEnabled {
		limit = 24e3
	}
	if per > limit {
		t.Errorf("%.1f KB of stack per run waiting on its model; want at most %.0f KB", per/1e3, limit/1e3)
	}
}
