package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

func TestTurnFeedbackExact(t *testing.T) {
	search := FuncSig("(limit :int) -> [{id :int, _body :string}]", func(_ context.Context, args map[string]any) (any, error) {
		var out []any
		for i := int64(1); i <= args["limit"].(int64); i++ {
			out = append(out, map[string]any{"id": i, "_body": "secret body"})
		}
		return out, nil
	})
	a := mustNew(t, Spec{Prompt: "Find", Signature: "{n :int}", Tools: map[string]Tool{"search": search}})
	st, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(println "looking" 42)
{:results (tool/search {:limit "8"})}`),
		llmtest.Code(`(return {:n (count ctx/results)})`),
	)
	if err != nil {
		t.Fatal(err)
	}
	want := `Output:
looking 42
Result: {:results [{"_body" <Firewalled> "id" 1} {"_body" <Firewalled> "id" 2} {"_body" <Firewalled> "id" 3} {"_body" <Firewalled> "id" 4} {"_body" <Firewalled> "id" 5} ...]}
3 more items omitted. Full data available in ctx/results
Memory: results
Warnings:
- search: limit: coerced string "8" to integer
Turn 2 of 5 (3 remaining)`
	got := lastUser(m.Requests()[1])
	if got != want {
		t.Fatalf("feedback:\n%s\n--- want:\n%s", got, want)
	}
	if st.Return.(map[string]any)["n"] != int64(8) {
		t.Fatalf("return %v", st.Return)
	}
	if st.Trace[0].Feedback != want {
		t.Fatal("trace does not keep the feedback")
	}
	if len(st.Warnings) != 1 {
		t.Fatalf("warnings %v", st.Warnings)
	}
}

func TestTurnLines(t *testing.T) {
	tests := []struct {
		next, max int
		want      string
	}{
		{2, 5, "Turn 2 of 5 (3 remaining)"},
		{3, 5, "Turn 3 of 5 (2 remaining)"},
		{5, 5, "Turn 5 of 5 (0 remaining)\nThis is your last turn: your program must call (return ...) or (fail ...)."},
	}
	for _, tc := range tests {
		if got := turnLine(tc.next, tc.max); got != tc.want {
			t.Errorf("turnLine(%d, %d) = %q, want %q", tc.next, tc.max, got, tc.want)
		}
	}
}

func TestErrorFeedbackAndCtxFail(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Signature: ":int"})
	st, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(println "before")
(+ 1 (fitler 2))`),
		llmtest.Code(`(println "before")
(/ 1 (- 2 2))`),
		llmtest.Code(`(if ctx/fail (return (count (:message ctx/fail))) (return 0))`),
	)
	if err != nil {
		t.Fatal(err)
	}
	fb := lastUser(m.Requests()[1])
	want := "Error: 2:7: undefined symbol: fitler\n  (+ 1 (fitler 2))\n        ^\nHint: did you mean filter\nTurn 2 of 5 (3 remaining)"
	if fb != want {
		t.Fatalf("feedback:\n%q\nwant\n%q", fb, want)
	}
	fb = lastUser(m.Requests()[2])
	if !strings.HasPrefix(fb, "Output:\nbefore\nError: 2:1: division by zero") || !strings.HasSuffix(fb, "\nTurn 3 of 5 (2 remaining)") {
		t.Fatalf("feedback with prints:\n%s", fb)
	}
	if st.Return.(int64) == 0 {
		t.Fatal("ctx/fail was not set for the next program")
	}
	if st.Trace[0].Error == "" || st.Trace[1].Error == "" || st.Trace[2].Error != "" {
		t.Fatalf("trace errors: %q %q", st.Trace[0].Error, st.Trace[2].Error)
	}
}

