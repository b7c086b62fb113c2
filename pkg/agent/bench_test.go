package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// turnModel answers explore programs until the last turn, then returns.
func turnModel(turns int) llm.Model {
	return llm.Func(func(_ context.Context, req llm.Request) (*llm.Response, error) {
		if req.Turn < turns {
			return &llm.Response{Content: "```clojure\n{:n (count ctx/items) :sum (reduce + 0 (map :v ctx/items))}\n```"}, nil
		}
		return &llm.Response{Content: "```clojure\n(return {:n n})\n```"}, nil
	})
}

func records(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"id": int64(i), "v": int64(i % 7), "name": fmt.Sprintf("record-%d", i), "tags": []any{"a", "b"}}
	}
	return out
}

// BenchmarkLoopTurn measures the loop's overhead per turn (prompt
// building, response parsing, program run, feedback) with a zero-latency
// model on a small context.
func BenchmarkLoopTurn(b *testing.B) {
	const turns = 5
	a := mustNew(b, Spec{Prompt: "Count the items", Signature: "{n :int}", Limits: Limits{MaxTurns: turns}})
	opts := RunOptions{Model: turnModel(turns), Context: map[string]any{"items": records(10)}, Trace: TraceOff}
	n := runEach(b, a, opts)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*turns), "ns/turn")
}

// runEach reports allocations and runs a with opts once per iteration of
// b.Loop; it returns the number of runs.
func runEach(b *testing.B, a *Agent, opts RunOptions) int {
	b.Helper()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, err := a.Run(context.Background(), opts); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}

// BenchmarkPromptBytes1000 runs three turns on a 1,000-record context and
// reports the bytes sent to the model per turn (system prompt plus
// messages): the truncated previews keep it small.
func BenchmarkPromptBytes1000(b *testing.B) {
	const turns = 3
	var bytesSent int
	inner := turnModel(turns)
	model := llm.Func(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
		bytesSent += len(req.System)
		for _, m := range req.Messages {
			bytesSent += len(m.Text())
		}
		return inner.Complete(ctx, req)
	})
	a := mustNew(b, Spec{Prompt: "Summarize the records", Signature: "{n :int}", Limits: Limits{MaxTurns: turns}})
	opts := RunOptions{Model: model, Context: map[string]any{"items": records(1000)}, Trace: TraceOff}
	n := runEach(b, a, opts)
	b.ReportMetric(float64(bytesSent)/float64(n*turns), "prompt-bytes/turn")
}
