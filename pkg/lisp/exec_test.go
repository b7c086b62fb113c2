package lisp

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestExecKeptResultsIntact: Exec reuses the state of an earlier Exec
// whose run left nothing referring to it; what callers keep of every
// Result (values of each kind, closures and lazy sequences made by the
// run, prints, tool calls, memory, errors) reads the same after many
// later Execs of other programs, from two goroutines at once.
func TestExecKeptResultsIntact(t *testing.T) {
	echo := core.ToolFunc(func(_ context.Context, a map[string]any) (any, error) { return a, nil })
	// keep is a tool that keeps what it was given, its context and
	// arguments, and reads them again after later Execs
	type given struct {
		ctx  context.Context
		args map[string]any
	}
	var keptMu sync.Mutex
	var gotten []given
	keep := core.ToolFunc(func(ctx context.Context, a map[string]any) (any, error) {
		keptMu.Lock()
		gotten = append(gotten, given{ctx, a})
		keptMu.Unlock()
		return map[string]any{"n": int64(len(a))}, nil
	})
	progs := []struct{ src, want string }{
		{`(+ 1 2)`, `3`},
		{`(str "a" "b" ctx/k)`, `"abK"`},
		{`:kw`, `:kw`},
		{`(keyword (str "k" ctx/k))`, `:kK`},
		{`[1 :a "s" [2 3]]`, `[1 :a "s" [2 3]]`},
		{`(list 1 :b (list "c"))`, `[1 :b ["c"]]`},
		{`{:a 1 :b [:c]}`, `{:a 1 :b [:c]}`},
		{`(map (fn [x] (str x "!")) ["p" "q" ctx/k])`, `["p!" "q!" "K!"]`},
		{`(let [n 5] (fn [x] (+ x n)))`, ``},
		{`(do (println "out" ctx/k) 7.5)`, `7.5`},
		{`(:v (tool/echo {:v ctx/k}))`, `"K"`},
		{`{:n (:n (tool/keep {:v ctx/k :w [1 (str ctx/k)]})) :k [:a ctx/k]}`, `{:k [:a "K"] :n 2}`},
		{`(return {:n (:n (tool/keep {:v ctx/k :w [1 (str ctx/k)]}))})`, `{:n 2}`},
		{`(def m [ctx/k 1])`, ``},
		{`(count (filter :active ctx/rs))`, `2`},
		{`(fail "no")`, ``},
	}
	recs := []map[string]any{{"active": true}, {"active": false}, {"active": true}}
	type kept struct {
		res  *Result
		want string
		fn   bool // res.Value is a function: call it with 1
	}
	check := func(k kept, src string, later bool) error {
		r := k.res
		switch {
		case strings.HasPrefix(src, "(map") && !later:
			// the lazy sequence is realised only after later Execs
		case k.fn:
			res, err := Exec(context.Background(), `(f 1)`, Options{Memory: map[string]any{"f": r.Value}})
			if err != nil || res.Value != int64(6) {
				return fmt.Errorf("%s: kept closure returns %v %v", src, res.Value, err)
			}
		case k.want != "":
			if got := core.PrStr(r.Value); got != k.want {
				return fmt.Errorf("%s: kept value reads %s, want %s", src, got, k.want)
			}
		}
		if strings.HasPrefix(src, "(do (println") && (len(r.Prints) != 1 || r.Prints[0] != "out K") {
			return fmt.Errorf("%s: kept prints %q", src, r.Prints)
		}
		if strings.HasPrefix(src, "(:v (tool") && (len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "echo") {
			return fmt.Errorf("%s: kept tool calls %v", src, r.ToolCalls)
		}
		if strings.HasPrefix(src, "(def m") && core.PrStr(r.Memory["m"]) != `["K" 1]` {
			return fmt.Errorf("%s: kept memory %v", src, r.Memory)
		}
		if strings.HasPrefix(src, "(fail") && (r.Err == nil || r.Err.Msg != "no") {
			return fmt.Errorf("%s: kept error %v", src, r.Err)
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var all []kept
			var srcs []string
			for i := range 300 {
				pr := progs[i%len(progs)]
				opts := Options{Context: map[string]any{"k": "K", "rs": recs}, Tools: core.Tools{"echo": echo, "keep": keep}}
				res, _ := Exec(context.Background(), pr.src, opts)
				k := kept{res: res, want: pr.want, fn: strings.HasPrefix(pr.src, "(let [n 5]")}
				if err := check(k, pr.src, false); err != nil {
					errs <- fmt.Errorf("right after Exec: %w", err)
					return
				}
				all, srcs = append(all, k), append(srcs, pr.src)
			}
			for i, k := range all {
				if err := check(k, srcs[i], true); err != nil {
					errs <- fmt.Errorf("after later Execs: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(gotten) == 0 {
		t.Fatal("the keeping tool was not called")
	}
	for _, g := range gotten {
		if got := fmt.Sprint(g.args); got != "map[v:K w:[1 K]]" {
			t.Fatalf("a tool's kept arguments read %s after later Execs", got)
		}
		if g.ctx.Err() == nil {
			t.Fatal("a tool's kept context is not canceled once its run is over")
		}
	}
}

// TestExecStateRecycled: an Exec whose run returns a self-contained
// value (scalars, keywords, small maps and vectors of them), tool calls
// included, and keeps nothing marks its state clean, and recycling it
// leaves every field as in a zero execState but those kept on purpose
// (the run state's links, as core.Recycle keeps them, and the emptied
// keyword table); a run that returns a lazy sequence, a closure or a
// view of host data, writes memory or starts pmap branches does not mark
// its state clean.
func TestExecStateRecycled(t *testing.T) {
	echo := core.ToolFunc(func(_ context.Context, a map[string]any) (any, error) { return a, nil })
	opts := Options{Context: map[string]any{"rs": []map[string]any{{"active": true}}},
		Tools: core.Tools{"echo": echo}, Memory: map[string]any{"x": int64(1)}}
	for _, c := range []struct {
		src   string
		clean bool
	}{
		{`(+ 1 2)`, true},
		{`(let [f (fn [x] (* x 2))] (str (f 2) :k (count (filter :active ctx/rs))))`, true},
		{`(do (println "p") (loop [i 0] (if (< i 3) (recur (inc i)) :done)))`, true},
		{`[1 2]`, true},
		{`(map inc [1 2])`, true},
		{`{:n (count (tool/echo {:a 1})) :v [:k "s" 1.5 nil]}`, true},
		{`(return {:n (:a (tool/echo {:a 1}))})`, true},
		{`(:a (tool/echo {:a 1}))`, true},
		{`(fn [] 1)`, false},
		{`[(fn [] 1)]`, false},
		{`{:s (lazy-seq [1])}`, false},
		{`(lazy-seq [1])`, false},
		{`(vec (range 100))`, false},
		{`(def y 2)`, false},
		{`(tool/echo {:a 1})`, false},
		{`{:r (tool/echo {:a 1})}`, false},
		{`(reduce + (pmap inc [1 2]))`, false},
		{`(fail "no")`, false},
	} {
		e := new(execState)
		e.exec(context.Background(), c.src, &opts, core.Clock())
		if e.rs.clean != c.clean {
			t.Errorf("%s: clean %v, want %v", c.src, e.rs.clean, c.clean)
			continue
		}
		if !c.clean {
			continue
		}
		e.recycle()
		if len(e.kw) != 0 || e.kw == nil && strings.Contains(c.src, ":") {
			t.Errorf("%s: keyword table after recycle: %v", c.src, e.kw)
		}
		set := map[string]bool{}
		nonZeroFields(reflect.ValueOf(e).Elem(), "", set)
		nonZeroFields(reflect.ValueOf(&e.rs.th).Elem(), "th.", set)
		nonZeroFields(reflect.ValueOf(&e.rs.h).Elem(), "h.", set)
		for f := range set {
			switch f {
			case "rs", "kw", "th.Host", "th.frames", "th.frame0", "th.frameBuf", "th.stack":
			default:
				t.Errorf("%s: %s is set after recycle", c.src, f)
			}
		}
		// the recycled state serves another Exec as a new one would
		res, err := e.exec(context.Background(), `(str :k (count (filter :active ctx/rs)))`, &opts, core.Clock())
		if err != nil || res.Value != ":k1" {
			t.Errorf("%s: the next Exec in the recycled state: %v %v", c.src, res.Value, err)
		}
	}
}

// TestExecAllocations: an Exec of a tiny program that keeps nothing
// reuses an earlier Exec's state (its Program, compiler, reader slab,
// keyword table and run state): what it allocates is its Result and the
// compiled nodes. A compiled call holds its operands in its own closure,
// compiles its arguments into a list on the stack, and small integer
// constants take shared nodes: (+ 1 2) makes one node. A run that called
// a tool reuses the state too (23 allocations, 28 when its state was
// made anew, 24 when a call with arguments made an empty map of them
// before it converted them).
func TestExecAllocations(t *testing.T) {
	if raceBuild {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	recs := make([]map[string]any, 10)
	for i := range recs {
		recs[i] = map[string]any{"id": int64(i), "active": i%2 == 0}
	}
	one := core.ToolFunc(func(context.Context, map[string]any) (any, error) { return int64(1), nil })
	opts := Options{Context: map[string]any{"rs": recs}, Tools: core.Tools{"one": one}}
	for _, c := range []struct {
		src  string
		want any
		max  float64
	}{
		{`(+ 1 2)`, int64(3), 2},
		{`(count (filter :active ctx/rs))`, int64(5), 6},
		{`(+ 1 (tool/one {:id 1}))`, int64(2), 23},
	} {
		allocs := testing.AllocsPerRun(200, func() {
			if res, err := Exec(context.Background(), c.src, opts); err != nil || res.Value != c.want {
				t.Fatalf("%s: %v %v", c.src, res.Value, err)
			}
		})
		t.Logf("%s: %.1f allocations per Exec", c.src, allocs)
		if allocs > c.max {
			t.Errorf("%s: %.1f allocations per Exec, want at most %.0f", c.src, allocs, c.max)
		}
	}
}

// TestExecDeadlineFromStart: an Exec's timeout counts from its start, the
// compile included: a program whose compile alone takes longer than its
// timeout times out at the run's first check, with the timeout's error.
//
// The timeout is a quarter of the fastest of three compiles of the
// program, whose first act is a tool call. A run that made the call after
// the timeout had passed since Exec was called must time out; a run that
// made it sooner (the machine's load fell between the compiles timed and
// the Exec's own, so that it compiled more than four times faster) proves
// nothing and is tried again.
func TestExecDeadlineFromStart(t *testing.T) {
	var b strings.Builder
	b.WriteString("(do (tool/mark {}) ")
	for i := range 4000 {
		fmt.Fprintf(&b, "(let [a%d %d] (+ a%d 1)) ", i, i, i)
	}
	b.WriteString("(loop [i 0] (if (< i 5000) (recur (inc i)) i)))")
	src := b.String()
	var start time.Time
	var began atomic.Int64 // when the run called the tool, since start
	tools := core.Tools{"mark": core.ToolFunc(func(context.Context, map[string]any) (any, error) {
		began.Store(int64(time.Since(start)))
		return nil, nil
	})}
	for attempt := 1; ; attempt++ {
		compileTime := time.Duration(1 << 62)
		for range 3 {
			t0 := time.Now()
			if _, err := Compile(src, Options{Tools: tools}); err != nil {
				t.Fatal(err)
			}
			compileTime = min(compileTime, time.Since(t0))
		}
		// the run after the compile is far shorter than a quarter of it
		timeout := compileTime / 4
		start = time.Now()
		res, err := Exec(context.Background(), src, Options{Tools: tools, Limits: messages.Limits{ProgramTimeout: timeout}})
		if err != nil {
			if res.Err.Kind != core.KindTimeout {
				t.Fatalf("compile %v, timeout %v: Exec returned %v, want a timeout", compileTime, timeout, err)
			}
			if res.Duration < timeout {
				t.Errorf("Duration %v is shorter than the timeout %v it exceeded", res.Duration, timeout)
			}
			return
		}
		ran := time.Duration(began.Load())
		if ran > timeout {
			t.Fatalf("compile %v, timeout %v: the run began %v after Exec was called and returned %v, want a timeout",
				compileTime, timeout, ran, res.Value)
		}
		if attempt == 5 {
			t.Fatalf("in 5 tries the run began before the timeout had passed (last: compile %v, timeout %v, run began after %v)",
				compileTime, timeout, ran)
		}
		t.Logf("try %d: compile %v, timeout %v: the run began %v after Exec was called, before the timeout passed; trying again",
			attempt, compileTime, timeout, ran)
	}
}

// TestSharedConstNodes: the constants compiled to shared nodes (nil,
// booleans, small integers) and those next to them yield their values,
// in every position a constant takes.
func TestSharedConstNodes(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`(list nil true false -2 -1 0 1 31 32 33 1.0 "s")`, `[nil true false -2 -1 0 1 31 32 33 1.0 "s"]`},
		{`(+ -1 32)`, `31`},
		{`(if false 1 (if nil 2 (if true 33 4)))`, `33`},
		{`(let [a 0 b -1] [(+ a b) (str nil) (not false)])`, `[-1 "" true]`},
		{`((fn [x] (+ x 32)) 1)`, `33`},
	} {
		res, err := Exec(context.Background(), c.src, Options{})
		if err != nil || core.PrStr(res.Value) != c.want {
			t.Errorf("%s: %v %v, want %s", c.src, core.PrStr(res.Value), err, c.want)
		}
	}
}