func TestCtxFailClearedAfterSuccess(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x"})
	st, err, _ := run(t, a, RunOptions{},
		llmtest.Code(`(/ 1 0)`),
		llmtest.Code(`(:reason ctx/fail)`),
		llmtest.Code(`(return (nil? ctx/fail))`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if st.Trace[1].Result != "arithmetic_error" || st.Return != true {
		t.Fatalf("turn 2 saw %v, final %v", st.Trace[1].Result, st.Return)
	}
}

func TestReturnValidationRetry(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Signature: "{count :int, items [{id :int}]}"})
	st, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(return {:count "3" :items [{:id 1} {:id "x"}]})`),
		llmtest.Code(`(return {:count 3 :items [{:id 1}]})`),
	)
	if err != nil {
		t.Fatal(err)
	}
	fb := lastUser(m.Requests()[1])
	want := "Error: Return type validation failed:\n- count: expected integer, got string \"3\"\n- items[1].id: expected integer, got string \"x\"\nExpected: {count :int, items [{id :int}]}\nTurn 2 of 5 (3 remaining)"
	if fb != want {
		t.Fatalf("feedback:\n%s\nwant:\n%s", fb, want)
	}
	if st.Usage.Turns != 2 {
		t.Fatalf("turns %d", st.Usage.Turns)
	}
}

func TestValidationModes(t *testing.T) {
	tests := []struct {
		mode    signature.Mode
		wantOK  bool
		warning bool
	}{
		{signature.Enabled, false, false},
		{signature.Strict, false, false},
		{signature.WarnOnly, true, true},
		{signature.Disabled, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.mode.String(), func(t *testing.T) {
			a := mustNew(t, Spec{Prompt: "x", Signature: "{n :int}", Limits: Limits{MaxTurns: 2}, Validation: tc.mode})
			src := `(return {:n "one"})`
			if tc.mode == signature.Strict {
				src = `(return {:n 1 :extra 2})`
			}
			replies := []llmtest.Reply{llmtest.Code(src)}
			if !tc.wantOK {
				replies = append(replies, llmtest.Code(`(return {:n 1})`))
			}
			st, err, _ := run(t, a, RunOptions{}, replies...)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantOK != (st.Usage.Turns == 1) {
				t.Fatalf("turns %d", st.Usage.Turns)
			}
			if tc.warning != (len(st.Warnings) > 0) {
				t.Fatalf("warnings %v", st.Warnings)
			}
		})
	}
}

func TestProgramFail(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Signature: "{n :int}"})
	st, err, _ := run(t, a, RunOptions{},
		llmtest.Code(`(fail {:reason :not_found :message "User 123 does not exist" :op "get_user" :details {:id 123}})`))
	wantReason(t, st, err, "not_found")
	f := st.Fail
	if f.Message != "User 123 does not exist" || f.Op != "get_user" || f.Details["id"] != int64(123) {
		t.Fatalf("fail %+v", f)
	}
	// call form and string form
	st, err, _ = run(t, a, RunOptions{}, llmtest.Code(`(call "fail" "gave up")`))
	wantReason(t, st, err, "failed")
	if st.Fail.Message != "gave up" {
		t.Fatalf("message %q", st.Fail.Message)
	}
}

func TestCallReturnForm(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Signature: "{n :int}"})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Code(`(call "return" {:n 2.0})`).WithUsage(10, 5))
	if err == nil {
		t.Fatalf("float for :int accepted: %v", st.Return)
	}
	st, err, _ = run(t, a, RunOptions{}, llmtest.Code(`(call "return" {:n 2})`))
	if err != nil || st.Return.(map[string]any)["n"] != int64(2) {
		t.Fatalf("%v %v", st.Return, err)
	}
}

func TestModes(t *testing.T) {
	t.Run("single turn value", func(t *testing.T) {
		a := mustNew(t, Spec{Prompt: "{{x}} + {{y}}", Signature: "(x :int, y :int) -> :int", Limits: Limits{MaxTurns: 1}})
		st, err, m := run(t, a, RunOptions{Context: map[string]any{"x": int64(10), "y": int64(5)}}, llmtest.Code(`(+ ctx/x ctx/y)`))
		if err != nil || st.Return != int64(15) {
			t.Fatalf("%v %v", st.Return, err)
		}
		req := m.Requests()[0]
		contains(t, req.System, "The value of its last expression is your answer")
		contains(t, lastUser(req), "## Mission\n10 + 5", "The value of your program, of type :int.")
		notContains(t, lastUser(req), "Return a value", "Turn 1 of")
		notContains(t, req.System, "(return v)", "keeps x for later turns")
	})
	t.Run("single turn error is fatal", func(t *testing.T) {
		a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 1}})
		st, err, _ := run(t, a, RunOptions{}, llmtest.Code(`(+ 1`))
		wantReason(t, st, err, "parse_error")
		contains(t, st.Fail.Message, "unbalanced parentheses")
	})
	t.Run("single turn validation is fatal", func(t *testing.T) {
		a := mustNew(t, Spec{Prompt: "x", Signature: ":int", Limits: Limits{MaxTurns: 1}})
		st, err, _ := run(t, a, RunOptions{}, llmtest.Code(`"nope"`))
		wantReason(t, st, err, ReasonValidation)
	})
	t.Run("single turn no code", func(t *testing.T) {
		a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 1}})
		st, err, _ := run(t, a, RunOptions{}, llmtest.Text("I think it is 4."))
		wantReason(t, st, err, ReasonNoCode)
	})
	t.Run("max_turns 1 with tools needs return", func(t *testing.T) {
		a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 1}, Tools: map[string]Tool{"t": Func(noop)}})
		st, err, _ := run(t, a, RunOptions{}, llmtest.Code(`42`))
		wantReason(t, st, err, ReasonMaxTurns)
		st, err, _ = run(t, a, RunOptions{}, llmtest.Code(`(return 42)`))
		if err != nil || st.Return != int64(42) {
			t.Fatal(err)
		}
	})
	t.Run("multi turn value does not end", func(t *testing.T) {
		a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 2}})
		st, err, _ := run(t, a, RunOptions{}, llmtest.Code(`42`), llmtest.Code(`43`))
		wantReason(t, st, err, ReasonMaxTurns)
		if st.Fail.Message != "no return or fail after 2 turns" {
			t.Fatal(st.Fail.Message)
		}
	})
}

func TestMemoryResultContract(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Signature: "{row_count :int, columns [:string]}"})
	data := []any{map[string]any{"a": int64(1), "b": int64(2)}, map[string]any{"a": int64(3), "b": int64(4)}}
	st, err, m := run(t, a, RunOptions{Context: map[string]any{"data": data}},
		llmtest.Code(`{:row-count (count ctx/data) :sample (count ctx/data)}`),
		llmtest.Code(`{:columns ["a" "b"] :return "found columns"}`),
		llmtest.Code(`(return {:row_count memory/row-count :columns memory/columns})`),
	)
	if err != nil {
		t.Fatal(err)
	}
	fb2 := lastUser(m.Requests()[2])
	if !strings.HasPrefix(fb2, "Result: \"found columns\"\nMemory: columns, row-count, sample\n") {
		t.Fatalf("turn 2 feedback:\n%s", fb2)
	}
	if st.Return.(map[string]any)["row_count"] != int64(2) {
		t.Fatalf("return %v", st.Return)
	}
	if _, ok := st.Memory["columns"]; !ok {
		t.Fatalf("memory %v", st.Memory)
	}
}

func TestMemoryLimit(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MemoryLimit: 100}})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Code(`(def big (apply str (repeat 200 "x")))`))
	wantReason(t, st, err, ReasonMemoryLimit)
	if !errors.Is(err, ErrMemoryLimit) {
		t.Fatal("errors.Is ErrMemoryLimit")
	}
	contains(t, st.Fail.Message, "memory limit exceeded:", "> 100 bytes")
}

// TestMemoryKeepsHostData: keeping the host's data in memory keeps a
// reference; the printed-size memory limit counts it by name only.
func TestMemoryKeepsHostData(t *testing.T) {
	rows := make([]any, 5000)
	for i := range rows {
		rows[i] = map[string]any{"id": int64(i), "text": "some text that makes the rows print large"}
	}
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MemoryLimit: 1000, MaxTurns: 2}})
	st, err, _ := run(t, a, RunOptions{Context: map[string]any{"rows": rows}},
		llmtest.Code(`(def kept ctx/rows)`),
		llmtest.Code(`(return (count kept))`))
	if err != nil || st.Return != int64(5000) {
		t.Fatalf("return %v, err %v", st.Return, err)
	}
	// data the program built still counts
	st, err, _ = run(t, a, RunOptions{Context: map[string]any{"rows": rows}},
		llmtest.Code(`(def built (mapv :id ctx/rows))`))
	wantReason(t, st, err, ReasonMemoryLimit)
}

func TestBoundaryReminder(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 3}})
	st, err, m := run(t, a, RunOptions{},
		llmtest.Text("Let me think about this."),
		llmtest.Text("\u200b\u00a0(return \u201cdone\u201d)"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := lastUser(m.Requests()[1]); got != BoundaryReminder+"\nTurn 2 of 3 (1 remaining)" {
		t.Fatalf("reminder %q", got)
	}
	if st.Return != "done" {
		t.Fatalf("return %v", st.Return)
	}
	// no code in the last turn → max_turns_exceeded with the last error
	st, err, _ = run(t, mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 2}}), RunOptions{}, llmtest.Text("a"), llmtest.Text("b"))
	wantReason(t, st, err, ReasonMaxTurns)
	if st.Fail.Details["last_error"] == nil {
		t.Fatalf("details %v", st.Fail.Details)
	}
}

func TestBoundaryReminderPlainCode(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 2}})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Text("reasoning first\n(return 1)"), llmtest.Text("(return 2)"))
	if err != nil || st.Return != int64(2) || st.Usage.Turns != 2 {
		t.Fatalf("%v %v", st.Return, err)
	}
}

func TestMultipleBlocksRunAsDo(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x"})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Text("First:\n```clojure\n(def a 2)\n```\nthen:\n```lisp\n(return (* a 21))\n```"))
	if err != nil || st.Return != int64(42) {
		t.Fatalf("%v %v", st.Return, err)
	}
}

func TestMaxTurnsExceeded(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 3}})
	st, err, m := run(t, a, RunOptions{}, llmtest.Code(`1`), llmtest.Code(`(/ 1 0)`), llmtest.Code(`3`))
	wantReason(t, st, err, ReasonMaxTurns)
	if !errors.Is(err, ErrMaxTurns) || st.Usage.Turns != 3 || m.Calls() != 3 {
		t.Fatalf("turns %d calls %d", st.Usage.Turns, m.Calls())
	}
	contains(t, lastUser(m.Requests()[2]), "Turn 3 of 3 (0 remaining)\nThis is your last turn")
}

func TestMissionTimeout(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MissionTimeout: 30 * time.Millisecond}, LLMRetry: &llm.RetryPolicy{MaxAttempts: 1}})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Hang())
	wantReason(t, st, err, ReasonMissionTimeout)
	// during a tool call
	slow := Func(func(ctx context.Context, _ map[string]any) (any, error) {
		time.Sleep(60 * time.Millisecond)
		return 1, nil
	})
	a = mustNew(t, Spec{Prompt: "x", Limits: Limits{MissionTimeout: 40 * time.Millisecond}, Tools: map[string]Tool{"slow": slow}})
	st, err, _ = run(t, a, RunOptions{}, llmtest.Code(`(tool/slow {})`))
	wantReason(t, st, err, ReasonMissionTimeout)
}

func TestProgramTimeout(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{ProgramTimeout: 200 * time.Millisecond, MaxTurns: 2}})
	st, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(loop [i 0] (recur (inc i)))`),
		llmtest.Code(`(return (:reason ctx/fail))`))
	if err != nil {
		t.Fatal(err)
	}
	if st.Return != "timeout" {
		t.Fatalf("return %v", st.Return)
	}
	contains(t, lastUser(m.Requests()[1]), "Error: ", "Turn 2 of 2")
}

