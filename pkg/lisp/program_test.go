package lisp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
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
// Program allocates: its Result, its host and Thread (one allocation) and
// the context's view; no memory maps or frames when the program keeps
// nothing and calls no function, and no meter when it calls no tool.
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
	if allocs > 3 {
		t.Fatalf("%.0f allocations per run, want at most 3", allocs)
	}
	// a def in a run that started with no memory makes the map
	res, err := Exec(context.Background(), `(def x 1) (defn f [] x) (f)`, Options{})
	if err != nil || res.Memory["x"] != int64(1) || core.PrStr(res.Value) != "1" {
		t.Fatalf("def: %v %v %v", res.Memory, res.Value, err)
	}
}
