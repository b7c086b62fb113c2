package agentrun_test

import (
	"context"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// BenchmarkMissionsObserved measures the mission rate of one worker (8
// missions in flight, the real agent loop with a zero-latency model, one
// NATS tool call per mission) with nothing recorded, with metrics, with
// tracing (every span recorded by the SDK and exported in batches to a
// discarding exporter) and with both, in the same run, so that the cost of
// each is the difference between the lines.
func BenchmarkMissionsObserved(b *testing.B) {
	for _, c := range []struct {
		name string
		opts observeOpts
	}{
		{"off", observeOpts{}},
		{"metrics", observeOpts{metrics: true}},
		{"tracing", observeOpts{tracing: true, discard: true}},
		{"metrics+tracing", observeOpts{metrics: true, tracing: true, discard: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			model := llm.Func(func(context.Context, llm.Request) (*llm.Response, error) {
				return &llm.Response{Content: "```clojure\n(return {:n (count (tool/get_customer {:id 1}))})\n```",
					Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}}, nil
			})
			o := startObserved(b, llm.Registry{"default": model}, c.opts)
			spec := &messages.AgentSpec{Prompt: "Mission {{n}}", Signature: "(n :int) -> {n :int}", Tools: []string{"get_customer"}}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			elapsed, errs := runMissions(ctx, b, o.client, spec, 8, nil)
			for _, err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "missions/s")
		})
	}
}