func TestLLMTimeoutUsesRetries(t *testing.T) {
	var slept []time.Duration
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{LLMTimeout: 100 * time.Millisecond}, LLMRetry: &llm.RetryPolicy{
		MaxAttempts: 3, BaseDelay: time.Millisecond, Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil },
		Jitter: func(d time.Duration) time.Duration { return d },
	}})
	st, err, m := run(t, a, RunOptions{}, llmtest.Hang(), llmtest.Code(`(return 1)`))
	if err != nil {
		t.Fatal(err)
	}
	if st.Usage.Turns != 1 || st.Usage.Requests != 2 || m.Calls() != 2 || len(slept) != 1 {
		t.Fatalf("turns %d requests %d sleeps %v", st.Usage.Turns, st.Usage.Requests, slept)
	}
}

func TestLLMRetryBackoff(t *testing.T) {
	rate := &llm.ProviderError{Provider: "x", StatusCode: 429, Retryable: true, Message: "slow down"}
	server := &llm.ProviderError{Provider: "x", StatusCode: 503, Retryable: true, Message: "down"}
	tests := []struct {
		name      string
		backoff   llm.Backoff
		classes   []llm.ErrorClass
		errs      []error
		wantSleep []time.Duration
		wantOK    bool
	}{
		{"exponential", llm.BackoffExponential, nil, []error{rate, server}, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, true},
		{"linear", llm.BackoffLinear, nil, []error{rate, rate}, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, true},
		{"constant", llm.BackoffConstant, nil, []error{rate, rate}, []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}, true},
		{"exhausted", llm.BackoffConstant, nil, []error{rate, rate, rate}, []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}, false},
		{"class filter", llm.BackoffConstant, []llm.ErrorClass{llm.ClassRateLimit}, []error{server}, nil, false},
		{"logic error not retried", llm.BackoffConstant, nil, []error{errors.New("bad request")}, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var slept []time.Duration
			a := mustNew(t, Spec{Prompt: "x", LLMRetry: &llm.RetryPolicy{MaxAttempts: 3, Backoff: tc.backoff, BaseDelay: 10 * time.Millisecond,
				Retryable: tc.classes, Jitter: func(d time.Duration) time.Duration { return d },
				Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}})
			var replies []llmtest.Reply
			for _, e := range tc.errs {
				replies = append(replies, llmtest.Error(e))
			}
			if tc.wantOK {
				replies = append(replies, llmtest.Code(`(return :ok)`))
			}
			st, err, _ := run(t, a, RunOptions{}, replies...)
			if tc.wantOK != (err == nil) {
				t.Fatalf("err %v", err)
			}
			if !tc.wantOK {
				wantReason(t, st, err, ReasonLLMError)
			}
			if fmt.Sprint(slept) != fmt.Sprint(tc.wantSleep) {
				t.Fatalf("sleeps %v, want %v", slept, tc.wantSleep)
			}
			if st.Usage.Turns > 1 {
				t.Fatal("retries used turns")
			}
		})
	}
}

