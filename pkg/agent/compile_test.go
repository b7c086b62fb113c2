package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/signature"
)

const scorerSig = "(report {severity :int, text :string}) -> {score :float, reason :string}"

// scorerProgram is a correct function for scorerSig using the threshold
// tool.
const scorerProgram = `(fn [{:keys [report]}]
  (let [t (tool/threshold {:kind "default"})]
    {:score (/ (:severity report) 10.0)
     :reason (if (> (:severity report) t) "high" "low")}))`

// thresholdTool counts its calls.
func thresholdTool(calls *atomic.Int64) Tool {
	return FuncSig("(kind :string) -> :int", func(_ context.Context, args map[string]any) (any, error) {
		calls.Add(1)
		if args["kind"] != "default" {
			return nil, fmt.Errorf("unknown kind %v", args["kind"])
		}
		return int64(5), nil
	}).WithDescription("Severity threshold for a report kind")
}

func scorerAgent(t testing.TB, calls *atomic.Int64) *Agent {
	t.Helper()
	return mustNew(t, Spec{
		Name:        "scorer",
		Description: "Scores a report",
		Prompt:      "Score the report {{report}}: severity over the threshold is high.",
		Signature:   scorerSig,
		Tools:       map[string]Tool{"threshold": thresholdTool(calls)},
	})
}

func report(sev int64, text string) map[string]any {
	return map[string]any{"report": map[string]any{"severity": sev, "text": text}}
}

func cmpSamples() []map[string]any {
	return []map[string]any{report(7, "disk full"), report(2, "slow query")}
}

func TestCompileFirstTry(t *testing.T) {
	var calls atomic.Int64
	a := scorerAgent(t, &calls)
	m := llmtest.NewT(t, llmtest.Code(scorerProgram).WithUsage(100, 20))
	c, err := Compile(bg, a, CompileOptions{Model: m, Samples: cmpSamples()})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if c.Source != scorerProgram {
		t.Fatalf("source = %q", c.Source)
	}
	if c.Signature != signature.MustParse(scorerSig).String() || c.Name != "scorer" || c.Description != "Scores a report" {
		t.Fatalf("signature/name/description = %q %q %q", c.Signature, c.Name, c.Description)
	}
	md := c.Metadata
	if md.Turns != 1 || md.InputTokens != 100 || md.OutputTokens != 20 || md.TotalTokens != 120 || md.Requests != 1 {
		t.Fatalf("metadata = %+v", md)
	}
	if md.Model != llmtest.ModelName || md.CompiledAt.IsZero() || time.Since(md.CompiledAt) > time.Minute {
		t.Fatalf("metadata model/time = %q %v", md.Model, md.CompiledAt)
	}
	if got := calls.Load(); got != 2 {
		t.Fatalf("threshold called %d times while checking the 2 samples, want 2", got)
	}
	calls.Store(0)
	m.Add() // no replies: Execute must not call the model
	tests := []struct {
		sev    int64
		score  float64
		reason string
	}{{9, 0.9, "high"}, {5, 0.5, "low"}, {0, 0, "low"}}
	for _, tc := range tests {
		st, err := c.Execute(bg, report(tc.sev, "x"))
		if err != nil {
			t.Fatalf("Execute(%d): %v", tc.sev, err)
		}
		got := st.Return.(map[string]any)
		if got["score"] != tc.score || got["reason"] != tc.reason {
			t.Fatalf("Execute(%d) = %v, want %v %v", tc.sev, got, tc.score, tc.reason)
		}
		if st.Usage.ToolCalls != 1 || len(st.Trace) != 1 || len(st.Trace[0].ToolCalls) != 1 || st.Trace[0].ToolCalls[0].Name != "threshold" {
			t.Fatalf("tool calls not recorded: %+v", st.Trace)
		}
		if st.Signature != c.Signature {
			t.Fatalf("step signature = %q", st.Signature)
		}
	}
	if m.Calls() != 1 {
		t.Fatalf("model called %d times, want 1 (compile only)", m.Calls())
	}
	if calls.Load() != 3 {
		t.Fatalf("threshold called %d times, want 3", calls.Load())
	}
	if got := c.Tools(); len(got) != 1 || got[0] != "threshold" {
		t.Fatalf("Tools() = %v", got)
	}
}

