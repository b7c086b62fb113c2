package agent

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A run waiting on its first model call holds its state on the heap (its
// agent, turn loop, Step, contexts and the model call's goroutine), and
// nothing only a program needs: the table of host services a program
// calls (emit, step-done, llm-query) is built when the first program
// runs.
func TestRunWaitingOnItsFirstModelCallHoldsLittle(t *testing.T) {
	per := heapPerRunWaitingOnItsModel(t, 0)
	t.Logf("%.0f bytes of heap a run waiting on its first model call", per)
	// measured 4,017–4,035 bytes (4,001–4,017 under the race detector),
	// against 4,273–4,307 with the host services built before the first
	// model call
	if per > 4150 {
		t.Errorf("%.0f bytes of heap a run waiting on its first model call, want at most 4,150", per)
	}
}

// A run waiting on its first model call holds nothing only a program
// needs: the tool runner, the programs' tools and host services, a map of
// the inputs when it has none, and the tree's emit limiter are built when
// a program first needs them; nor does it keep the options it was
// started with.
func TestRunWaitingOnItsModelHoldsNoProgramParts(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Count the items", Signature: "{n :int}", Limits: Limits{MaxTurns: 3}})
	opts := RunOptions{Model: llm.Func(func(context.Context, llm.Request) (*llm.Response, error) {
		return &llm.Response{Content: "```clojure\n(emit {:n 1})\n(return {:n 1})\n```"}, nil
	})}
	rs := a.newRun(&opts, nil)
	in, fail := resolveInput(opts)
	if fail != nil {
		t.Fatal(fail)
	}
	ctx := context.Background()
	l, step, err := a.newTurnLoop(ctx, ctx, rs, in, &opts, rs.st)
	if l == nil {
		t.Fatalf("newTurnLoop: %+v, %v", step, err)
	}
	if l.prog != nil || l.inputs != nil || rs.tree.emits.Load() != nil {
		t.Errorf("before its first program a run holds its program parts %v, inputs %v, emit limiter %v; want none",
			l.prog, l.inputs, rs.tree.emits.Load())
	}
	// a whole run builds them for its program, which emits and returns
	var emitted []any
	opts.Observer = ObserverFunc(func(_ context.Context, e Event) {
		if e.Kind == EventEmit {
			emitted = append(emitted, e.Result)
		}
	})
	st, err := a.Run(ctx, opts)
	if err != nil || fmt.Sprint(st.Return) != "map[n:1]" || fmt.Sprint(emitted) != "[map[n:1]]" {
		t.Fatalf("Run = %+v, %v; emitted %v", st, err, emitted)
	}
	// two measures, the smaller kept: the first may count the goroutines
	// the process makes for the first time
	per := min(heapPerRunWaitingOnItsModel(t, 0), heapPerRunWaitingOnItsModel(t, 0))
	t.Logf("%.0f bytes of heap a run waiting on its first model call", per)
	// measured 2,968–3,057 bytes (2,996–3,119 under the race detector),
	// against 3,280–3,383 (3,308–3,374) with the program parts, the emit
	// limiter and the options built or kept before the first model call
	if per > 3200 {
		t.Errorf("%.0f bytes of heap a run waiting on its first model call, want at most 3,200", per)
	}
}

// A run whose caller's deadline comes before its mission timeout (a fleet
// worker's mission timeout, for one) takes the caller's context as its
// mission context rather than deriving a context that adds only a cancel:
// a run waiting on its model holds no context, done channel and entry in
// its parent's children of its own for it.
func TestRunUnderItsCallersDeadlineHoldsNoMissionContext(t *testing.T) {
	per := heapPerRunWaitingOnItsModel(t, time.Minute)
	t.Logf("%.0f bytes of heap a run waiting on its first model call under its caller's deadline, the caller's context included", per)
	// measured 3,841–3,859 bytes (3,279 under the race detector), against
	// 4,289–4,315 with a mission context of its own
	if per > 4050 {
		t.Errorf("%.0f bytes of heap a run waiting on its first model call under its caller's deadline, want at most 4,050", per)
	}
}

// heapPerRunWaitingOnItsModel starts 300 runs whose model holds every
// call, each under a context of its own with that timeout (none when 0),
// and returns the heap a run adds while they all wait on it.
func heapPerRunWaitingOnItsModel(t *testing.T, timeout time.Duration) float64 {
	t.Helper()
	const n = 300
	a := mustNew(t, Spec{Prompt: "Count the items", Signature: "{n :int}", Limits: Limits{MaxTurns: 3}})
	gate := make(chan struct{})
	var waiting sync.WaitGroup
	model := llm.Func(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
		waiting.Done()
		<-gate
		return &llm.Response{Content: "```clojure\n(emit {:n 1})\n(return {:n (count ctx/items)})\n```"}, nil
	})
	opts := RunOptions{Model: model, Context: map[string]any{"items": []any{1, 2}}, Trace: TraceOff}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	// one run first, so what runs share is built
	waiting.Add(1)
	close(gate)
	if st, err := a.Run(context.Background(), opts); err != nil || fmt.Sprint(st.Return) != "map[n:2]" {
		t.Fatalf("Run = %+v, %v", st, err)
	}
	gate = make(chan struct{})
	before := heap()
	waiting.Add(n)
	var done sync.WaitGroup
	done.Add(n)
	steps := make(chan *messages.Step, n)
	for range n {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, timeout)
		}
		a.RunAsync(ctx, opts, func(st *messages.Step, err error) {
			defer cancel()
			if err != nil {
				t.Error(err)
			}
			steps <- st
			done.Done()
		})
	}
	waiting.Wait()
	per := float64(int64(heap())-int64(before)) / n
	close(gate)
	done.Wait()
	close(steps)
	for st := range steps {
		if fmt.Sprint(st.Return) != "map[n:2]" {
			t.Fatalf("returned %v", st.Return)
		}
	}
	return per
}

// A run's end is told as before whether its mission context is its own or
// its caller's (whose deadline came first): the caller's deadline passing
// is the caller's, its own mission timeout passing is the mission's.
func TestMissionEndUnderTheCallersDeadline(t *testing.T) {
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	own, cancelOwn := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelOwn()
	later, cancelLater := context.WithTimeout(context.Background(), time.Hour)
	defer cancelLater()
	for _, c := range []struct {
		name            string
		ctx, missionCtx context.Context
		want            string
	}{
		{"the caller's context as the mission's", past, callersDeadline{past}, "the caller's deadline passed"},
		{"a mission context of its own under the caller's", past, later, "the caller's deadline passed"},
		{"its own mission timeout", later, own, "the mission timeout passed"},
		{"running", later, callersDeadline{later}, ""},
	} {
		f := missionEnd(c.ctx, c.missionCtx)
		switch {
		case c.want == "" && f != nil:
			t.Errorf("%s: %+v, want none", c.name, f)
		case c.want != "" && (f == nil || f.Message != c.want || f.Reason != ReasonMissionTimeout):
			t.Errorf("%s: %+v, want %q", c.name, f, c.want)
		}
	}
}