func TestChainedFailure(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x"})
	failed := &messages.Step{Fail: &messages.Fail{Reason: "not_found", Message: "nothing", Details: map[string]any{"q": "a"}}}
	st, err, m := run(t, a, RunOptions{Context: failed})
	wantReason(t, st, err, ReasonChainedFailure)
	if m.Calls() != 0 {
		t.Fatal("the LLM was called")
	}
	up := st.Fail.Details["upstream"].(map[string]any)
	if up["reason"] != "not_found" || up["message"] != "nothing" {
		t.Fatalf("upstream %v", up)
	}
	// Then with a failed step, and with a nil step
	st, err = Then(bg, failed, a, RunOptions{Model: llmtest.New()})
	wantReason(t, st, err, ReasonChainedFailure)
	st, err = Then(bg, nil, a, RunOptions{Model: llmtest.New()})
	wantReason(t, st, err, ReasonChainedFailure)
}

func TestStepContext(t *testing.T) {
	prev := &messages.Step{Return: map[string]any{"count": int64(2), "_ids": []any{int64(7), int64(9)}}, Signature: "() -> {count :int, _ids [:int]}"}
	a := mustNew(t, Spec{Prompt: "Draft replies for these {{count}} emails"})
	st, err, m := run(t, a, RunOptions{Context: prev}, llmtest.Code(`(return (get ctx/_ids 0))`))
	if err != nil || st.Return != int64(7) {
		t.Fatalf("%v %v", st.Return, err)
	}
	u := lastUser(m.Requests()[0])
	contains(t, u, "- ctx/_ids [:int] (firewalled: usable in programs, value hidden)", "- ctx/count :int = 2", "Draft replies for these 2 emails")
	notContains(t, u, "7", "9")
	// a non-map return is ctx/value
	st, err, _ = run(t, a, RunOptions{Context: &messages.Step{Return: int64(5)}}, llmtest.Code(`(return (* 2 ctx/value))`))
	if err != nil || st.Return != int64(10) {
		t.Fatalf("%v %v", st.Return, err)
	}
	// bad context type
	st, err, _ = run(t, a, RunOptions{Context: 42})
	wantReason(t, st, err, "invalid_context")
}

