package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRebindSharesTheDefinitionWithOtherTools(t *testing.T) {
	const src = "(defn helper [x] (* 10 x))\n(fn [{:keys [n]}] (+ n (helper (tool/base {}))))"
	c, err := Load(src, "(n :int) -> :int", LoadOptions{Tools: map[string]Tool{"base": constTool(int64(1))}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Rebind(map[string]Tool{"base": constTool(int64(2))}, Limits{MaxToolCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.fn != c.fn || r.call != c.call {
		t.Fatal("the rebound program reads its definition again")
	}
	for _, tc := range []struct {
		c    *Compiled
		want int64
	}{{c, 13}, {r, 23}} {
		st, err := tc.c.Execute(bg, map[string]any{"n": int64(3)})
		if err != nil {
			t.Fatal(err)
		}
		if st.Return != tc.want {
			t.Fatalf("return = %v, want %d", st.Return, tc.want)
		}
	}
	// the rebound limits bound each execution; the original's do not change
	twice := "(fn [_] (+ (tool/base {}) (tool/base {})))"
	c2, err := Load(twice, ":int", LoadOptions{Tools: map[string]Tool{"base": constTool(int64(1))}})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c2.Rebind(map[string]Tool{"base": constTool(int64(1))}, Limits{MaxToolCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Execute(bg, nil); err == nil || !strings.Contains(err.Error(), "tool call limit exceeded (1 calls)") {
		t.Fatalf("rebound with max_tool_calls 1: err = %v", err)
	}
	if st, err := c2.Execute(bg, nil); err != nil || st.Return != int64(2) {
		t.Fatalf("original after rebinding: %v %v", st.Return, err)
	}
}

func TestRebindRefusesOtherTools(t *testing.T) {
	c, err := Load("(fn [_] (tool/base {}))", ":int", LoadOptions{Tools: map[string]Tool{"base": constTool(int64(1))}})
	if err != nil {
		t.Fatal(err)
	}
	classify, err := NewLLMTool(LLMToolSpec{Prompt: "Is {{subject}} urgent?", Signature: "(subject :string) -> {urgent :bool}"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		tools map[string]Tool
		is    error
		field string
	}{
		{"missing", map[string]Tool{}, ErrInvalidCompiled, "tools[base]"},
		{"renamed", map[string]Tool{"other": constTool(int64(1))}, ErrInvalidCompiled, "tools[base]"},
		{"extra", map[string]Tool{"base": constTool(int64(1)), "more": constTool(int64(1))}, ErrInvalidCompiled, "tools[more]"},
		{"llm tool", map[string]Tool{"base": classify}, ErrNotCompilable, "tools[base]"},
		{"bad signature", map[string]Tool{"base": FuncSig("(x :nope) -> :int", nil)}, ErrInvalidCompiled, "tools[base].signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Rebind(tc.tools, Limits{})
			var e *Error
			if !errors.Is(err, tc.is) || !errors.As(err, &e) || e.Field != tc.field {
				t.Fatalf("err = %v, want %v on %s", err, tc.is, tc.field)
			}
		})
	}
}

func TestRebindParsesAToolSignatureOnce(t *testing.T) {
	const sig = "(id :int) -> :int"
	tool := func(v int64) Tool {
		return FuncSig(sig, func(context.Context, map[string]any) (any, error) { return v, nil })
	}
	c, err := Load("(fn [_] (tool/base {:id 1}))", ":int", LoadOptions{Tools: map[string]Tool{"base": tool(1)}})
	if err != nil {
		t.Fatal(err)
	}
	same, err := c.Rebind(map[string]Tool{"base": tool(2)}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if same.tools["base"].decl != c.tools["base"].decl || same.tools["base"].sig != c.tools["base"].sig {
		t.Fatal("the same signature is parsed again")
	}
	if st, err := same.Execute(bg, nil); err != nil || st.Return != int64(2) {
		t.Fatalf("rebound: %v %v", st.Return, err)
	}
	// another signature is parsed and checked: here the call's argument
	// does not fit it
	other, err := c.Rebind(map[string]Tool{"base": FuncSig("(id :string) -> :int", func(context.Context, map[string]any) (any, error) {
		return int64(3), nil
	})}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if other.tools["base"].decl == c.tools["base"].decl {
		t.Fatal("another signature is not parsed")
	}
	if _, err := other.Execute(bg, nil); err == nil || !strings.Contains(err.Error(), "id") {
		t.Fatalf("a call that does not fit the rebound signature: err = %v", err)
	}
}

// WithLimits bounds each execution of a copy by other limits, sharing the
// definition and the tools; the same limits give the program itself.
func TestWithLimitsSharesTheProgram(t *testing.T) {
	twice := "(fn [_] (+ (tool/base {}) (tool/base {})))"
	c, err := Load(twice, ":int", LoadOptions{Tools: map[string]Tool{"base": constTool(int64(1))}})
	if err != nil {
		t.Fatal(err)
	}
	if c.WithLimits(Limits{}) != c {
		t.Fatal("the same limits made a copy")
	}
	l := c.WithLimits(Limits{MaxToolCalls: 1})
	if l == c || l.fn != c.fn || l.call != c.call {
		t.Fatal("other limits: not a copy sharing the definition")
	}
	if _, err := l.Execute(bg, nil); err == nil || !strings.Contains(err.Error(), "tool call limit exceeded (1 calls)") {
		t.Fatalf("with max_tool_calls 1: err = %v", err)
	}
	if st, err := c.Execute(bg, nil); err != nil || st.Return != int64(2) {
		t.Fatalf("original after WithLimits: %v %v", st.Return, err)
	}
}
