//go:build unix

package agent

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// applyInputs are the 10k inputs of the apply benchmarks.
func applyInputs() []map[string]any {
	in := make([]map[string]any, 10_000)
	for i := range in {
		in[i] = report(int64(i%11), "report text")
	}
	return in
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkApply10k compares applying the scorer to 10,000 inputs with a
// compiled program (no model) against running the agent loop once per
// input with a scripted zero-latency model that answers the same logic as
// a one-turn program. Both call the same Go tool once per input. The
// execs/s metric is executions (inputs) per wall-clock second; cpu-µs/exec
// is the process CPU time (GC included) per execution, which stays
// meaningful when the machine is shared.
func BenchmarkApply10k(b *testing.B) {
	inputs := applyInputs()
	b.Run("compiled", func(b *testing.B) {
		c, err := Load(scorerProgram, scorerSig, LoadOptions{Tools: map[string]Tool{"threshold": thresholdTool(new(atomic.Int64))}})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		n := 0
		cpu0 := cpuTime(b)
		for b.Loop() {
			for _, in := range inputs {
				if _, err := c.Execute(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
			n += len(inputs)
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "execs/s")
		b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(n), "cpu-µs/exec")
	})
	b.Run("agent_loop", func(b *testing.B) {
		a := scorerAgent(b, new(atomic.Int64))
		const program = "```clojure\n(let [report ctx/report t (tool/threshold {:kind \"default\"})]\n  (return {:score (/ (:severity report) 10.0) :reason (if (> (:severity report) t) \"high\" \"low\")}))\n```"
		model := llm.Func(func(context.Context, llm.Request) (*llm.Response, error) {
			return &llm.Response{Content: program}, nil
		})
		b.ReportAllocs()
		n := 0
		cpu0 := cpuTime(b)
		for b.Loop() {
			for _, in := range inputs {
				if _, err := a.Run(context.Background(), RunOptions{Model: model, Context: in, Trace: TraceOff}); err != nil {
					b.Fatal(err)
				}
			}
			n += len(inputs)
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "execs/s")
		b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(n), "cpu-µs/exec")
	})
}