func TestThenChain(t *testing.T) {
	finder := mustNew(t, Spec{Prompt: "find", Signature: "{ids [:int]}"})
	counter := mustNew(t, Spec{Prompt: "count", Signature: "(ids [:int]) -> :int"})
	m := llmtest.NewT(t, llmtest.Code(`(return {:ids [1 2 3]})`), llmtest.Code(`(return (count ctx/ids))`))
	st, _ := finder.Run(bg, RunOptions{Model: m})
	st, err := Then(bg, st, counter, RunOptions{Model: m})
	if err != nil || st.Return != int64(3) {
		t.Fatalf("%v %v", st.Return, err)
	}
}

func TestInputValidation(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Signature: "(id :int) -> :int"})
	st, err, _ := run(t, a, RunOptions{Context: map[string]any{"id": "abc"}})
	wantReason(t, st, err, ReasonInputValidation)
	contains(t, st.Fail.Message, `id: expected integer, got string "abc"`)
}

func TestRunPrompt(t *testing.T) {
	m := llmtest.NewT(t, llmtest.Code(`(return (str "hi " ctx/name))`))
	st, err := RunPrompt(bg, "Greet {{name}}", Spec{Signature: "(name :string) -> :string"}, RunOptions{Model: m, Context: map[string]any{"name": "bob"}})
	if err != nil || st.Return != "hi bob" {
		t.Fatalf("%v %v", st.Return, err)
	}
	st, err = RunPrompt(bg, "Greet {{nobody}}", Spec{Signature: "(name :string) -> :string"}, RunOptions{Model: m})
	if err == nil || st.Fail.Reason != ReasonInvalidAgent {
		t.Fatalf("%v", err)
	}
}

