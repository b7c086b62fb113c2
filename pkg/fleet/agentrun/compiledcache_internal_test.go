package agentrun

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// fakeBox is a compiled mission's Toolbox whose every tool returns base
// (a tool named in sigs has that signature; one in tools is that one)
// and counts its calls.
type fakeBox struct {
	base  int64
	sigs  map[string]string
	tools map[string]fleet.Tool
	calls atomic.Int64
}

type fakeTool struct{ name, sig string }

func (t fakeTool) Name() string                                      { return t.name }
func (t fakeTool) Signature() string                                 { return t.sig }
func (t fakeTool) Description() string                               { return "" }
func (t fakeTool) Call(context.Context, map[string]any) (any, error) { return nil, nil }

func (b *fakeBox) Get(_ context.Context, name string) (fleet.Tool, error) {
	if t, ok := b.tools[name]; ok {
		return t, nil
	}
	return fakeTool{name, b.sigs[name]}, nil
}

func (b *fakeBox) CallAs(context.Context, string, map[string]any, fleet.ResultDecoder) (any, error) {
	b.calls.Add(1)
	return b.base, nil
}

// A Runner loads a compiled program once for the missions that run it
// with tools of the same names and shapes; each execution calls the tools
// of the mission its context carries.
func TestRunnerLoadsACompiledProgramOnce(t *testing.T) {
	r := New(Config{})
	spec := &messages.CompiledSpec{Program: "(fn [{:keys [n]}] (+ n (tool/base {})))", Signature: "(n :int) -> :int"}
	key := newCompiledKey(spec.Program, spec.Signature, []string{"base"})
	var kept *keptCompiled
	for i, base := range []int64{1, 2, 3} {
		box := &fakeBox{base: base}
		lim := messages.Limits{MaxSteps: int64(1000 * (i + 1))}
		c, err := r.loadCompiled(t.Context(), spec, []string{"base"}, box, lim)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.WithValue(t.Context(), compiledCallKey{}, &compiledCall{box: box})
		st, err := c.Execute(ctx, map[string]any{"n": int64(10)})
		if err != nil || st.Return != 10+base || box.calls.Load() != 1 {
			t.Fatalf("mission %d: return %v, err %v, %d calls; want %d (its own tool)", i, st.Return, err, box.calls.Load(), 10+base)
		}
		k := r.compiled.get(key)
		if k == nil || (kept != nil && k != kept) {
			t.Fatalf("mission %d: the program is not kept once (%p, was %p)", i, k, kept)
		}
		kept = k
	}
	if n := r.compiled.len(); n != 1 {
		t.Fatalf("%d programs kept, want 1", n)
	}
	// outside a mission the kept program calls no tool
	if _, err := kept.c.Execute(t.Context(), map[string]any{"n": int64(1)}); err == nil || !strings.Contains(err.Error(), errUnboundTool.Error()) {
		t.Fatalf("the kept program's tool: err = %v, want %v", err, errUnboundTool)
	}
	// a tool whose signature changed is bound again, and kept so
	box := &fakeBox{base: 5, sigs: map[string]string{"base": "() -> :int"}}
	for range 2 {
		if _, err := r.loadCompiled(t.Context(), spec, []string{"base"}, box, messages.Limits{}); err != nil {
			t.Fatal(err)
		}
		if k := r.compiled.get(key); k == kept || k.shapes[0].signature != "() -> :int" {
			t.Fatalf("the program kept with the tool's old shape: %+v", k.shapes)
		}
	}
	// other tools are another program, whatever their order or repeats
	for _, names := range [][]string{{"more", "base"}, {"base", "more", "base"}} {
		if _, err := r.loadCompiled(t.Context(), spec, names, &fakeBox{base: 1}, messages.Limits{}); err != nil {
			t.Fatal(err)
		}
		if n := r.compiled.len(); n != 2 {
			t.Fatalf("%d programs kept after tools %q, want 2", n, names)
		}
	}
	// a program that does not load fails every time and is not kept
	bad := &messages.CompiledSpec{Program: "(fn [a b] a)", Signature: ":int"}
	for range 2 {
		if _, err := r.loadCompiled(t.Context(), bad, nil, &fakeBox{}, messages.Limits{}); err == nil || !strings.Contains(err.Error(), "exactly one argument") {
			t.Fatalf("bad program: err = %v", err)
		}
	}
	if n := r.compiled.len(); n != 2 {
		t.Fatalf("%d programs kept after a bad one, want 2", n)
	}
}

// A mission of a kept program allocates nothing to bind it to its tools:
// the kept program serves it as it is.
func TestKeptCompiledProgramServesAMissionAsItIs(t *testing.T) {
	r := New(Config{})
	spec := &messages.CompiledSpec{Program: "(fn [{:keys [n]}] (+ n (tool/base {})))", Signature: "(n :int) -> :int"}
	// a Toolbox's Get allocates the tool it returns; this one's are made
	box := &fakeBox{base: 1, tools: map[string]fleet.Tool{"base": fakeTool{"base", "() -> :int"}}}
	names := []string{"base"}
	first, err := r.loadCompiled(t.Context(), spec, names, box, messages.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var c *agent.Compiled
	n := testing.AllocsPerRun(100, func() { c, err = r.loadCompiled(t.Context(), spec, names, box, messages.Limits{}) })
	if err != nil || c != first {
		t.Fatalf("a later mission's program: %p, %v; want the kept %p", c, err, first)
	}
	if !raceOn && n > 0 {
		t.Errorf("a mission of a kept program allocates %v times to load it, want none", n)
	}
}

func TestCompiledCacheBounds(t *testing.T) {
	loaded, err := agent.Load("(fn [_] 1)", ":int", agent.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &keptCompiled{c: loaded}
	cache := newCompiledCache()
	key := func(i int, size int) compiledKey {
		p := "(fn [_] " + strconv.Itoa(i) + ")"
		return compiledKey{program: p + strings.Repeat(" ", max(size-len(p), 0))}
	}
	for i := range compiledCacheEntries + 10 {
		cache.put(key(i, 0), c)
	}
	if n := cache.len(); n != compiledCacheEntries {
		t.Fatalf("%d programs kept, want the bound %d", n, compiledCacheEntries)
	}
	if cache.get(key(9, 0)) != nil || cache.get(key(10, 0)) == nil || cache.get(key(compiledCacheEntries+9, 0)) == nil {
		t.Fatal("not the oldest programs let go")
	}
	big := agent.MaxCompiledSource
	for i := range 2 * compiledCacheBytes / big {
		cache.put(key(1000+i, big), c)
		if cache.bytes > compiledCacheBytes {
			t.Fatalf("%d bytes kept, over the bound %d", cache.bytes, compiledCacheBytes)
		}
	}
	if cache.get(key(1000, big)) != nil || cache.get(key(999+2*compiledCacheBytes/big, big)) == nil {
		t.Fatal("not the oldest programs let go by size")
	}
	cache.put(key(-1, compiledCacheBytes+1), c)
	if cache.get(key(-1, compiledCacheBytes+1)) != nil {
		t.Fatal("a program over the whole bound is kept")
	}
}
