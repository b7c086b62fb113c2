package agentrun

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/messages"
)

func constTool(v int64) agent.Tool {
	return agent.Func(func(context.Context, map[string]any) (any, error) { return v, nil })
}

func TestRunnerLoadsACompiledProgramOnce(t *testing.T) {
	ctx := context.Background()
	r := New(Config{})
	spec := &messages.CompiledSpec{Program: "(fn [{:keys [n]}] (+ n (tool/base {})))", Signature: "(n :int) -> :int"}
	key := newCompiledKey(spec.Program, spec.Signature, []string{"base"})
	var kept *agent.Compiled
	for i, base := range []int64{1, 2, 3} {
		c, err := r.loadCompiled(spec, map[string]agent.Tool{"base": constTool(base)}, messages.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Execute(ctx, map[string]any{"n": int64(10)})
		if err != nil || st.Return != 10+base {
			t.Fatalf("mission %d: return %v, err %v; want %d (its own tool)", i, st.Return, err, 10+base)
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
	// what the Runner keeps calls no mission's tool
	if _, err := kept.Execute(ctx, map[string]any{"n": int64(1)}); err == nil || !strings.Contains(err.Error(), errUnboundTool.Error()) {
		t.Fatalf("the kept program's tool: err = %v, want %v", err, errUnboundTool)
	}
	// other tools are another program
	if _, err := r.loadCompiled(spec, map[string]agent.Tool{"base": constTool(1), "more": constTool(1)}, messages.Limits{}); err != nil {
		t.Fatal(err)
	}
	if n := r.compiled.len(); n != 2 {
		t.Fatalf("%d programs kept after other tools, want 2", n)
	}
	// a program that does not load fails every time and is not kept
	bad := &messages.CompiledSpec{Program: "(fn [a b] a)", Signature: ":int"}
	for range 2 {
		if _, err := r.loadCompiled(bad, nil, messages.Limits{}); err == nil || !strings.Contains(err.Error(), "exactly one argument") {
			t.Fatalf("bad program: err = %v", err)
		}
	}
	if n := r.compiled.len(); n != 2 {
		t.Fatalf("%d programs kept after a bad one, want 2", n)
	}
}

func TestCompiledCacheBounds(t *testing.T) {
	c, err := agent.Load("(fn [_] 1)", ":int", agent.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
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
