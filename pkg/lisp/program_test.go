package lisp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestProgramRunsMany: one compiled Program run from many goroutines at
// once, each run with its own context, memory and tools, gives each run's
// own answer (run under -race in CI): keywords interned at run time, pmap
// branches, tool calls and defs do not leak between runs.
func TestProgramRunsMany(t *testing.T) {
	src := `(def seen (count ctx/rs))
	        (let [k (keyword (str "n" ctx/i))
	              doubled (pmap #(* 2 (:qty %)) ctx/rs)
	              echoed (tool/echo {:v ctx/i})]
	          {:k k :sum (reduce + doubled) :echo (:v echoed) :base base})`
	p, err := Compile(src, Options{Tools: core.Tools{"echo": nil}, Memory: map[string]any{"base": nil}})
	if err != nil {
		t.Fatal(err)
	}
	echo := core.ToolFunc(func(_ context.Context, args map[string]any) (any, error) { return args, nil })
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 8 {
				i := g*8 + r
				rs := make([]map[string]any, i+1)
				want := int64(0)
				for j := range rs {
					rs[j] = map[string]any{"qty": int64(j)}
					want += int64(2 * j)
				}
				res, err := p.Run(context.Background(), Options{
					Context: map[string]any{"rs": rs, "i": int64(i)}, Memory: map[string]any{"base": int64(100 + i)},
					Tools: core.Tools{"echo": echo}, Timeout: 10 * time.Second})
				if err != nil {
					errs <- err
					return
				}
				got := core.ToGo(res.Value).(map[string]any)
				if got["k"] != fmt.Sprintf("n%d", i) || got["sum"] != want || got["echo"] != int64(i) || got["base"] != int64(100+i) {
					errs <- fmt.Errorf("run %d: %v", i, got)
				}
				if n := res.Memory["seen"]; n != int64(i+1) || len(res.ToolCalls) != 1 {
					errs <- fmt.Errorf("run %d: memory seen %v, %d tool calls", i, n, len(res.ToolCalls))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestProgramErrors: Compile reports read and compile errors with their
// position; Run refuses a run without a tool the program calls, naming it.
func TestProgramErrors(t *testing.T) {
	_, err := Compile("(+ 1\n  (foo 2))", Options{})
	var le *core.Error
	if !errors.As(err, &le) || le.Kind != core.KindUnbound || le.Pos.Line != 2 {
		t.Fatalf("compile error = %#v", err)
	}
	if _, err := Compile(`(tool/nope {})`, Options{Tools: core.Tools{"search": nil}}); !errors.As(err, &le) || le.Kind != core.KindUnknownTool {
		t.Fatalf("unknown tool at compile: %v", err)
	}
	p, err := Compile(`(tool/search {:q "x"})`, Options{Tools: core.Tools{"search": nil}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background(), Options{Tools: core.Tools{"other": nil}})
	if !errors.As(err, &le) || le.Kind != core.KindUnknownTool || res.Err != le || le.Msg == "" {
		t.Fatalf("run without the tool: %v", err)
	}
	if p.Source() != `(tool/search {:q "x"})` {
		t.Fatalf("Source = %q", p.Source())
	}
}

// BenchmarkProgram: a tiny program and a filter over 10 records, run from
// a compiled Program (run) and read, compiled and run (exec).
func BenchmarkProgram(b *testing.B) {
	recs := make([]map[string]any, 10)
	for i := range recs {
		recs[i] = map[string]any{"id": int64(i), "active": i%2 == 0}
	}
	opts := Options{Context: map[string]any{"rs": recs}}
	for _, prog := range []struct{ name, src string }{
		{"add", `(+ 1 2)`},
		{"filter10", `(count (filter :active ctx/rs))`},
	} {
		p, err := Compile(prog.src, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(prog.name+"/run", func(b *testing.B) {
			loopCPU(b, func() { p.Run(context.Background(), opts) })
		})
		b.Run(prog.name+"/exec", func(b *testing.B) {
			loopCPU(b, func() { Exec(context.Background(), prog.src, opts) })
		})
	}
}

// TestProgramRunAllocations checks what one run of a tiny program from a
// Program allocates: only its Result. The context is read in place (no
// view of it is made), a run makes no memory map when it keeps nothing,
// no frames when it calls no function, no meter when it calls no tool,
// and a run that leaves nothing referring to its host and Thread hands
// them to the next run. A ctx/ read converts only the value it reads, and
// a fused pipeline over host records in ctx/ reads them without a view.
func TestProgramRunAllocations(t *testing.T) {
	p, err := Compile(`(+ 1 2)`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Context: map[string]any{"n": int64(1)}}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := p.Run(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%.0f allocations per run, want at most 1 (the Result)", allocs)
	}
	recs := make([]map[string]any, 10)
	for i := range recs {
		recs[i] = map[string]any{"id": int64(i), "active": i%2 == 0}
	}
	p, err = Compile(`(count (filter :active ctx/rs))`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts = Options{Context: map[string]any{"rs": recs, "other": []any{"x"}}}
	allocs = testing.AllocsPerRun(100, func() {
		if res, err := p.Run(context.Background(), opts); err != nil || res.Value != int64(5) {
			t.Fatalf("filter: %v %v", res.Value, err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%.0f allocations per run of a filter over ctx/rs, want at most 1 (the Result)", allocs)
	}
	// Exec: the Program, the compiler, the reader's first slab of forms
	// and the run's state are one allocation (the run's host serves the
	// compile first), and the compile makes no map for memory names when
	// memory is empty
	for src, want := range map[string]float64{`(+ 1 2)`: 9, `(count (filter :active ctx/rs))`: 9} {
		allocs = testing.AllocsPerRun(100, func() {
			if _, err := Exec(context.Background(), src, opts); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > want {
			t.Fatalf("%.0f allocations per Exec of %s, want at most %.0f", allocs, src, want)
		}
	}
	// a def in a run that started with no memory makes the map
	res, err := Exec(context.Background(), `(def x 1) (defn f [] x) (f)`, Options{})
	if err != nil || res.Memory["x"] != int64(1) || core.PrStr(res.Value) != "1" {
		t.Fatalf("def: %v %v %v", res.Memory, res.Value, err)
	}
}

// TestProgramCtxReads: ctx/ values read in place, more of them than the
// run caches without a map, each collection read twice gives an equal
// value (converted once), scalars as they are, a missing key falls back
// to memory, and a value the interpreter cannot hold fails with its key.
func TestProgramCtxReads(t *testing.T) {
	src := `[(= ctx/a ctx/a) (= ctx/f ctx/f) (count ctx/a) (count ctx/b) (count ctx/c)
	         (count ctx/d) (count ctx/e) (count ctx/f) ctx/s ctx/n ctx/m]`
	p, err := Compile(src, Options{Memory: map[string]any{"m": nil}})
	if err != nil {
		t.Fatal(err)
	}
	ctxData := map[string]any{"s": "str", "n": int64(7)}
	for i, k := range []string{"a", "b", "c", "d", "e", "f"} {
		ctxData[k] = make([]any, i+1)
	}
	for range 3 {
		res, err := p.Run(context.Background(), Options{Context: ctxData, Memory: map[string]any{"m": int64(9)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := core.PrStr(res.Value); got != `[true true 1 2 3 4 5 6 "str" 7 9]` {
			t.Fatalf("ctx reads = %s", got)
		}
	}
	p, err = Compile(`(count ctx/bad)`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run(context.Background(), Options{Context: map[string]any{"bad": []any{make(chan int)}}})
	var le *core.Error
	if !errors.As(err, &le) || le.Kind != core.KindType || !strings.Contains(le.Msg, "bad") {
		t.Fatalf("bad ctx value: %v", err)
	}
}

// TestProgramReusedStateIsolated: runs of one Program that return scalars
// hand their host and Thread to later runs; closures and lazy sequences
// kept from runs of the same Program (returned, or kept in memory) and
// used in other runs on other goroutines, next to runs with tools, pmap,
// prints and failures, give each run its own answer (run under -race: a
// closure that still referred to a recycled Thread would race).
func TestProgramReusedStateIsolated(t *testing.T) {
	src := `(cond
	          (= ctx/mode "make") (let [s (map #(* % ctx/k) (range 4))] (fn [x] (+ x (reduce + s))))
	          (= ctx/mode "use") (+ (f ctx/k) (count (name (keyword (str "k" ctx/k)))))
	          (= ctx/mode "pmap") (reduce + (pmap #(* % ctx/k) [1 2 3]))
	          (= ctx/mode "tool") (:v (tool/echo {:v ctx/k}))
	          (= ctx/mode "print") (do (println "k" ctx/k) ctx/k)
	          :else (fail (str "no " ctx/k)))`
	p, err := Compile(src, Options{Tools: core.Tools{"echo": nil}, Memory: map[string]any{"f": nil}})
	if err != nil {
		t.Fatal(err)
	}
	echo := core.ToolFunc(func(_ context.Context, args map[string]any) (any, error) { return args, nil })
	run := func(mode string, k int64, f any) (*Result, error) {
		return p.Run(context.Background(), Options{Context: map[string]any{"mode": mode, "k": k},
			Memory: map[string]any{"f": f}, Tools: core.Tools{"echo": echo}})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := int64(g*1000 + i)
				made, err := run("make", k, nil)
				if err != nil {
					errs <- err
					return
				}
				f := made.Value // (fn [x] (+ x 6k)), its lazy seq not yet realised
				for r := range 3 {
					res, err := run("use", k+int64(r), f)
					want := (k + int64(r)) + 6*k + int64(len(fmt.Sprint("k", k+int64(r))))
					if err != nil || res.Value != want {
						errs <- fmt.Errorf("use %d: %v %v, want %d", k, res.Value, err, want)
						return
					}
				}
				for _, c := range []struct {
					mode string
					want any
				}{{"pmap", 6 * k}, {"tool", k}, {"print", k}} {
					res, err := run(c.mode, k, nil)
					if err != nil || res.Value != c.want {
						errs <- fmt.Errorf("%s %d: %v %v", c.mode, k, res.Value, err)
						return
					}
					if c.mode == "print" && (len(res.Prints) != 1 || res.Prints[0] != fmt.Sprint("k ", k)) {
						errs <- fmt.Errorf("prints %d: %q", k, res.Prints)
						return
					}
					if c.mode == "tool" && (len(res.ToolCalls) != 1) {
						errs <- fmt.Errorf("tool calls %d: %v", k, res.ToolCalls)
						return
					}
				}
				if res, err := run("other", k, nil); err == nil || res.Err.Msg != fmt.Sprint("no ", k) {
					errs <- fmt.Errorf("fail %d: %v", k, err)
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
}

// TestRunDeadline: a run's start is read on the monotonic clock alone;
// the deadline a tool sees in its context reads as the wall clock does
// (the run's timeout from now), a timeout past what a Duration can add to
// the start does not end the run at once, and an unlimited one is far
// off.
func TestRunDeadline(t *testing.T) {
	p, err := Compile(`(tool/t {})`, Options{Tools: core.Tools{"t": nil}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		timeout  time.Duration
		min, max time.Duration // of the deadline, from the wall clock now
	}{
		{0, DefaultTimeout - 500*time.Millisecond, DefaultTimeout + 500*time.Millisecond},
		{3 * time.Second, 2500 * time.Millisecond, 3500 * time.Millisecond},
		{-1, 99 * 365 * 24 * time.Hour, 101 * 365 * 24 * time.Hour},
		{math.MaxInt64, 200 * 365 * 24 * time.Hour, math.MaxInt64},
	} {
		var deadline time.Time
		var has bool
		tool := core.ToolFunc(func(ctx context.Context, _ map[string]any) (any, error) {
			deadline, has = ctx.Deadline()
			return int64(1), nil
		})
		res, err := p.Run(context.Background(), Options{Tools: core.Tools{"t": tool}, Limits: messages.Limits{ProgramTimeout: c.timeout}})
		if err != nil || res.Value != int64(1) || !has {
			t.Fatalf("timeout %v: %v %v (deadline set: %v)", c.timeout, res.Value, err, has)
		}
		// Round(0) drops the monotonic reading: wall clock against wall clock
		if d := deadline.Round(0).Sub(time.Now().Round(0)); d < c.min || d > c.max {
			t.Errorf("timeout %v: the tool's deadline is %v from now, want %v to %v", c.timeout, d, c.min, c.max)
		}
	}
}

// TestRecycleClearsRunState: after runs that set every field of a
// Thread and its Host that a run sets (tools, host functions, a meter,
// pmap, prints, memory, closures, calls, ctx reads past the small cache,
// keywords interned at run time, a scrubber, failures), core.Recycle
// leaves each field as in a zero Thread and Host but those it keeps: the
// Thread's Host, its frames (linked to it, holding nothing) and its value
// stack (every slot nil). The test also checks that the runs set every
// field they can, so that a field added to Thread or Host and not to
// Recycle fails here.
func TestRecycleClearsRunState(t *testing.T) {
	wide := map[string]any{}
	for i := range 10 {
		wide[fmt.Sprint("f", i)] = int64(i)
	}
	ctxData := map[string]any{"rs": []map[string]any{{"active": true}, {"active": false}}, "n": int64(3), "wide": wide}
	for i, k := range []string{"a", "b", "c", "d", "e", "f"} {
		ctxData[k] = make([]any, i+1)
	}
	host := core.HostFuncs{"llm-query": func(context.Context, []any) (any, error) { return "ok", nil }}
	scrub := func(s string, _ bool) string { return s }
	progs := []struct {
		src  string
		opts Options
	}{
		{`(let [f (fn g [x] (if (> x 0) (g (dec x)) (count ctx/rs)))
		        xs (map f (range ctx/n))]
		    (println "n" (count xs) (count ctx/a) (count ctx/b) (count ctx/c) (count ctx/d) (count ctx/e) (count ctx/f))
		    (def kept (keyword (str "k" ctx/n)))
		    (loop [i 0 acc []] (if (< i 3) (recur (inc i) (conj acc i)) acc))
		    [(tool/echo {:v 1}) (llm-query {:prompt "p"}) (pmap inc [1 2]) (count (filter :active ctx/rs)) f])`,
			Options{Tools: core.Tools{"echo": core.ToolFunc(func(_ context.Context, a map[string]any) (any, error) { return a, nil })},
				Host: host, Scrub: scrub, Memory: map[string]any{"m": int64(1)}, LoopLimit: 100, MaxCallDepth: 50,
				Meter: core.NewMeter(1<<20, "test"), Limits: messages.Limits{MaxToolCalls: 5}}},
		{`(count (assoc ctx/wide :f1 2))`, Options{}},
		{`((fn [n acc] (if (zero? n) acc (recur (dec n) (+ acc n)))) 5 0)`, Options{plainLoops: true}},
		{`((fn [x] (/ 1 x)) 0)`, Options{}},
		{`(let [m (reduce (fn [m i] (assoc m (keyword (str "f" i)) i)) {} (range 12))] (count (assoc m :x 1)))`, Options{}},
		{`(fail "no")`, Options{}},
		{`(count ctx/rs)`, Options{Context: ctxData}},
		{`(+ m 1)`, Options{Memory: map[string]any{"m": int64(1)}}}, // memory read in place (th.MemShared)
	}
	setBefore := map[string]bool{}
	for _, pr := range progs {
		opts := pr.opts
		if opts.Context == nil {
			opts.Context = ctxData
		}
		p, err := Compile(pr.src, opts)
		if err != nil {
			t.Fatal(err)
		}
		rs := new(runState)
		p.run(context.Background(), &opts, core.Clock(), rs)
		nonZeroFields(reflect.ValueOf(&rs.th).Elem(), "th.", setBefore)
		nonZeroFields(reflect.ValueOf(&rs.h).Elem(), "h.", setBefore)
		core.Recycle(&rs.th, &rs.h)
		after := map[string]bool{}
		nonZeroFields(reflect.ValueOf(&rs.th).Elem(), "th.", after)
		nonZeroFields(reflect.ValueOf(&rs.h).Elem(), "h.", after)
		for f := range after {
			switch f {
			case "th.Host", "th.frames", "th.frame0", "th.frameBuf", "th.stack":
			default:
				t.Errorf("%s: %s is set after Recycle", pr.src, f)
			}
		}
		if rs.th.Host != nil && rs.th.Host != &rs.h {
			t.Errorf("th.Host is not the run's Host")
		}
		frames := reflect.ValueOf(&rs.th).Elem().FieldByName("frames")
		for i := range frames.Len() {
			fr := frames.Index(i).Elem()
			if fr.FieldByName("Th").Pointer() != reflect.ValueOf(&rs.th).Pointer() {
				t.Errorf("frame %d is not linked to its Thread", i)
			}
			for _, name := range []string{"Slots", "Caps", "Self"} {
				if !fr.FieldByName(name).IsZero() {
					t.Errorf("frame %d keeps its %s", i, name)
				}
			}
		}
		stack := reflect.ValueOf(&rs.th).Elem().FieldByName("stack")
		for i := range stack.Len() {
			if !stack.Index(i).IsZero() {
				t.Errorf("stack slot %d is kept", i)
			}
		}
	}
	// fields these runs do not set: locks (unlocked after a run), and the
	// state of pmap branches and of converters, which a top-level Thread
	// does not have
	unset := map[string]bool{"h.ctxMu": true, "h.kwMu": true, "h.mu": true, "th.child": true, "th.boxer": true}
	for _, th := range []reflect.Value{reflect.ValueOf(core.Thread{}), reflect.ValueOf(core.Host{})} {
		prefix := "th."
		if th.Type() == reflect.TypeOf(core.Host{}) {
			prefix = "h."
		}
		for i := range th.NumField() {
			f := prefix + th.Type().Field(i).Name
			if !setBefore[f] && !unset[f] {
				t.Errorf("%s is set by none of the runs: make one set it (and Recycle clear it)", f)
			}
		}
	}
}

// nonZeroFields adds to set the name of each field of struct v that is
// not zero.
func nonZeroFields(v reflect.Value, prefix string, set map[string]bool) {
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			set[prefix+v.Type().Field(i).Name] = true
		}
	}
}

// TestProgramRecycledRunsStartClean: runs of one Program that return
// scalars hand their Thread and Host to the next run, which sees its own
// context (not the ctx/ values the earlier run cached), its own keywords,
// prints and step count, and no memory, calls or limits of the earlier
// run.
func TestProgramRecycledRunsStartClean(t *testing.T) {
	src := `(if ctx/loud (do (println "n" ctx/n) 0)
	          (+ (count ctx/rs) (count (name (keyword (str "k" ctx/n)))) (count (filter :active ctx/rs))))`
	p, err := Compile(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var steps int64
	for i := range 50 {
		n := int64(i % 7)
		rs := make([]map[string]any, n)
		for j := range rs {
			rs[j] = map[string]any{"active": j%2 == 0}
		}
		loud := i%5 == 4
		res, err := p.Run(context.Background(), Options{Context: map[string]any{"rs": rs, "n": n, "loud": loud}})
		if err != nil {
			t.Fatal(err)
		}
		if loud {
			if res.Value != int64(0) || len(res.Prints) != 1 || res.Prints[0] != fmt.Sprint("n ", n) {
				t.Fatalf("run %d: %v, prints %q", i, res.Value, res.Prints)
			}
			continue
		}
		want := n + int64(len(fmt.Sprint("k", n))) + (n+1)/2
		if res.Value != want || res.Prints != nil || res.Memory != nil || res.ToolCalls != nil || res.Written != nil {
			t.Fatalf("run %d: %v (want %d), prints %q, memory %v, calls %v", i, res.Value, want, res.Prints, res.Memory, res.ToolCalls)
		}
		if n == 3 {
			if steps != 0 && res.Steps != steps {
				t.Fatalf("run %d: %d steps, an earlier run of the same input took %d", i, res.Steps, steps)
			}
			steps = res.Steps
		}
	}
}