func TestCanceled(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", LLMRetry: &llm.RetryPolicy{MaxAttempts: 1}})
	ctx, cancel := context.WithCancel(bg)
	m := llmtest.New(llmtest.Respond(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	st, err := a.Run(ctx, RunOptions{Model: m})
	wantReason(t, st, err, ReasonCanceled)
}

func TestUsageAndTrace(t *testing.T) {
	tool := Func(func(context.Context, map[string]any) (any, error) { return "r", nil })
	a := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"t": tool}})
	st, err, _ := run(t, a, RunOptions{},
		llmtest.Code(`(tool/t {:a 1})`).WithUsage(100, 10),
		llmtest.Code(`(do (tool/t {}) (tool/t {}) (return 1))`).WithUsage(150, 20))
	if err != nil {
		t.Fatal(err)
	}
	u := st.Usage
	if u.InputTokens != 250 || u.OutputTokens != 30 || u.TotalTokens != 280 || u.Requests != 2 || u.Turns != 2 || u.ToolCalls != 3 || u.Duration <= 0 {
		t.Fatalf("usage %+v", u)
	}
	tr := st.Trace
	if len(tr) != 2 || tr[0].Program != `(tool/t {:a 1})` || tr[0].Result != "r" || len(tr[0].ToolCalls) != 1 ||
		tr[0].ToolCalls[0].Args["a"] != int64(1) || tr[0].ToolCalls[0].Result != "r" || tr[0].Raw == "" || tr[1].Usage.InputTokens != 150 {
		t.Fatalf("trace %+v", tr)
	}
	if tr[0].Messages != nil || tr[0].Memory != nil {
		t.Fatal("debug data without debug")
	}
}

func TestTraceModes(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 1}})
	for _, tc := range []struct {
		mode      TraceMode
		src       string
		wantTrace bool
	}{
		{TraceOn, "1", true}, {TraceOnError, "1", false}, {TraceOnError, "(+ 1", true}, {TraceOff, "(+ 1", false},
	} {
		st, _, _ := run(t, a, RunOptions{Trace: tc.mode}, llmtest.Code(tc.src))
		if (len(st.Trace) > 0) != tc.wantTrace {
			t.Errorf("mode %d src %s: trace %v", tc.mode, tc.src, st.Trace)
		}
	}
}

func TestDebugMode(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x"})
	st, err, _ := run(t, a, RunOptions{Debug: true}, llmtest.Code(`(def k 1)`), llmtest.Code(`(return k)`))
	if err != nil {
		t.Fatal(err)
	}
	t0 := st.Trace[0]
	if len(t0.Messages) != 2 || t0.Messages[0].Role != "system" || t0.Memory["k"] != int64(1) {
		t.Fatalf("debug trace %+v", t0)
	}
	if len(st.Trace[1].Messages) != 4 {
		t.Fatalf("turn 2 messages %d", len(st.Trace[1].Messages))
	}
}

func TestSystemPromptStaticAcrossTurns(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 3}})
	_, _, m := run(t, a, RunOptions{}, llmtest.Code(`1`), llmtest.Code(`(/ 1 0)`), llmtest.Code(`(return 1)`))
	rs := m.Requests()
	if rs[0].System != rs[1].System || rs[1].System != rs[2].System || !rs[0].CacheSystem {
		t.Fatal("system prompt changed across turns")
	}
}

