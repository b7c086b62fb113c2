package agent

import (
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// With max_turns 2 and retry_turns 2, a return that fails validation in
// the last turn earns a retry turn; the model is told so, and its fixed
// return ends the run.
func TestRetryTurnsFixReturn(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Count", Signature: "{n :int}", Limits: Limits{MaxTurns: 2, RetryTurns: 2}})
	st, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(def x 1)`),
		llmtest.Code(`(return {:n "one"})`),
		llmtest.Code(`(return {:n 1})`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if st.Return.(map[string]any)["n"] != int64(1) || st.Usage.Turns != 3 {
		t.Fatalf("return %v after %d turns", st.Return, st.Usage.Turns)
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	fb := lastUser(reqs[2])
	for _, want := range []string{"Return type validation failed", retryTurnNote, "Turn 3 of 3 (0 remaining)", "This is your last turn"} {
		if !strings.Contains(fb, want) {
			t.Fatalf("retry feedback lacks %q:\n%s", want, fb)
		}
	}
	if strings.Contains(lastUser(reqs[1]), retryTurnNote) {
		t.Fatal("an ordinary turn is announced as a retry turn")
	}
}

// A retry turn is for fixing the return only: a retry turn that does new
// work (no return) ends the run, and without retry_turns a failed return
// in the last turn ends it at once.
func TestRetryTurnsOnlyForReturns(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Count", Signature: "{n :int}", Limits: Limits{MaxTurns: 2, RetryTurns: 3}})
	// an unused reply stays in the script: llmtest.New, not NewT
	m := llmtest.New(
		llmtest.Code(`(def x 1)`),
		llmtest.Code(`(return {:n "one"})`),
		llmtest.Code(`(def y 2)`),
		llmtest.Code(`(return {:n 1})`),
	)
	st, err, _ := run(t, a, RunOptions{Model: m})
	wantReason(t, st, err, ReasonMaxTurns)
	if n := len(m.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3: a retry turn that does not return ends the run", n)
	}
	if !strings.Contains(st.Fail.Message, "after 3 turns") {
		t.Fatalf("fail message %q", st.Fail.Message)
	}

	// an error in an ordinary last turn grants nothing
	m = llmtest.New(
		llmtest.Code(`(def x 1)`),
		llmtest.Code(`(/ 1 0)`),
		llmtest.Code(`(return {:n 1})`),
	)
	st, err, _ = run(t, a, RunOptions{Model: m})
	wantReason(t, st, err, ReasonMaxTurns)
	if n := len(m.Requests()); n != 2 {
		t.Fatalf("%d requests after an error in the last turn, want 2", n)
	}

	// no retry_turns: the failed return in the last turn is the end
	b := mustNew(t, Spec{Prompt: "Count", Signature: "{n :int}", Limits: Limits{MaxTurns: 2}})
	m = llmtest.New(
		llmtest.Code(`(def x 1)`),
		llmtest.Code(`(return {:n "one"})`),
		llmtest.Code(`(return {:n 1})`),
	)
	st, err, _ = run(t, b, RunOptions{Model: m})
	wantReason(t, st, err, ReasonMaxTurns)
	if n := len(m.Requests()); n != 2 {
		t.Fatalf("%d requests without retry_turns, want 2", n)
	}
}

// A single-turn agent (max_turns 1, no tools) with retry_turns gets a
// turn to fix a value that fails validation.
func TestRetryTurnsSingleTurn(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Count", Signature: ":int", Limits: Limits{MaxTurns: 1, RetryTurns: 1}})
	st, err, m := run(t, a, RunOptions{}, llmtest.Code(`"three"`), llmtest.Code(`3`))
	if err != nil {
		t.Fatal(err)
	}
	if st.Return != int64(3) {
		t.Fatalf("return %v", st.Return)
	}
	if fb := lastUser(m.Requests()[1]); !strings.Contains(fb, retryTurnNote) {
		t.Fatalf("feedback:\n%s", fb)
	}
}

// retry_turns and memory_strategy travel in the agent spec.
func TestLoopOptionsWire(t *testing.T) {
	s := Spec{Prompt: "p", Limits: Limits{RetryTurns: 2}, MemoryStrategy: MemoryRollback}
	w := s.ToWire()
	if w.RetryTurns != 2 || w.MemoryStrategy != messages.MemoryRollback {
		t.Fatalf("wire %+v", w)
	}
	back, err := FromWire(w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if back.RetryTurns != 2 || back.MemoryStrategy != MemoryRollback {
		t.Fatalf("back %+v", back)
	}
	_, err = New(Spec{Prompt: "p", MemoryStrategy: "undo"})
	wantSpecError(t, err, "memory_strategy", `unknown memory strategy "undo"`)
}

// The strict strategy (the default) keeps what a program stored when its
// return fails validation, and fails the run when memory passes the
// limit; rollback leaves memory as before the turn in both cases and
// feeds the limit back as the turn's error.
func TestMemoryStrategies(t *testing.T) {
	replies := func() []llmtest.Reply {
		return []llmtest.Reply{
			llmtest.Code(`(def kept 1)`),
			llmtest.Code(`(def half 2) (return {:n "bad"})`),
			llmtest.Code(`(def big (apply str (repeat 400 "x")))`),
			llmtest.Code(`(return {:n (+ kept (or (memory/get "half") 0) (count (or (memory/get "big") "")))})`),
		}
	}
	for _, strategy := range []string{"", MemoryStrict, MemoryRollback} {
		t.Run("strategy="+strategy, func(t *testing.T) {
			a := mustNew(t, Spec{Prompt: "Count", Signature: "{n :int}", MemoryStrategy: strategy, Limits: Limits{MemoryLimit: 200}})
			m := llmtest.New(replies()...)
			st, err, _ := run(t, a, RunOptions{Model: m})
			reqs := m.Requests()
			if strategy != MemoryRollback {
				wantReason(t, st, err, ReasonMemoryLimit)
				if len(reqs) != 3 {
					t.Fatalf("%d requests", len(reqs))
				}
				// the failed return kept half
				if !strings.Contains(lastUser(reqs[2]), "Return type validation failed") || st.Memory["half"] != int64(2) {
					t.Fatalf("memory %v, feedback:\n%s", st.Memory, lastUser(reqs[2]))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// kept only: half rolled back with the failed return, big
			// with the turn that passed the limit
			if st.Return.(map[string]any)["n"] != int64(1) {
				t.Fatalf("return %v, memory %v", st.Return, st.Memory)
			}
			fb := lastUser(reqs[3])
			if !strings.Contains(fb, "memory limit exceeded") || !strings.Contains(fb, "Memory is as it was before this program") {
				t.Fatalf("feedback after the limit:\n%s", fb)
			}
			if _, ok := st.Memory["half"]; ok {
				t.Fatalf("memory %v keeps what a failed turn stored", st.Memory)
			}
		})
	}
}
