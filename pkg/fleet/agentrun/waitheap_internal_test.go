package agentrun

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A mission started with Start keeps, while its agent waits on its model,
// what its run needs and what its result is made with: not the options
// prepare built the run with (the run holds its own copy) nor a second
// reference to them through the callback that ends it.
func TestStartedMissionWaitingOnItsModelHoldsLittle(t *testing.T) {
	const n = 300
	gate := make(chan struct{})
	var waiting sync.WaitGroup
	model := llm.Func(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
		waiting.Done()
		<-gate
		return &llm.Response{Content: "```clojure\n(return {:n 1})\n```"}, nil
	})
	r := New(Config{Models: llm.Registry{"default": model}})
	mission := func() *messages.Mission {
		return &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
			Agent: &messages.AgentSpec{Prompt: "answer", Signature: "{n :int}", Limits: messages.Limits{MaxTurns: 2}}}
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var done sync.WaitGroup
	results := make(chan *messages.Step, n)
	start := func(m *messages.Mission) {
		done.Add(1)
		r.Start(context.Background(), m, fleet.RunEnv{}, func(step *messages.Step, err error) {
			if err != nil {
				t.Errorf("mission %s: %v", m.ID, err)
			}
			results <- step
			done.Done()
		})
	}
	// one mission first, so what missions share (the agent) is built
	waiting.Add(1)
	start(mission())
	waiting.Wait()
	close(gate)
	done.Wait()
	<-results
	gate = make(chan struct{})
	ms := make([]*messages.Mission, n)
	for i := range ms {
		ms[i] = mission()
	}
	before := heap()
	waiting.Add(n)
	for _, m := range ms {
		start(m)
	}
	waiting.Wait()
	per := float64(heap()-before) / n
	close(gate)
	done.Wait()
	for range n {
		if st := <-results; !st.Ok() {
			t.Fatalf("mission failed: %+v", st.Fail)
		}
	}
	t.Logf("%.0f bytes of heap a mission started with Start while it waits on its model", per)
	// measured 3,900–3,901 bytes, against 4,021–4,036 with the callback
	// holding all prepare built
	if per > 3960 {
		t.Errorf("%.0f bytes of heap a mission started with Start while it waits on its model, want at most 3,960", per)
	}
}
