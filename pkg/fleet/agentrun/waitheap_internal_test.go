package agentrun

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A mission started with Start keeps, while its agent waits on its model,
// what its run needs and what its result is made with: not the options
// prepare built the run with (the run holds its own copy) nor a second
// reference to them through the callback that ends it, and, when its
// agents all call one model, that model wrapped alone rather than a copy
// of the worker's registry.
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
	// metered, as a worker's missions are: their models are wrapped
	metrics, err := fleet.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	env := fleet.RunEnv{Metrics: metrics}
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
		r.Start(context.Background(), m, env, func(step *messages.Step, err error) {
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
	// measured 3,948–3,964 bytes (metered: the model wrapped), against
	// 4,291–4,300 with a copy of the registry; unmetered (nothing to
	// wrap), 3,900 against 4,021–4,036 with the callback holding all
	// prepare built. Since the agent builds what only its programs need
	// at its first program (pkg/agent), 3,436 bytes (2,835–3,434 under
	// the race detector) against 3,763–3,772. Since a model call awaits
	// its answer on a goroutine of its own (llm.AsyncModel), the run's
	// continuation (startModelCall's callback, the model call's state) and
	// the metering wrapper's callback wait on the heap, about 280 bytes,
	// where they waited in the run's stack frames: 3,684–3,700 bytes, for
	// a stack of 4 KB instead of 8 KB
	// (TestWorkerProcessMemoryWhileMissionsWaitOnModels bounds the two
	// together).
	if per > 3800 {
		t.Errorf("%.0f bytes of heap a mission started with Start while it waits on its model, want at most 3,800", per)
	}
}