func TestCompileFeedsErrorsBack(t *testing.T) {
	var calls atomic.Int64
	a := scorerAgent(t, &calls)
	m := llmtest.NewT(t,
		llmtest.Text("I would rather explain it in words."),
		llmtest.Code("(fn [a] (+ 1").Expect(llmtest.LastUserContains("holds no program", "Turn 2 of 7")),
		llmtest.Code("42").Expect(llmtest.LastUserContains("Error:", "1:")),
		llmtest.Code("(fn [a b] 1)").Expect(llmtest.LastUserContains("must evaluate to a function", "got integer 42")),
		llmtest.Code("(fn [{:keys [report]}] (+ (:text report) 1))").Expect(llmtest.LastUserContains("exactly one argument", "expects 2 args")),
		llmtest.Code(`(fn [_] {:score "high" :reason "x"})`).Expect(llmtest.LastUserContains("Reminder: the function's one argument is the map of named inputs; destructure it as (fn [{:keys [report]}] ...)", "on sample 1", "1:24: +: expected number", "(fn [{:keys [report]}] (+ (:text report) 1))\n                         ^")),
		llmtest.Code(scorerProgram).Expect(llmtest.LastUserContains("on sample 1", "Return type validation failed", "score", "Turn 7 of 7")),
	)
	c, err := Compile(bg, a, CompileOptions{Model: m, Samples: cmpSamples(), MaxTurns: 7})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if c.Metadata.Turns != 7 || c.Source != scorerProgram {
		t.Fatalf("turns = %d, source = %q", c.Metadata.Turns, c.Source)
	}
}

func TestCompileMaxTurns(t *testing.T) {
	a := scorerAgent(t, new(atomic.Int64))
	m := llmtest.NewT(t, llmtest.Code("(fn [a b] 1)"), llmtest.Code("(fn [] 1)"))
	c, err := Compile(bg, a, CompileOptions{Model: m, MaxTurns: 2})
	if c != nil || !errors.Is(err, ErrMaxTurns) {
		t.Fatalf("Compile = %v, %v; want max_turns_exceeded", c, err)
	}
	st := StepOf(err)
	if st == nil || st.Fail == nil || len(st.Trace) != 2 || st.Usage.Turns != 2 {
		t.Fatalf("step = %+v", st)
	}
	if last, _ := st.Fail.Details["last_error"].(string); !strings.Contains(last, "exactly one argument") {
		t.Fatalf("last_error = %q", last)
	}
	if st.Trace[0].Program != "(fn [a b] 1)" || st.Trace[0].Feedback == "" || st.Trace[1].Feedback != "" {
		t.Fatalf("trace = %+v", st.Trace)
	}
}

