package lisp

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// TestAdversarial runs hostile programs: each must end with the expected
// reason within its time limit plus a margin, and the heap must stay
// bounded.
func TestAdversarial(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		reasons []string // any of these
		opts    Options
	}{
		{"infinite loop", `(loop [] (recur))`, []string{"timeout", "step_limit"}, Options{}},
		{"infinite loop with work", `(loop [i 0] (recur (+ i 1)))`, []string{"timeout", "step_limit"}, Options{}},
		{"infinite fn recursion via recur", `(defn f [x] (recur (inc x))) (f 0)`, []string{"timeout", "step_limit"}, Options{}},
		{"timeout before steps", `(loop [i 0] (recur (inc i)))`, []string{"timeout"}, Options{MaxSteps: -1, Timeout: 100 * time.Millisecond}},
		{"step budget", `(loop [i 0] (recur (inc i)))`, []string{"step_limit"}, Options{MaxSteps: 100_000, Timeout: 10 * time.Second}},
		{"infinite range", `(count (range))`, []string{"memory_limit", "timeout"}, Options{}},
		{"huge range", `(reduce + (map inc (range 100000000)))`, []string{"memory_limit", "timeout", "step_limit"}, Options{}},
		{"repeat bomb", `(apply str (repeat 1e8 "x"))`, []string{"memory_limit"}, Options{}},
		{"lazy repeat bomb", `(apply str (repeat "x"))`, []string{"memory_limit", "timeout"}, Options{}},
		{"string doubling", `(loop [s "x"] (recur (str s s)))`, []string{"memory_limit", "timeout"}, Options{}},
		{"nested doubling", `(loop [v [1]] (recur [v v v v]))`, []string{"memory_limit", "timeout", "step_limit"}, Options{}},
		{"deep recursion", `(defn f [n] (+ 1 (f (inc n)))) (f 0)`, []string{"depth_limit"}, Options{}},
		{"deep mutual recursion", `(letfn [(a [n] (+ 1 (b n))) (b [n] (+ 1 (a n)))] (a 0))`, []string{"depth_limit"}, Options{}},
		{"deep anonymous recursion", `((fn f [n] (inc (f n))) 0)`, []string{"depth_limit"}, Options{}},
		{"tool flood", `(loop [i 0] (tool/echo {:i i}) (recur (inc i)))`, []string{"timeout", "step_limit", "tool_error"}, Options{Timeout: 200 * time.Millisecond, MaxToolCalls: 10000}},
		{"hanging tool", `(tool/hang)`, []string{"timeout"}, Options{Timeout: 10 * time.Millisecond}},
		{"pmap infinite", `(pmap (fn [x] (loop [] (recur))) [1 2 3 4 5 6 7 8])`, []string{"timeout", "step_limit"}, Options{Timeout: 300 * time.Millisecond}},
		{"deep source nesting", strings.Repeat("(", 100000), []string{"parse_error"}, Options{}},
		{"huge source", "(+ " + strings.Repeat("1 ", 200000) + ")", []string{"parse_error"}, Options{}},
		{"for product", `(count (for [a (range 1000) b (range 1000) c (range 1000)] 1))`, []string{"memory_limit", "timeout", "step_limit"}, Options{}},
		{"iterate forever", `(reduce + (iterate inc 0))`, []string{"memory_limit", "timeout", "step_limit"}, Options{}},
		{"memory size", `(def big (apply str (repeat 200000 "x")))`, []string{"memory_limit"}, Options{MemoryLimit: 100_000}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := c.opts
			opts.Tools = testTools()
			if opts.Timeout == 0 {
				opts.Timeout = 300 * time.Millisecond
				if !slices.Contains(c.reasons, "timeout") {
					// the limit under test must win even on a slow -race run
					opts.Timeout = 5 * time.Second
				}
			}
			limit := opts.Timeout
			if limit == 0 {
				limit = DefaultTimeout
			}
			start := time.Now()
			res, err := Exec(context.Background(), c.src, opts)
			elapsed := time.Since(start)
			var e *core.Error
			if !errors.As(err, &e) {
				t.Fatalf("want an *Error, got %v (value %s)", err, core.PrStr(res.Value))
			}
			ok := false
			for _, r := range c.reasons {
				if e.Reason() == r {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("reason %s (%s), want one of %v", e.Reason(), e.Msg, c.reasons)
			}
			// generous margin: the CI machine is shared (and -race is slow)
			if elapsed > limit+5*time.Second {
				t.Fatalf("took %v, limit %v", elapsed, limit)
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > 1<<30 {
				t.Fatalf("heap grew to %d MB", ms.HeapAlloc>>20)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	_, err := Exec(ctx, `(loop [] (recur))`, Options{Timeout: 10 * time.Second, MaxSteps: -1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	var e *core.Error
	if !errors.As(err, &e) || e.Kind != core.KindCanceled {
		t.Fatalf("want KindCanceled, got %v", err)
	}
}

func TestDeadlineFromContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := Exec(ctx, `(loop [] (recur))`, Options{Timeout: 10 * time.Second, MaxSteps: -1})
	if !errors.Is(err, core.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want timeout wrapping DeadlineExceeded, got %v", err)
	}
}

func TestFailedRunCommitsNothing(t *testing.T) {
	for _, src := range []string{
		`(def a 1) (memory/put :b 2) (fail "no")`,
		`(def a 1) (/ 1 0)`,
		`(def a 1) (loop [] (recur))`,
	} {
		res, err := Exec(context.Background(), src, Options{Memory: map[string]any{"keep": int64(1)}, Timeout: 50 * time.Millisecond})
		if err == nil {
			t.Fatalf("%s: want error", src)
		}
		if len(res.Memory) != 1 || res.Memory["keep"] != int64(1) {
			t.Fatalf("%s: memory %v, want only keep", src, res.Memory)
		}
		step, _ := Run(context.Background(), src, Options{Memory: map[string]any{"keep": int64(1)}, Timeout: 50 * time.Millisecond})
		if _, ok := step.Memory["a"]; ok || step.Fail == nil {
			t.Fatalf("%s: step %+v", src, step)
		}
	}
}

func TestInternalPanicRecovered(t *testing.T) {
	th := &core.Thread{CallPos: core.Pos{Line: 2, Col: 3}}
	e := th.RecoverValue("boom")
	if e.Kind != core.KindInternal || !strings.Contains(e.Error(), "2:3: internal error: boom") {
		t.Fatalf("got %v", e)
	}
	// a tool whose result cannot be converted fails as a tool error, not a crash
	tools := core.Tools{"bad": core.ToolFunc(func(context.Context, map[string]any) (any, error) { return func() {}, nil })}
	_, err := Exec(context.Background(), `(tool/bad)`, Options{Tools: tools})
	if !errors.Is(err, core.ErrTool) {
		t.Fatalf("want tool error, got %v", err)
	}
}

func TestRegexCaps(t *testing.T) {
	if _, err := core.CompileRegex(strings.Repeat("a", core.MaxRegexPattern+1)); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Fatalf("want pattern cap error, got %v", err)
	}
	if got := len(core.RegexInput(strings.Repeat("x", 100<<10))); got != core.MaxRegexInput {
		t.Fatalf("input cap %d", got)
	}
	_, err := Exec(context.Background(), `#"\1"`, Options{})
	if err == nil || !strings.Contains(err.Error(), "backreferences are not supported") {
		t.Fatalf("got %v", err)
	}
}

// TestConcurrentRuns runs many programs at once (run with -race).
func TestConcurrentRuns(t *testing.T) {
	mem := map[string]any{"shared": []any{int64(1), int64(2)}}
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			src := `(defn sq [x] (* x x)) (def out (map sq shared)) (pmap inc (map :k [{:k 1} {"k" 2}]))`
			res, err := Exec(context.Background(), src, Options{Memory: mem})
			if err != nil {
				t.Errorf("run %d: %v", i, err)
				return
			}
			if core.PrStr(res.Value) != "[2 3]" || core.PrStr(res.Memory["out"]) != "[1 4]" {
				t.Errorf("run %d: %s %s", i, core.PrStr(res.Value), core.PrStr(res.Memory["out"]))
			}
		}(i)
	}
	wg.Wait()
}

// TestSharedStructureBombs: values built by doubling share structure, so
// they are cheap to build but exponential to print, compare, hash or
// convert; each must end with a limit error (or a quick answer), never a
// hang or an out-of-memory crash.
func TestSharedStructureBombs(t *testing.T) {
	dag := `(loop [v [1] i 0] (if (< i 60) (recur [v v] (inc i)) v))`
	cases := []struct{ name, src string }{
		{"return", dag},
		{"str", `(str ` + dag + `)`},
		{"pr-str", `(count (pr-str ` + dag + `))`},
		{"println", `(println ` + dag + `)`},
		{"tool arg", `(tool/echo {:v ` + dag + `})`},
		{"fail value", `(fail {:message "x" :details {:v ` + dag + `}})`},
		{"def", `(def big ` + dag + `) 1`},
		{"equal", `(= ` + dag + ` (loop [v [1] i 0] (if (< i 60) (recur [v v] (inc i)) v)))`},
		{"set", `(count (conj #{} ` + dag + `))`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			step, err := Run(context.Background(), c.src, Options{Tools: testTools(), Timeout: 2 * time.Second})
			if time.Since(start) > 7*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
			if err == nil {
				if c.name != "equal" && c.name != "set" && c.name != "println" {
					t.Fatalf("want a limit error, got %v", step.Return)
				}
				return
			}
			if r := step.Fail.Reason; r != "memory_limit" && r != "timeout" && r != "step_limit" && r != "failed" {
				t.Fatalf("reason %s: %s", r, step.Fail.Message)
			}
		})
	}
}