func TestLLMRequestFields(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Hi {{n}}", LLMOpts: map[string]any{"temperature": 0.5, "top_p": 0.9},
		Tools: map[string]Tool{"b": Func(noop), "a": Func(noop)}})
	_, _, m := run(t, a, RunOptions{Context: map[string]any{"n": "x"}, LLMOpts: map[string]any{"temperature": 0.1}}, llmtest.Code(`(return 1)`))
	r := m.Requests()[0]
	if r.Turn != 1 || r.Prompt != "Hi x" || fmt.Sprint(r.ToolNames) != "[a b]" || r.Opts["temperature"] != 0.1 || r.Opts["top_p"] != 0.9 {
		t.Fatalf("request %+v", r)
	}
}

func TestPromptLimitTruncation(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{PromptLimit: PromptLimit{List: 2, String: 10}}})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Code(`{:xs [1 2 3 4 5] :s "abcdefghijklmnopqrstuvwxyz"}`),
		llmtest.Code(`(return (count xs))`))
	if err != nil {
		t.Fatal(err)
	}
	fb := lastUser(m.Requests()[1])
	contains(t, fb, `Result: {:s "abcdefghij..." :xs [1 2 ...]}`, "3 more items omitted. Full data available in ctx/xs\n")
	// defaults: 5 items
	a = mustNew(t, Spec{Prompt: "x"})
	_, err, m = run(t, a, RunOptions{}, llmtest.Code(`(range 12)`), llmtest.Code(`(return 1)`))
	if err != nil {
		t.Fatal(err)
	}
	contains(t, lastUser(m.Requests()[1]), "Result: [0 1 2 3 4 ...] ... (7 more items omitted)\nOnly a preview is shown and the value is not kept;")
}

func TestStepRoundTripsMsgpack(t *testing.T) {
	child := mustNew(t, Spec{Name: "c", Prompt: "c"})
	a := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"c": child.AsTool(ToolOptions{}),
		"typed": Typed(func(_ context.Context, a getUserArgs) (user, error) { return user{ID: a.ID, Name: "n"}, nil })}})
	st, err, _ := run(t, a, RunOptions{Debug: true},
		llmtest.Code(`{:u (tool/typed {:id 1}) :k (tool/c {})}`), llmtest.Code(`(return {:k 1})`), llmtest.Code(`(return {:ok k})`))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := messages.MarshalStep(st)
	if err != nil {
		t.Fatal(err)
	}
	back, err := messages.UnmarshalStep(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	if back.Trace[0].ToolCalls[1].Child == nil && back.Trace[0].ToolCalls[0].Child == nil {
		t.Fatal("child step lost")
	}
	if fmt.Sprint(back.Return) != fmt.Sprint(st.Return) || back.Usage.Turns != st.Usage.Turns {
		t.Fatalf("%v vs %v", back.Return, st.Return)
	}
}

// A program's time does not depend on how long the model took to answer:
// the model's 300 ms exceed the program's 200 ms, and the program (100 ms
// in a tool) still runs to its end.
func TestProgramBudgetIndependentOfModel(t *testing.T) {
	slow := Func(func(ctx context.Context, _ map[string]any) (any, error) {
		time.Sleep(100 * time.Millisecond)
		return int64(7), nil
	})
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{ProgramTimeout: 200 * time.Millisecond}, Tools: map[string]Tool{"slow": slow}})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Respond(func(ctx context.Context, _ llm.Request) (*llm.Response, error) {
		time.Sleep(300 * time.Millisecond)
		return &llm.Response{Content: "```clojure\n(return (tool/slow {}))\n```"}, nil
	}))
	if err != nil || st.Return != int64(7) {
		t.Fatalf("step %+v, err %v", st, err)
	}
}

// max_steps bounds one program run; the error is fed back like any other.
func TestMaxSteps(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxSteps: 10_000, MaxTurns: 2}})
	st, err, _ := run(t, a, RunOptions{},
		llmtest.Code(`(reduce + (range 100000))`),
		llmtest.Code(`(return (:reason ctx/fail))`))
	if err != nil || st.Return != "step_limit" {
		t.Fatalf("return %v, err %v", st.Return, err)
	}
}