func TestCompileModelErrors(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "p", Signature: ":int", LLMRetry: &llm.RetryPolicy{MaxAttempts: 1}})
	_, err := Compile(bg, a, CompileOptions{Model: llmtest.New(llmtest.Error(errors.New("boom")))})
	if !errors.Is(err, &Error{Kind: KindRun, Reason: ReasonLLMError}) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want llm_error", err)
	}
	_, err = Compile(bg, a, CompileOptions{})
	if !errors.Is(err, ErrRunFailed) || !strings.Contains(err.Error(), "no LLM given") {
		t.Fatalf("err = %v, want no model error", err)
	}
	_, err = Compile(bg, a, CompileOptions{LLM: "sonnet", Registry: llm.Registry{}})
	if !errors.Is(err, &Error{Kind: KindRun, Reason: "llm_not_found"}) {
		t.Fatalf("err = %v, want llm_not_found", err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err = Compile(ctx, a, CompileOptions{Model: llmtest.New(llmtest.Code("(fn [a] 1)"))})
	if !errors.Is(err, &Error{Kind: KindRun, Reason: ReasonCanceled}) {
		t.Fatalf("err = %v, want canceled", err)
	}
}

func TestCompileRefusesImpureTools(t *testing.T) {
	child := mustNew(t, Spec{Prompt: "Summarize {{text}}", Signature: "(text :string) -> :string"})
	a := mustNew(t, Spec{Prompt: "p", Signature: ":int", Tools: map[string]Tool{
		"summarize": child.AsTool(ToolOptions{}),
		"add":       Func(func(context.Context, map[string]any) (any, error) { return 1, nil }),
	}})
	m := llmtest.NewT(t)
	_, err := Compile(bg, a, CompileOptions{Model: m})
	if !errors.Is(err, ErrNotCompilable) || !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("err = %v, want not_compilable", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Field != "tools[summarize]" || !strings.Contains(e.Msg, `"summarize" is a sub-agent`) {
		t.Fatalf("err = %#v", err)
	}
	if m.Calls() != 0 {
		t.Fatalf("model called %d times", m.Calls())
	}
	// the same tool is refused by Load
	_, err = Load("(fn [a] 1)", ":int", LoadOptions{Tools: map[string]Tool{"summarize": child.AsTool(ToolOptions{})}})
	if !errors.Is(err, ErrNotCompilable) {
		t.Fatalf("Load err = %v, want not_compilable", err)
	}
	classify, err := NewLLMTool(LLMToolSpec{Prompt: "Is {{subject}} urgent?", Signature: "(subject :string) -> {urgent :bool}"})
	if err != nil {
		t.Fatal(err)
	}
	withLLM := mustNew(t, Spec{Prompt: "p", Signature: ":int", Tools: map[string]Tool{"classify": classify, "add": Func(func(context.Context, map[string]any) (any, error) { return 1, nil })}})
	_, err = Compile(bg, withLLM, CompileOptions{Model: m})
	if !errors.Is(err, ErrNotCompilable) || !strings.Contains(err.Error(), `tools[classify]: tool "classify" is an LLM tool`) {
		t.Fatalf("LLM tool: err = %v", err)
	}
	if _, err := Load("(fn [a] 1)", ":int", LoadOptions{Tools: map[string]Tool{"classify": classify}}); !errors.Is(err, ErrNotCompilable) {
		t.Fatalf("Load with an LLM tool: err = %v", err)
	}
	text := mustNew(t, Spec{Prompt: "p", Output: OutputText})
	if _, err := Compile(bg, text, CompileOptions{Model: m}); !errors.Is(err, ErrNotCompilable) {
		t.Fatalf("text agent: err = %v", err)
	}
}

func TestCompileRejectsBadSamples(t *testing.T) {
	a := scorerAgent(t, new(atomic.Int64))
	m := llmtest.NewT(t)
	_, err := Compile(bg, a, CompileOptions{Model: m, Samples: []map[string]any{report(1, "a"), {"report": "nope"}}})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindSpec || e.Field != "samples[1]" || !strings.Contains(e.Msg, "report") {
		t.Fatalf("err = %v", err)
	}
}

func TestCompilePrompt(t *testing.T) {
	a := mustNew(t, Spec{
		Prompt:    "Tag the ticket {{ticket}}",
		Signature: "(ticket {title :string, _email :string}) -> [:string]",
		Tools:     map[string]Tool{"lookup": FuncSig("(id :int) -> :string", func(context.Context, map[string]any) (any, error) { return "x", nil })},
		SystemPrompt: SystemPrompt{
			Prefix: "PREFIX-LINE",
			Suffix: "SUFFIX-LINE",
		},
	})
	samples := []map[string]any{}
	for i := range 5 {
		samples = append(samples, map[string]any{"ticket": map[string]any{"title": fmt.Sprintf("title-%d", i), "_email": fmt.Sprintf("secret-mail-%d@corp.example", i)}})
	}
	m := llmtest.NewT(t, llmtest.Code(`(fn [{:keys [ticket]}] [(:title ticket)])`).
		Expect(llmtest.SystemContains("PREFIX-LINE", "PTC-Lisp function writer", "## PTC-Lisp", "(fn [args] ...)", "SUFFIX-LINE")).
		Expect(llmtest.LastUserContains(":ticket {title :string", "lookup(id :int) -> :string", "[:string]",
			"Sample inputs (5;", "title-0", "title-2", "2 more samples not shown", "Tag the ticket {{ticket}}", "<Firewalled>")).
		Expect(llmtest.NoneContain("secret-mail-0", "title-3")))
	c, err := Compile(bg, a, CompileOptions{Model: m, Samples: samples})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	st, err := c.Execute(bg, samples[4])
	if err != nil || fmt.Sprint(st.Return) != "[title-4]" {
		t.Fatalf("Execute = %v, %v", st.Return, err)
	}
}

func TestCompileDefnAndHelpers(t *testing.T) {
	a := scorerAgent(t, new(atomic.Int64))
	src := "(defn sev [r] (:severity r))\n(defn score [{:keys [report]}]\n  {:score (* 0.5 (sev report)) :reason (str \"sev \" (sev report))})"
	m := llmtest.NewT(t, llmtest.Code(src))
	c, err := Compile(bg, a, CompileOptions{Model: m, Samples: cmpSamples()})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	st, err := c.Execute(bg, report(3, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Return.(map[string]any); got["score"] != 1.5 || got["reason"] != "sev 3" {
		t.Fatalf("Return = %v", got)
	}
}

func TestLoadChecksTheProgram(t *testing.T) {
	var calls atomic.Int64
	tools := map[string]Tool{"threshold": thresholdTool(&calls)}
	tests := []struct {
		name, src, sig string
		tools          map[string]Tool
		field, want    string
	}{
		{"empty", "  ", ":int", nil, "source", "empty program"},
		{"invalid utf-8", "(fn [a] \"\xff\")", ":int", nil, "source", "not valid UTF-8"},
		{"parse error", "(fn [a] (+ 1", ":int", nil, "source", "1:"},
		{"not a function", `{:a 1}`, ":int", nil, "source", "must evaluate to a function"},
		{"two args", "(fn [a b] a)", ":int", nil, "source", "expects 2 args"},
		{"no args", "(fn [] 1)", ":int", nil, "source", "exactly one argument"},
		{"variadic", "(fn [& xs] 1)", ":int", nil, "source", "exactly one argument"},
		{"multi arity", "(fn ([a] 1) ([a b] 2))", ":int", nil, "source", "exactly one argument"},
		{"calls tool while defining", `(tool/threshold {:kind "default"}) (fn [a] 1)`, ":int", tools, "source", "while defining"},
		{"unknown tool", `(fn [a] (tool/nope {}))`, ":int", tools, "source", "nope"},
		{"reserved name", "(def ptc-compiled-args 1) (fn [a] 1)", ":int", nil, "source", "reserved"},
		{"bad signature", "(fn [a] 1)", "(x :int -> :int", nil, "signature", ""},
		{"bad tool name", "(fn [a] 1)", ":int", map[string]Tool{"a b": thresholdTool(&calls)}, "tools[a b]", "invalid tool name"},
		{"bad tool signature", "(fn [a] 1)", ":int", map[string]Tool{"t": FuncSig("(x", nil)}, "tools[t].signature", ""},
		{"too large", "(fn [a] \"" + strings.Repeat("x", MaxCompiledSource) + "\")", ":int", nil, "source", "exceeds the limit"},
		{"infinite definition", "(loop [] (recur))", ":int", nil, "source", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(tc.src, tc.sig, LoadOptions{Tools: tc.tools})
			var e *Error
			if c != nil || !errors.As(err, &e) || !errors.Is(err, ErrInvalidCompiled) {
				t.Fatalf("Load = %v, %v; want an invalid_compiled error", c, err)
			}
			if e.Field != tc.field || !strings.Contains(e.Msg, tc.want) {
				t.Fatalf("err field %q msg %q; want field %q containing %q", e.Field, e.Msg, tc.field, tc.want)
			}
		})
	}
	if calls.Load() != 0 {
		t.Fatalf("a real tool was called %d times while loading", calls.Load())
	}
}

func TestExecute(t *testing.T) {
	var calls atomic.Int64
	tools := map[string]Tool{"threshold": thresholdTool(&calls), "wait": Func(func(ctx context.Context, _ map[string]any) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})}
	tests := []struct {
		name, src, sig string
		mode           signature.Mode
		args           map[string]any
		want           string // printed Return, or the fail reason after "fail:"
		warn           string
	}{
		{"map args", "(fn [{:keys [a b]}] (+ a b))", "(a :int, b :int) -> :int", 0, map[string]any{"a": int64(2), "b": int64(3)}, "5", ""},
		{"whole map", "(fn [args] (count args))", "(a :int, b :int) -> :int", 0, map[string]any{"a": int64(2), "b": int64(3)}, "2", ""},
		{"ctx access", "(fn [_] (* 2 ctx/a))", "(a :int) -> :int", 0, map[string]any{"a": int64(21)}, "42", ""},
		{"no inputs nil args", "(fn [args] (count args))", ":int", 0, nil, "0", ""},
		{"floats rounded", "(fn [_] (/ 1.0 3))", ":float", 0, nil, "0.33", ""},
		{"return form", "(fn [_] (return 7))", ":int", 0, nil, "7", ""},
		{"missing input", "(fn [{:keys [a]}] a)", "(a :int) -> :int", 0, map[string]any{}, "fail:" + ReasonInputValidation, ""},
		{"wrong input type", "(fn [{:keys [a]}] a)", "(a :int) -> :int", 0, map[string]any{"a": "x"}, "fail:" + ReasonInputValidation, ""},
		{"wrong output", "(fn [_] \"s\")", ":int", 0, nil, "fail:" + ReasonValidation, ""},
		{"wrong output warn only", "(fn [_] \"s\")", ":int", signature.WarnOnly, nil, "s", "return"},
		{"validation disabled", "(fn [{:keys [a]}] a)", "(a :int) -> :int", signature.Disabled, map[string]any{"a": "x"}, "x", ""},
		{"program fail", `(fn [_] (fail {:reason :too_big :message "no"}))`, ":int", 0, nil, "fail:too_big", ""},
		{"type error", "(fn [_] (+ 1 \"a\"))", ":int", 0, nil, "fail:type_error", ""},
		{"tool error", `(fn [_] (tool/threshold {:kind "other"}))`, ":int", 0, nil, "fail:tool_error", ""},
		{"tool input coerced", `(fn [_] (tool/threshold {:kind "default"}))`, ":int", 0, nil, "5", ""},
		{"tool bad input", `(fn [_] (tool/threshold {:kind 1}))`, ":int", 0, nil, "fail:tool_error", ""},
		{"tool extra field strict", `(fn [_] (tool/threshold {:kind "default" :n 1}))`, ":int", signature.Strict, nil, "fail:tool_error", ""},
		{"timeout", "(fn [_] (tool/wait {}))", ":int", 0, nil, "fail:timeout", ""},
		{"endless loop", "(fn [_] (loop [] (recur)))", ":int", 0, nil, "fail:timeout|step_limit", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := LoadOptions{Tools: tools, Validation: tc.mode}
			if tc.name == "timeout" || tc.name == "endless loop" {
				// only this case may run out of time: a short limit for
				// the others could fail them on a loaded machine
				opts.ProgramTimeout = 50 * time.Millisecond
			}
			c, err := Load(tc.src, tc.sig, opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			st, err := c.Execute(bg, tc.args)
			if st == nil || (err == nil) != (st.Fail == nil) {
				t.Fatalf("step %+v, err %v", st, err)
			}
			if reason, ok := strings.CutPrefix(tc.want, "fail:"); ok {
				// either sandbox limit may stop an endless loop first
				if st.Fail != nil && strings.Contains(reason, "|") && slices.Contains(strings.Split(reason, "|"), st.Fail.Reason) {
					reason = st.Fail.Reason
				}
				if st.Fail == nil || st.Fail.Reason != reason || !errors.Is(err, &Error{Kind: KindRun, Reason: reason}) || StepOf(err) != st {
					t.Fatalf("got %v / %+v, want failure %s", st.Return, st.Fail, reason)
				}
				if len(st.Trace) == 1 && st.Trace[0].Error == "" && reason != ReasonInputValidation {
					t.Fatalf("trace has no error: %+v", st.Trace)
				}
				return
			}
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if got := fmt.Sprint(st.Return); got != tc.want {
				t.Fatalf("Return = %s, want %s", got, tc.want)
			}
			if tc.warn != "" && (len(st.Warnings) == 0 || !strings.HasPrefix(st.Warnings[0], tc.warn)) {
				t.Fatalf("warnings = %q, want one starting %q", st.Warnings, tc.warn)
			}
		})
	}
}

func TestExecuteToolWarnings(t *testing.T) {
	tools := map[string]Tool{"double": FuncSig("(n :int) -> :int", func(_ context.Context, a map[string]any) (any, error) {
		return a["n"].(int64) * 2, nil
	})}
	c, err := Load(`(fn [_] (tool/double {:n "21"}))`, ":int", LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Execute(bg, nil)
	if err != nil || st.Return != int64(42) {
		t.Fatalf("Execute = %v, %v", st.Return, err)
	}
	if len(st.Warnings) != 1 || !strings.HasPrefix(st.Warnings[0], "double: ") {
		t.Fatalf("warnings = %q, want one coercion warning", st.Warnings)
	}
}

func TestExecuteConcurrent(t *testing.T) {
	var calls atomic.Int64
	c, err := Load(scorerProgram, scorerSig, LoadOptions{Tools: map[string]Tool{"threshold": thresholdTool(&calls)}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				sev := int64((g*25 + i) % 10)
				st, err := c.Execute(bg, report(sev, "x"))
				if err != nil {
					errs <- err
					return
				}
				if got := st.Return.(map[string]any)["score"]; got != float64(sev)/10 {
					errs <- fmt.Errorf("sev %d: score %v", sev, got)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if calls.Load() != 200 {
		t.Fatalf("tool calls = %d, want 200", calls.Load())
	}
}

func TestValidateCompiled(t *testing.T) {
	c, err := Load(`(fn [{:keys [n]}] (if (neg? n) (fail {:reason :negative :message "n < 0"}) (* n 2)))`, "(n :int) -> :int", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []TestCase{
		{Name: "double", Args: map[string]any{"n": 2}, Want: 4},
		{Args: map[string]any{"n": 3}, Want: 7},
		{Name: "float equal", Args: map[string]any{"n": 1}, Want: 2.0},
		{Name: "negative", Args: map[string]any{"n": -1}, WantFail: "negative"},
		{Name: "wrong reason", Args: map[string]any{"n": -1}, WantFail: "other"},
		{Name: "unexpected success", Args: map[string]any{"n": 1}, WantFail: "negative"},
		{Name: "unexpected failure", Args: map[string]any{"n": -5}, Want: -10},
		{Name: "bad input", Args: map[string]any{}},
		{Name: "check ok", Args: map[string]any{"n": 5}, Check: func(got any) error { return nil }},
		{Name: "check fails", Args: map[string]any{"n": 5}, Check: func(got any) error { return fmt.Errorf("too big: %v", got) }},
		{Name: "no expectation", Args: map[string]any{"n": 0}},
	}
	r := c.Validate(bg, cases)
	if r.OK() || r.Total != 11 || r.Passed != 5 {
		t.Fatalf("report = %+v", r)
	}
	want := []struct {
		idx  int
		name string
		msg  string
	}{
		{1, "case 2", "want 7, got 6"},
		{4, "wrong reason", "failed with negative, want other"},
		{5, "unexpected success", "succeeded with 2, want failure negative"},
		{6, "unexpected failure", "execution failed: negative: n < 0"},
		{7, "bad input", "execution failed: input validation failed"},
		{9, "check fails", "check failed: too big: 10"},
	}
	if len(r.Failures) != len(want) {
		t.Fatalf("failures = %+v", r.Failures)
	}
	for i, w := range want {
		f := r.Failures[i]
		if f.Index != w.idx || f.Name != w.name || !strings.Contains(f.Message, w.msg) {
			t.Fatalf("failure %d = %+v, want %+v", i, f, w)
		}
	}
	if r.Failures[0].Got != int64(6) || r.Failures[0].Want != 7 || r.Failures[3].Reason != "negative" {
		t.Fatalf("want/got/reason not kept: %+v", r.Failures)
	}
	if s := r.String(); !strings.HasPrefix(s, "5/11 cases passed\n- case 2: want 7, got 6") {
		t.Fatalf("String() = %q", s)
	}
	if ok := c.Validate(bg, cases[:1]); !ok.OK() || ok.Passed != 1 {
		t.Fatalf("report = %+v", ok)
	}
}

func TestCompiledPersistence(t *testing.T) {
	var calls atomic.Int64
	a := scorerAgent(t, &calls)
	c, err := Compile(bg, a, CompileOptions{Model: llmtest.NewT(t, llmtest.Code(scorerProgram).WithUsage(10, 5)), Samples: cmpSamples()})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"format": "ptc-compiled"`, `"version": 1`, `"tools": [`, `"threshold"`, `"turns": 1`, `"total_tokens": 15`} {
		if !strings.Contains(string(doc), s) {
			t.Fatalf("document lacks %s:\n%s", s, doc)
		}
	}
	tools := map[string]Tool{"threshold": thresholdTool(&calls)}
	back, err := LoadCompiled(doc, LoadOptions{Tools: tools})
	if err != nil {
		t.Fatalf("LoadCompiled: %v", err)
	}
	if back.Source != c.Source || back.Signature != c.Signature || back.Name != "scorer" || back.Description != c.Description ||
		!back.Metadata.CompiledAt.Equal(c.Metadata.CompiledAt) || back.Metadata.TotalTokens != 15 {
		t.Fatalf("loaded %+v\nwant %+v", back, c)
	}
	st, err := back.Execute(bg, report(8, "x"))
	if err != nil || st.Return.(map[string]any)["reason"] != "high" {
		t.Fatalf("Execute = %v, %v", st.Return, err)
	}
	doc2, _ := back.MarshalJSON()
	if string(doc2) != string(doc) {
		t.Fatalf("round trip changed the document:\n%s\n%s", doc, doc2)
	}

	// the validation mode travels
	wc, err := Load("(fn [_] \"s\")", ":int", LoadOptions{Validation: signature.WarnOnly})
	if err != nil {
		t.Fatal(err)
	}
	wdoc, _ := wc.MarshalJSON()
	wback, err := LoadCompiled(wdoc, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := wback.Execute(bg, nil); err != nil || len(st.Warnings) == 0 {
		t.Fatalf("warn_only not kept: %v %v", st, err)
	}

	bad := []struct{ name, doc, field, want string }{
		{"not json", `{"format":`, "document", ""},
		{"wrong format", `{"format":"x","version":1,"source":"(fn [a] 1)"}`, "format", `"x"`},
		{"future version", `{"format":"ptc-compiled","version":2,"source":"(fn [a] 1)"}`, "version", "version 2"},
		{"no version", `{"format":"ptc-compiled","source":"(fn [a] 1)"}`, "version", "version 0"},
		{"missing tool", `{"format":"ptc-compiled","version":1,"source":"(fn [a] 1)","tools":["threshold","lookup"]}`, "tools[lookup]", `"lookup"`},
		{"bad mode", `{"format":"ptc-compiled","version":1,"source":"(fn [a] 1)","validation":"loose"}`, "validation", ""},
		{"bad source", `{"format":"ptc-compiled","version":1,"source":"(fn [a b] 1)"}`, "source", "exactly one argument"},
		{"bad signature", `{"format":"ptc-compiled","version":1,"source":"(fn [a] 1)","signature":"-> ->"}`, "signature", ""},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadCompiled([]byte(tc.doc), LoadOptions{Tools: tools})
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalidCompiled) || e.Field != tc.field || !strings.Contains(e.Msg, tc.want) {
				t.Fatalf("err = %v; want field %q containing %q", err, tc.field, tc.want)
			}
		})
	}
}

func TestCompiledAsTool(t *testing.T) {
	var calls atomic.Int64
	scorer, err := Load(scorerProgram, scorerSig, LoadOptions{Name: "scorer", Tools: map[string]Tool{"threshold": thresholdTool(&calls)}})
	if err != nil {
		t.Fatal(err)
	}
	parent := mustNew(t, Spec{
		Prompt:    "Score every report in ctx/reports",
		Signature: "(reports [{severity :int, text :string}]) -> [:float]",
		Tools:     map[string]Tool{"score": scorer.AsTool()},
	})
	reports := []any{map[string]any{"severity": int64(9), "text": "a"}, map[string]any{"severity": int64(1), "text": "b"}}
	st, err, _ := run(t, parent, RunOptions{Context: map[string]any{"reports": reports}},
		llmtest.Code(`(return (mapv (fn [r] (:score (tool/score {:report r}))) ctx/reports))`).
			Expect(llmtest.LastUserContains("score(report {severity :int, text :string}) -> {score :float, reason :string}", "compiled scorer")))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if fmt.Sprint(st.Return) != "[0.9 0.1]" || calls.Load() != 2 {
		t.Fatalf("Return = %v, tool calls %d", st.Return, calls.Load())
	}
	// a failed execution is a tool error the model sees
	st, err, _ = run(t, parent, RunOptions{Context: map[string]any{"reports": reports}, Trace: TraceOn},
		llmtest.Code(`(tool/score {:report {:severity "high"}})`),
		llmtest.Code(`(return [])`).Expect(llmtest.LastUserContains("compiled scorer failed", "input validation failed", "report.text: required field missing")))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if tc := st.Trace[0].ToolCalls; len(tc) != 1 || tc[0].Name != "score" || !strings.Contains(tc[0].Error, "compiled scorer failed") {
		t.Fatalf("tool call record = %+v", tc)
	}
	// an agent whose tool is a compiled program can itself be compiled
	c, err := Compile(bg, parent, CompileOptions{Model: llmtest.NewT(t, llmtest.Code(`(fn [{:keys [reports]}] (mapv (fn [r] (:score (tool/score {:report r}))) reports))`)),
		Samples: []map[string]any{{"reports": reports}}})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	st, err = c.Execute(bg, map[string]any{"reports": reports[:1]})
	if err != nil || fmt.Sprint(st.Return) != "[0.9]" {
		t.Fatalf("Execute = %v, %v", st.Return, err)
	}
}

func TestCompileRegistryModelAndWireSpec(t *testing.T) {
	a := scorerAgent(t, new(atomic.Int64))
	m := llmtest.NewT(t, llmtest.Code(scorerProgram))
	c, err := Compile(bg, a, CompileOptions{LLM: "sonnet", Registry: llm.Registry{"sonnet": m}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Model != "sonnet" {
		t.Fatalf("metadata model = %q, want the registry name", c.Metadata.Model)
	}
	in := []map[string]any{report(1, "a")}
	ws := c.WireSpec(in)
	if ws.Program != c.Source || ws.Signature != c.Signature || len(ws.Inputs) != 1 {
		t.Fatalf("wire spec = %+v", ws)
	}
	back, err := Load(ws.Program, ws.Signature, LoadOptions{Tools: map[string]Tool{"threshold": thresholdTool(new(atomic.Int64))}})
	if err != nil || back.Signature != c.Signature {
		t.Fatalf("wire spec does not load: %v", err)
	}
}

func TestCompileObserver(t *testing.T) {
	a := scorerAgent(t, new(atomic.Int64))
	var mu sync.Mutex
	var kinds []string
	var last Event
	obs := ObserverFunc(func(_ context.Context, e Event) {
		mu.Lock()
		defer mu.Unlock()
		kinds = append(kinds, string(e.Kind))
		last = e
	})
	m := llmtest.NewT(t, llmtest.Code("(fn [a b] 1)"), llmtest.Code(scorerProgram))
	c, err := Compile(bg, a, CompileOptions{Model: m, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	want := "run.start turn.start llm.start llm.stop turn.stop turn.start llm.start llm.stop turn.stop run.stop"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("events = %s\nwant %s", got, want)
	}
	if last.Status != "ok" || last.Step == nil || last.Step.Return != c.Source || len(last.Step.Trace) != 2 || last.Agent != "scorer" {
		t.Fatalf("run.stop = %+v", last)
	}
	kinds = nil
	_, err = Compile(bg, a, CompileOptions{Model: llmtest.NewT(t, llmtest.Code("(fn [] 1)")), Observer: obs, MaxTurns: 1})
	if err == nil || last.Kind != EventRunStop || last.Status != "error" || last.Step != StepOf(err) {
		t.Fatalf("failed compile: err %v, last event %+v", err, last)
	}
}
