package lisp

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/messages"
)

func TestRunStep(t *testing.T) {
	tools := testTools()
	step, err := Run(context.Background(), `(println "hi") (def seen (tool/add {:a 1 :b 2})) {:row-count seen :_secret "k" :tags #{:b :a}}`,
		Options{Tools: tools, Memory: map[string]any{"old": "x"}, Signature: "{row_count :int}"})
	if err != nil {
		t.Fatal(err)
	}
	ret := step.Return.(map[string]any)
	if ret["row_count"] != int64(3) || ret["_secret"] != "k" || len(ret["tags"].([]any)) != 2 {
		t.Fatalf("return %#v", ret)
	}
	if step.Memory["seen"] != int64(3) || step.Memory["old"] != "x" {
		t.Fatalf("memory %#v", step.Memory)
	}
	if len(step.Prints) != 1 || step.Prints[0] != "hi" {
		t.Fatalf("prints %#v", step.Prints)
	}
	if len(step.Trace) != 1 || len(step.Trace[0].ToolCalls) != 1 || step.Trace[0].ToolCalls[0].Result != int64(3) {
		t.Fatalf("trace %#v", step.Trace)
	}
	if step.Usage.ToolCalls != 1 || step.Signature == "" {
		t.Fatalf("usage/signature %#v %q", step.Usage, step.Signature)
	}
	if err := step.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestRunFailures(t *testing.T) {
	cases := []struct {
		src, sig, reason, msg string
		sentinel              error
	}{
		{"(+ 1", "", "parse_error", "1:1: unbalanced parentheses", core.ErrParse},
		{"(foo)", "", "unbound_symbol", "undefined symbol: foo", core.ErrUnbound},
		{"((fn [x] x))", "", "arity_error", "fn expects 1 arg, got 0", core.ErrArity},
		{"(+ 1 :a)", "", "type_error", "+: expected number, got keyword :a (arg 2)", core.ErrType},
		{"(+ 1 2 :a)", "", "type_error", "+: expected number, got keyword :a (arg 3)", core.ErrType},
		{"(- 1 2 3 :a)", "", "type_error", "-: expected number, got keyword :a (arg 4)", core.ErrType},
		{"(* 1 2 :a)", "", "type_error", "*: expected number, got keyword :a (arg 3)", core.ErrType},
		{"(/ 1 2 :a)", "", "type_error", "/: expected number, got keyword :a (arg 3)", core.ErrType},
		{"(tool/boom)", "", "tool_error", "tool 'boom' failed: rate limited", core.ErrTool},
		{`{:count "x"}`, "{count :int}", "validation_error", "return type validation failed: count: expected integer", core.ErrValidation},
		{`(fail {:reason :not_found :message "gone" :details {:id 1}})`, "", "not_found", "gone", core.ErrFail},
		{`(fail "plain")`, "", "failed", "plain", core.ErrFail},
	}
	for _, c := range cases {
		step, err := Run(context.Background(), c.src, Options{Tools: testTools(), Signature: c.sig})
		if err == nil || step.Fail == nil {
			t.Fatalf("%s: want failure", c.src)
		}
		if step.Fail.Reason != c.reason || !strings.Contains(step.Fail.Message, c.msg) {
			t.Fatalf("%s: fail %q %q", c.src, step.Fail.Reason, step.Fail.Message)
		}
		if !errors.Is(err, c.sentinel) {
			t.Fatalf("%s: %v is not %v", c.src, err, c.sentinel)
		}
		if step.Return != nil {
			t.Fatalf("%s: return %v", c.src, step.Return)
		}
	}
	step, _ := Run(context.Background(), `(fail {:reason :x :message "m" :details {:id 1}})`, Options{})
	if step.Fail.Details["id"] != int64(1) {
		t.Fatalf("details %#v", step.Fail.Details)
	}
}

// A signature is parsed before the program runs: one that does not parse
// fails the run without calling any tool.
func TestRunInvalidSignature(t *testing.T) {
	called := false
	tools := core.Tools{"t": core.ToolFunc(func(context.Context, map[string]any) (any, error) { called = true; return 1, nil })}
	step, err := Run(context.Background(), `(tool/t)`, Options{Tools: tools, Signature: "{count :integer}"})
	if err == nil || !strings.Contains(err.Error(), "invalid signature") || step.Fail == nil {
		t.Fatalf("err %v, step %+v", err, step)
	}
	if called {
		t.Fatal("the program ran with an invalid signature")
	}
	step, err = Run(context.Background(), `{:count 1}`, Options{Signature: "{count   :int}"})
	if err != nil || step.Signature != "() -> {count :int}" {
		t.Fatalf("err %v, signature %q (want the parsed form)", err, step.Signature)
	}
}

func TestMemoryContract(t *testing.T) {
	res, err := Exec(context.Background(), `{:total 5 :items [1 2] :return "done"}`, Options{MemoryContract: true, Memory: map[string]any{"k": int64(1)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Value != "done" || core.PrStr(res.Memory["total"]) != "5" || core.PrStr(res.Memory["items"]) != "[1 2]" || res.Memory["return"] != nil {
		t.Fatalf("value %v memory %v", res.Value, res.Memory)
	}
	if strings.Join(res.Written, ",") != "items,total" {
		t.Fatalf("written %v", res.Written)
	}
	// not applied to return, nor without the option
	res, _ = Exec(context.Background(), `(return {:total 5})`, Options{MemoryContract: true})
	if _, ok := res.Memory["total"]; ok || res.Signal != SignalReturn {
		t.Fatalf("contract applied to return: %v", res.Memory)
	}
	res, _ = Exec(context.Background(), `{:total 5}`, Options{})
	if _, ok := res.Memory["total"]; ok {
		t.Fatal("contract applied without option")
	}
	// non-map leaves memory unchanged
	res, _ = Exec(context.Background(), `42`, Options{MemoryContract: true, Memory: map[string]any{"k": int64(1)}})
	if len(res.Memory) != 1 {
		t.Fatalf("memory %v", res.Memory)
	}
}

func TestClosuresPersistAcrossRuns(t *testing.T) {
	res, err := Exec(context.Background(), `(defn sq [x] (* x x)) (def base 10)`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := map[string]any{}
	for k, v := range res.Memory {
		mem[k] = v
	}
	res, err = Exec(context.Background(), `(+ base (sq 3))`, Options{Memory: mem})
	if err != nil || res.Value != int64(19) {
		t.Fatalf("%v %v", res.Value, err)
	}
}

func TestMemoryLimit(t *testing.T) {
	_, err := Exec(context.Background(), `(def big (apply str (repeat 5000 "x")))`, Options{MemoryLimit: 1000})
	if !errors.Is(err, core.ErrMemoryLimit) || !strings.Contains(err.Error(), "memory limit exceeded: ") {
		t.Fatalf("got %v", err)
	}
}

func TestFloatPrecision(t *testing.T) {
	step, _ := Run(context.Background(), `[(/ 1.0 3) {:x 2.71828}]`, Options{FloatPrecision: 2})
	if core.PrStr(mustFromGo(t, step.Return)) != `[0.33 {"x" 2.72}]` {
		t.Fatalf("%v", step.Return)
	}
}

func mustFromGo(t *testing.T, v any) core.Value {
	t.Helper()
	x, err := core.FromGo(v)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestPrintFloat(t *testing.T) {
	cases := map[float64]string{1: "1.0", 0.1: "0.1", 1e7: "1.0E7", 1234567.5: "1234567.5", 1e-3: "0.001", 1e-4: "1.0E-4", 1.5e300: "1.5E300", -2.5: "-2.5"}
	for f, want := range cases {
		if got := core.PrStr(f); got != want {
			t.Errorf("%v: got %s want %s", f, got, want)
		}
	}
}

func TestPreviewTruncation(t *testing.T) {
	long := strings.Repeat("é", 20)
	text, omitted := core.Preview(long, core.PreviewOptions{MaxString: 5})
	if text != `"ééééé..."` || omitted != 0 {
		t.Fatalf("%q %d", text, omitted)
	}
	m := mustFromGo(t, map[string]any{"a": []any{1, 2, 3, 4}, "_k": "x"})
	text, _ = core.Preview(m, core.PreviewOptions{MaxItems: 2})
	if text != `{"_k" <Firewalled> "a" [1 2 ...]}` {
		t.Fatalf("%q", text)
	}
}

func TestStepIsPlainData(t *testing.T) {
	_, err := Run(context.Background(), `(defn f [x] x) (def re #"a+") [f re (var-of f)]`, Options{})
	if err == nil {
		t.Fatal("want unbound var-of")
	}
	step, err := Run(context.Background(), `(defn f [x] x) (def re #"a+") [f re + (def g 1)]`, Options{Signature: "[:any]"})
	if err != nil {
		t.Fatal(err)
	}
	got := step.Return.([]any)
	if got[0] != "#fn[x]" || got[1] != `#"a+"` || got[2] != "#<builtin>" || got[3] != "#'g" {
		t.Fatalf("%#v", got)
	}
	if step.Memory["f"] != "#fn[x]" {
		t.Fatalf("memory %#v", step.Memory)
	}
	if _, err := messages.MarshalStep(step); err != nil {
		t.Fatal(err)
	}
}

func TestPreviewOfSharedStructure(t *testing.T) {
	res, err := Exec(context.Background(), `(def v (loop [v [1] i 0] (if (< i 60) (recur [v v v v v v] (inc i)) v))) 1`, Options{MemoryLimit: -1})
	if err == nil {
		t.Fatal("want memory limit on commit")
	}
	// build the same shape by hand and preview it
	v := core.Value(core.NewVector([]core.Value{core.Int(1)}))
	for i := 0; i < 60; i++ {
		v = core.NewVector([]core.Value{v, v, v, v, v, v})
	}
	text, _ := core.Preview(v, core.PreviewOptions{})
	if len(text) > 70<<10 {
		t.Fatalf("preview %d bytes", len(text))
	}
	_ = res
}

func TestSnippet(t *testing.T) {
	src := "(+ 1\n\t(foo 2))\n" + strings.Repeat("x", 201)
	for _, c := range []struct {
		pos  core.Pos
		want string
	}{
		{core.Pos{Line: 1, Col: 4}, "\n  (+ 1\n     ^"},
		{core.Pos{Line: 2, Col: 3}, "\n  \t(foo 2))\n  \t ^"}, // the tab is kept so the caret lines up
		{core.Pos{}, ""},                // no position
		{core.Pos{Line: 9, Col: 1}, ""}, // not in the source
		{core.Pos{Line: 3, Col: 1}, ""}, // a line too long to show
	} {
		if got := core.Snippet(src, c.pos); got != c.want {
			t.Errorf("Snippet(%v) = %q, want %q", c.pos, got, c.want)
		}
	}
}

// bigRecords returns n flat records, the shape of a large tool result.
func bigRecords(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"id": int64(i), "name": "item", "tags": []any{"a", "b"}}
	}
	return out
}

// A large tool result stored with def survives the end of the program:
// memory is realised while the tool context is still live.
func TestDefKeepsLargeToolResult(t *testing.T) {
	recs := bigRecords(100_000)
	tools := core.Tools{"list": core.ToolFunc(func(context.Context, map[string]any) (any, error) { return recs, nil })}
	opts := Options{Tools: tools, Timeout: time.Minute, MemoryLimit: -1, MaxMemory: -1}
	res, err := Exec(context.Background(), `(def xs (tool/list {})) (count xs)`, opts)
	if err != nil {
		t.Fatalf("def of a %d-record tool result: %v", len(recs), err)
	}
	if res.Value != int64(100_000) || len(res.Written) != 1 || res.Written[0] != "xs" {
		t.Fatalf("value %v, written %v", res.Value, res.Written)
	}
	opts.Memory = map[string]any{"xs": res.Memory["xs"]}
	res, err = Exec(context.Background(), `(map :id (take 2 xs))`, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := core.ToGo(res.Value).([]any); len(got) != 2 || got[0] != int64(0) || got[1] != int64(1) {
		t.Fatalf("(take 2 xs) = %v", got)
	}
	// a lazy seq stored in memory is realised after the program, with its
	// tool calls still allowed
	res, err = Exec(context.Background(), `(def ys (map :id (tool/list {}))) (def zs (map (fn [_] (tool/list {})) [1])) 1`, opts)
	if err != nil {
		t.Fatalf("lazy seqs in memory: %v", err)
	}
	if n := len(core.ToGo(res.Memory["ys"]).([]any)); n != 100_000 {
		t.Fatalf("ys has %d items", n)
	}
}

// Options.Scrub and PrintOptions.Scrub see every string, keyword name and
// map key before it is printed or cut.
func TestScrubHook(t *testing.T) {
	hide := func(s string, key bool) string {
		if s == "pin" || s == "k1" && key {
			return core.FirewalledText
		}
		return strings.ReplaceAll(s, "SECRET", "***")
	}
	res, err := Exec(context.Background(), `(println "pin" :pin {"k1" "k1" :a "xSECRETx"}) (prn "pin") (println (str "a" "pin"))`, Options{Scrub: hide})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`<Firewalled> <Firewalled> {:a "x***x" <Firewalled> "k1"}`, `<Firewalled>`, `apin`}
	if strings.Join(res.Prints, "\n") != strings.Join(want, "\n") {
		t.Fatalf("prints %q, want %q", res.Prints, want)
	}
	long := strings.Repeat("SECRET", 100)
	text, _ := core.Preview(core.NewVector([]core.Value{long, "pin"}), core.PreviewOptions{MaxString: 10, Scrub: hide})
	if text != `["**********..." <Firewalled>]` {
		t.Fatalf("preview %s", text)
	}
}

// An undefined name with no close match gets the related names: those
// sharing a word with it.
func TestUndefinedSymbolRelatedNames(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`(filter-by-name "x" [])`, "no such name; related names: name, filter, filterv"},
		{`(let [user-emails [1]] (count emails-of-user))`, "no such name; related names: user-emails"},
		{`(sort-by-date [])`, "no such name; related names: sort, sort-by, sorted?"},
	} {
		_, err := Exec(context.Background(), tc.src, Options{})
		var le *core.Error
		if !errors.As(err, &le) || le.Kind != core.KindUnbound {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if !strings.Contains(le.Hint, tc.want) {
			t.Errorf("%s: hint %q, want it to contain %q", tc.src, le.Hint, tc.want)
		}
	}
	_, err := Exec(context.Background(), `(qqq 1)`, Options{})
	if le := err.(*core.Error); le.Hint != "" {
		t.Errorf("hint for a name sharing no word: %q", le.Hint)
	}
}

// TestRunMemorySharesHostData: a def of host data the program did not
// change comes back in Step.Memory as the caller's own slice or map (same
// backing array, same Go type), so Run's cost does not grow with the data
// kept; what the program made is converted, and host data inside it is
// the caller's maps.
func TestRunMemorySharesHostData(t *testing.T) {
	sameSlice := func(a, b any) bool {
		ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
		return ra.Kind() == reflect.Slice && ra.Type() == rb.Type() && ra.Len() == rb.Len() &&
			(ra.Len() == 0 || ra.Index(0).Addr().Pointer() == rb.Index(0).Addr().Pointer())
	}
	recs := benchRecords(1000)
	anys := make([]any, len(recs))
	for i, r := range recs {
		anys[i] = r
	}
	for _, data := range []any{recs, anys} {
		opts := Options{Context: map[string]any{"data": data, "one": recs[3]}}
		st, err := Run(context.Background(), `(def all ctx/data) (def tail (rest ctx/data)) (def one ctx/one) (def made (conj ctx/data {:id -1})) (count all)`, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !sameSlice(st.Memory["all"], data) {
			t.Errorf("%T: memory all is %T, not the caller's slice", data, st.Memory["all"])
		}
		tail := reflect.ValueOf(data).Slice(1, len(recs)).Interface()
		if !sameSlice(st.Memory["tail"], tail) {
			t.Errorf("%T: memory tail is %T, not the caller's slice from its second record", data, st.Memory["tail"])
		}
		if one, ok := st.Memory["one"].(map[string]any); !ok || reflect.ValueOf(one).Pointer() != reflect.ValueOf(recs[3]).Pointer() {
			t.Errorf("%T: memory one is not the caller's map", data)
		}
		made, ok := st.Memory["made"].([]any)
		if !ok || len(made) != len(recs)+1 || made[len(recs)].(map[string]any)["id"] != int64(-1) {
			t.Fatalf("%T: memory made = %T", data, st.Memory["made"])
		}
		if m, ok := made[5].(map[string]any); !ok || reflect.ValueOf(m).Pointer() != reflect.ValueOf(recs[5]).Pointer() {
			t.Errorf("%T: a record inside a made vector is not the caller's map", data)
		}
		if st.Return != int64(len(recs)) {
			t.Errorf("return = %v", st.Return)
		}
	}
	// the cost of a def through Run does not depend on how much is kept
	allocs := func(n int) float64 {
		opts := Options{Context: map[string]any{"data": benchRecords(n)}}
		return testing.AllocsPerRun(5, func() {
			if _, err := Run(context.Background(), `(def data ctx/data) (count data)`, opts); err != nil {
				t.Fatal(err)
			}
		})
	}
	if small, big := allocs(100), allocs(10_000); big > small+5 { // a copy would be 10k+
		t.Errorf("a def through Run allocates %v times for 10k records, %v for 100", big, small)
	}
}

// TestCallersDeadlineNamed: a run stopped by the caller's context
// deadline, well inside its own time limit, ends with reason timeout and a
// message that names the caller's deadline, not the program's limit; a run
// that reaches its own limit names the limit.
func TestCallersDeadlineNamed(t *testing.T) {
	spin := `(loop [i 0] (recur (inc i)))`
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := Exec(ctx, spin, Options{Limits: messages.Limits{ProgramTimeout: time.Hour, MaxSteps: -1}})
	var e *core.Error
	if !errors.As(err, &e) || e.Reason() != "timeout" || !strings.Contains(e.Msg, "caller's deadline") {
		t.Fatalf("run stopped by the caller's deadline: %v, want a timeout naming the caller's deadline", err)
	}
	_, err = Exec(context.Background(), spin, Options{Limits: messages.Limits{ProgramTimeout: 50 * time.Millisecond, MaxSteps: -1}})
	if !errors.As(err, &e) || e.Reason() != "timeout" || !strings.Contains(e.Msg, "50ms limit") {
		t.Fatalf("run past its own limit: %v, want a timeout naming the 50ms limit", err)
	}
}

// TestOptionsLimitsByWireName runs programs under each limit given by its
// wire name in Options.Limits: each takes effect, wins over the field of
// its older name, and a run that sets neither gets the one default of
// pkg/messages.
func TestOptionsLimitsByWireName(t *testing.T) {
	// A run that ignored its program_timeout ends at this deadline with a
	// reason of its own instead of hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	spin := `(loop [i 0] (recur (inc i)))`
	reason := func(t *testing.T, src string, opts Options) string {
		t.Helper()
		opts.Tools = testTools()
		res, err := Exec(ctx, src, opts)
		if err == nil {
			return "ok"
		}
		var e *core.Error
		if !errors.As(err, &e) {
			t.Fatalf("want an *Error, got %v (value %v)", err, res.Value)
		}
		return e.Reason()
	}
	cases := []struct {
		name string
		src  string
		opts Options
		want string
	}{
		{"program_timeout", spin, Options{Limits: messages.Limits{ProgramTimeout: 50 * time.Millisecond, MaxSteps: -1}}, "timeout"},
		{"program_timeout wins over Timeout", spin, Options{Timeout: time.Hour, Limits: messages.Limits{ProgramTimeout: 50 * time.Millisecond, MaxSteps: -1}}, "timeout"},
		{"max_steps", spin, Options{Limits: messages.Limits{MaxSteps: 10_000}}, "step_limit"},
		{"max_steps wins over MaxSteps", spin, Options{MaxSteps: -1, Limits: messages.Limits{MaxSteps: 10_000}}, "step_limit"},
		{"program_memory", `(count (vec (range 100000)))`, Options{Limits: messages.Limits{ProgramMemory: 64 << 10}}, "memory_limit"},
		{"program_memory wins over MaxMemory", `(count (vec (range 100000)))`, Options{MaxMemory: -1, Limits: messages.Limits{ProgramMemory: 64 << 10}}, "memory_limit"},
		{"program_memory unlimited", `(count (vec (range 100000)))`, Options{MaxMemory: 64 << 10, Limits: messages.Limits{ProgramMemory: -1}}, "ok"},
		{"max_tool_calls", `(doseq [i (range 5)] (tool/echo {:i i}))`, Options{Limits: messages.Limits{MaxToolCalls: 3}}, "tool_error"},
		{"max_tool_calls wins over MaxToolCalls", `(doseq [i (range 5)] (tool/echo {:i i}))`, Options{MaxToolCalls: 100, Limits: messages.Limits{MaxToolCalls: 3}}, "tool_error"},
		{"memory_limit", `(def big (apply str (repeat 20000 "x")))`, Options{Limits: messages.Limits{MemoryLimit: 1000}}, "memory_limit"},
		{"memory_limit unlimited", `(def big (apply str (repeat 20000 "x")))`, Options{MemoryLimit: 1000, Limits: messages.Limits{MemoryLimit: -1}}, "ok"},
		{"older name still read", spin, Options{MaxSteps: 10_000}, "step_limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := reason(t, c.src, c.opts); got != c.want {
				t.Fatalf("ended with %s, want %s", got, c.want)
			}
		})
	}
	// The defaults are pkg/messages' for both names.
	for _, o := range []Options{{}, {Limits: messages.Limits{}}} {
		l := o.runLimits()
		if l.timeout != messages.DefaultProgramTimeout || l.maxMem != messages.DefaultProgramMemory ||
			l.memLimit != messages.DefaultMemoryLimit || l.maxSteps != StepBudget(messages.DefaultProgramTimeout) || l.maxCalls != 0 {
			t.Fatalf("default limits %+v, want pkg/messages' defaults", l)
		}
	}
	// The wire name wins over the older field: checked on the limits
	// themselves too, so that a regression fails here at once rather than
	// leaving the spinning case above to run for the older field's hour.
	if l := (&Options{Timeout: time.Hour, Limits: messages.Limits{ProgramTimeout: 50 * time.Millisecond}}).runLimits(); l.timeout != 50*time.Millisecond {
		t.Fatalf("program_timeout 50ms with Timeout 1h gives a timeout of %s, want 50ms", l.timeout)
	}
	if l := (&Options{Limits: messages.Limits{ProgramTimeout: -1}}).runLimits(); l.maxSteps != -1 {
		t.Fatalf("an unlimited program_timeout gets a step budget of %d, want unlimited", l.maxSteps)
	}
}

// TestRunLimitsDefaultsFastPath: Options that set no limit take the
// limits resolved once (defaultRunLimits); setting any integer field of
// Options or of Options.Limits, to a limit or to unlimited, resolves them
// field by field, so the fast path answers exactly as resolveLimits does
// (a limit added to resolveLimits but not to the fast path's test fails
// here).
func TestRunLimitsDefaultsFastPath(t *testing.T) {
	if got, want := (&Options{}).runLimits(), (&Options{}).resolveLimits(); got != want {
		t.Fatalf("default limits %+v, resolved %+v", got, want)
	}
	checked := 0
	for _, in := range []string{"", "Limits"} {
		for _, v := range []int64{-1, 3, int64(7 * time.Millisecond)} {
			var o Options
			target := reflect.ValueOf(&o).Elem()
			if in != "" {
				target = target.FieldByName(in)
			}
			for i := range target.NumField() {
				f := target.Field(i)
				if !f.CanSet() || (f.Kind() != reflect.Int && f.Kind() != reflect.Int64) {
					continue
				}
				f.SetInt(v)
				if got, want := o.runLimits(), o.resolveLimits(); got != want {
					t.Errorf("%s.%s = %d: runLimits %+v, resolveLimits %+v", in, target.Type().Field(i).Name, v, got, want)
				}
				f.SetInt(0)
				checked++
			}
		}
	}
	if checked < 3*15 {
		t.Fatalf("checked %d fields, want every integer field of Options and Limits", checked)
	}
}
