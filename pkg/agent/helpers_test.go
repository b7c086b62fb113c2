package agent

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

func mustNew(t testing.TB, s Spec) *Agent {
	t.Helper()
	a, err := New(s)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// wantSpecError fails t unless err is a spec *Error (one that is
// ErrInvalidSpec) naming field, whose message contains msg.
func wantSpecError(t *testing.T, err error, field, msg string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindSpec || !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("err = %v, want a spec error", err)
	}
	if e.Field != field || !strings.Contains(e.Msg, msg) {
		t.Fatalf("field %q msg %q, want %q %q", e.Field, e.Msg, field, msg)
	}
}

// run runs a with the scripted replies and returns the step, the error
// and the model.
//
//lint:ignore ST1008 callers check the step and the error first; the model is for the few that inspect requests
func run(t *testing.T, a *Agent, opts RunOptions, replies ...llmtest.Reply) (*messages.Step, error, *llmtest.Model) {
	t.Helper()
	m := llmtest.NewT(t, replies...)
	if opts.Model == nil && opts.LLM == "" {
		opts.Model = m
	}
	st, err := a.Run(context.Background(), opts)
	if st == nil {
		t.Fatal("Run returned a nil step")
	}
	if (err == nil) != (st.Fail == nil) {
		t.Fatalf("err = %v but step.Fail = %v", err, st.Fail)
	}
	if err != nil {
		if got := StepOf(err); got != st {
			t.Fatalf("error carries step %p, want %p", got, st)
		}
	}
	return st, err, m
}

func wantReason(t *testing.T, st *messages.Step, err error, reason string) {
	t.Helper()
	if st.Fail == nil {
		t.Fatalf("run succeeded with %v, want failure %s", st.Return, reason)
	}
	if st.Fail.Reason != reason {
		t.Fatalf("fail reason = %q (%s), want %q", st.Fail.Reason, st.Fail.Message, reason)
	}
	if !errors.Is(err, &Error{Kind: KindRun, Reason: reason}) {
		t.Fatalf("errors.Is(err, reason %s) is false for %v", reason, err)
	}
}

// userTexts returns the text of every user message of request i.
func lastUser(req llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Text()
		}
	}
	return ""
}

func contains(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Fatalf("text does not contain %q:\n%s", sub, s)
		}
	}
}

func notContains(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			t.Fatalf("text contains %q:\n%s", sub, s)
		}
	}
}

var bg = context.Background()

// memPerRun runs f runs times and returns the allocations and the bytes
// one run made on average (testing.AllocsPerRun counts allocations only).
// As AllocsPerRun does, it runs f once before counting (what a first call
// sets up once is not a run's) and counts on one P, so that goroutines
// other tests left running allocate less in between.
func memPerRun(runs int, f func()) (allocs, bytes float64) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&ms1)
	return float64(ms1.Mallocs-ms0.Mallocs) / float64(runs), float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(runs)
}
