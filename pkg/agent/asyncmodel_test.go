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

// heldModel starts its calls without waiting on them (llm.AsyncModel): it
// holds each until release, and starts no goroutine of its own (Complete
// waits on the call it starts). Its first
// fail calls answer a retryable error at once. It answers turn n with the
// program of answers[n-1].
type heldModel struct {
	answers []string
	arrived chan struct{}
	mu      sync.Mutex
	held    []func()
	fail    int
	calls   int
}

func (m *heldModel) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	type outcome struct {
		r   *llm.Response
		err error
	}
	ch := make(chan outcome, 1)
	m.CompleteAsync(ctx, req, func(r *llm.Response, err error) { ch <- outcome{r, err} })
	o := <-ch
	return o.r, o.err
}

func (m *heldModel) CompleteAsync(_ context.Context, req llm.Request, done func(*llm.Response, error)) {
	m.mu.Lock()
	m.calls++
	if m.fail > 0 {
		m.fail--
		m.mu.Unlock()
		done(nil, &llm.ProviderError{StatusCode: 503, Retryable: true, Message: "busy"})
		return
	}
	content := m.answers[req.Turn-1]
	m.held = append(m.held, func() { done(&llm.Response{Content: content}, nil) })
	m.mu.Unlock()
	m.arrived <- struct{}{}
}

// release answers the calls held, each on a goroutine of its own.
func (m *heldModel) release() {
	m.mu.Lock()
	held := m.held
	m.held = nil
	m.mu.Unlock()
	for _, f := range held {
		go f()
	}
}

// A run whose model starts its calls without waiting on them holds no
// goroutine while it waits: the goroutine that started the call ends, and
// the run goes on where the model answers, through its turns to its end.
func TestRunOnAnAsyncModelHoldsNoGoroutineWhileItWaits(t *testing.T) {
	const n = 100
	a := mustNew(t, Spec{Prompt: "Count the items", Signature: "{n :int}", Limits: Limits{MaxTurns: 3}})
	m := &heldModel{arrived: make(chan struct{}, n),
		answers: []string{"```clojure\n(def n (count ctx/items))\nn\n```", "```clojure\n(return {:n n})\n```"}}
	opts := RunOptions{Model: m, Context: map[string]any{"items": records(3)}, Trace: TraceOff}
	before := runtime.NumGoroutine()
	steps := make(chan *messages.Step, n)
	for range n {
		a.RunAsync(context.Background(), opts, func(st *messages.Step, err error) {
			if err != nil {
				t.Error(err)
			}
			steps <- st
		})
	}
	for turn := 1; turn <= 2; turn++ {
		for range n {
			select {
			case <-m.arrived:
			case <-time.After(30 * time.Second):
				t.Fatalf("turn %d: the runs did not all call their model", turn)
			}
		}
		// the goroutines that started the calls end
		var extra int
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if extra = runtime.NumGoroutine() - before; extra < n/10 || time.Now().After(deadline) {
				break
			}
		}
		if extra >= n/10 {
			t.Fatalf("turn %d: %d goroutines more while %d runs wait on their model, want none", turn, extra, n)
		}
		m.release()
	}
	for range n {
		if st := <-steps; fmt.Sprint(st.Return) != "map[n:3]" || st.Usage.Requests != 2 {
			t.Fatalf("returned %v after %d requests", st.Return, st.Usage.Requests)
		}
	}
}

// A run on a model that starts its calls without waiting on them retries
// a failed call under its policy as it does on any model.
func TestRunOnAnAsyncModelRetriesUnderItsPolicy(t *testing.T) {
	policy := &llm.RetryPolicy{MaxAttempts: 3, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	a := mustNew(t, Spec{Prompt: "Count the items", Signature: "{n :int}", Limits: Limits{MaxTurns: 2}, LLMRetry: policy})
	m := &heldModel{arrived: make(chan struct{}, 4), fail: 2, answers: []string{"```clojure\n(return {:n (count ctx/items)})\n```"}}
	opts := RunOptions{Model: m, Context: map[string]any{"items": records(2)}, Trace: TraceOff}
	got := make(chan *messages.Step, 1)
	a.RunAsync(context.Background(), opts, func(st *messages.Step, err error) {
		if err != nil {
			t.Error(err)
		}
		got <- st
	})
	select {
	case <-m.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the third attempt did not reach the model")
	}
	m.release()
	st := <-got
	if fmt.Sprint(st.Return) != "map[n:2]" || st.Usage.Requests != 3 || m.calls != 3 {
		t.Fatalf("returned %v after %d requests (%d calls), want map[n:2] after 3", st.Return, st.Usage.Requests, m.calls)
	}
}