// Negative limits are unlimited: more turns than the default, a memory
// larger than the default limit, no LLM, program or mission timeout.
func TestNegativeLimitsAreUnlimited(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: -1, TurnBudget: -1, MemoryLimit: -1, LLMTimeout: -1, ProgramTimeout: -1, MissionTimeout: -1, MaxSteps: -1}})
	if s := a.Spec(); s.MaxTurns != -1 || s.LLMTimeout != -1 || s.MemoryLimit != -1 {
		t.Fatalf("Spec() = %+v, want the negative limits kept", s)
	}
	var replies []llmtest.Reply
	for range messages.DefaultMaxTurns + 2 {
		replies = append(replies, llmtest.Code(`(def big (apply str (repeat 1500 (apply str (repeat 1000 "x")))))`))
	}
	replies = append(replies, llmtest.Code(`(return (count big))`))
	st, err, _ := run(t, a, RunOptions{}, replies...)
	if err != nil || st.Return != int64(1500000) || st.Usage.Turns != messages.DefaultMaxTurns+3 {
		t.Fatalf("return %v, turns %d, err %v", st.Return, st.Usage.Turns, err)
	}
}

// The memory result contract is stated in the language notes (in short in
// the default reference, with an example in the full one), and the example
// is what a run does.
func TestMemoryContractNoteIsTrue(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Inspect"})
	contains(t, languageReference(a, refFull), memoryContractNote)
	accts := []any{map[string]any{"id": int64(1), "name": "a"}}
	_, err, m := run(t, a, RunOptions{Context: map[string]any{"accounts": accts}},
		llmtest.Code(`{:return (first ctx/accounts)}`).Expect(llmtest.SystemContains(compactMemoryNote)),
		llmtest.Code(`(first ctx/accounts)`).Expect(llmtest.LastUserContains(`Result: {"id" 1 "name" "a"}`)),
		llmtest.Code(`(return 1)`).Expect(llmtest.LastUserContains("Memory: id, name")),
	)
	if err != nil {
		t.Fatal(err)
	}
	notContains(t, lastUser(m.Requests()[1]), "Memory:")
}

// A model call that fails for good after a failed turn reports that turn's
// error as the likely cause.
func TestLLMErrorCarriesPreviousError(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", LLMRetry: &llm.RetryPolicy{MaxAttempts: 1}})
	st, err, _ := run(t, a, RunOptions{},
		llmtest.Code(`(tool/nope {})`),
		llmtest.Error(errors.New("model gone")))
	wantReason(t, st, err, ReasonLLMError)
	if !strings.Contains(st.Fail.Message, "model gone; the turn before failed: ") || !strings.Contains(st.Fail.Message, "nope") ||
		st.Fail.Details["last_error"] == nil {
		t.Fatalf("fail = %+v", st.Fail)
	}
}

// The error of a run whose model call failed for good wraps the call's
// error, in either mode, so a caller can tell its own failures (a fleet's
// store that could not be read) from the model's.
func TestLLMErrorWrapsTheCallsError(t *testing.T) {
	ours := errors.New("the caller's store is unavailable")
	for _, text := range []bool{false, true} {
		spec := Spec{Prompt: "x", LLMRetry: &llm.RetryPolicy{MaxAttempts: 1}}
		var a *Agent
		if text {
			a = mustText(t, spec)
		} else {
			a = mustNew(t, spec)
		}
		st, err, _ := run(t, a, RunOptions{}, llmtest.Error(fmt.Errorf("reserve: %w", ours)))
		wantReason(t, st, err, ReasonLLMError)
		if !errors.Is(err, ours) {
			t.Errorf("text mode %v: err = %v, want it to wrap the model call's error", text, err)
		}
	}
}

// A turn ending with a map of data (string keys) is merged into memory key
// by key; the feedback says so in one line, with the keys. A map of
// keywords ({:results ...}) is the usual way to keep results: no note.
func TestFeedbackSaysADataMapWasMergedIntoMemory(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Tiers", Signature: "{n :int}"})
	_, err, m := run(t, a, RunOptions{Context: map[string]any{"custs": []any{map[string]any{"tier": "pro"}, map[string]any{"tier": "free"}, map[string]any{"tier": "pro"}}}},
		llmtest.Code(`(frequencies (map :tier ctx/custs))`),
		llmtest.Code(`{:kept 1}`),
		llmtest.Code(`(return {:n 1})`),
	)
	if err != nil {
		t.Fatal(err)
	}
	fb := lastUser(m.Requests()[1])
	if !strings.Contains(fb, "Memory: free, pro\n"+MapMemoryNote([]string{"free", "pro"})+"\n") {
		t.Errorf("feedback after a data map:\n%s", fb)
	}
	if fb := lastUser(m.Requests()[2]); strings.Contains(fb, "merged into memory key by key") {
		t.Errorf("feedback after {:kept 1} carries the note:\n%s", fb)
	}
}
