package lisp

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// TestFastEntriesMatchFn checks every builtin's fixed-arity entry
// (opt_fastcall.go) against its general Fn on values of every type: the same
// result, or the same error kind and message.
func TestFastEntriesMatchFn(t *testing.T) {
	samples := []core.Value{
		nil, true, false, core.Int(0), core.Int(1), core.Int(-7), core.Int(1 << 40), int64(math.MaxInt64), int64(math.MinInt64),
		0.5, -2.0, 1.0, math.NaN(), math.Inf(1), float64(1 << 53), "", "a", "abc",
		core.NewKeyword("a"), core.NewKeyword("b"), core.EmptyVector, core.NewVector([]core.Value{core.Int(1), core.Int(2)}), core.NewVector([]core.Value{core.Int(9)}),
		core.EmptyMap, core.EmptyMap.Assoc(core.NewKeyword("a"), core.Int(1)), core.EmptySet.Conj(core.Int(1)),
		core.NewLazySeq(func(*core.Thread) (core.Value, bool) { return nil, false }),
	}
	run := func(th *core.Thread, f func() core.Value) (v core.Value, err *core.Error) {
		defer func() {
			if r := recover(); r != nil {
				e, ok := r.(*core.Error)
				if !ok {
					panic(r)
				}
				err = e
			}
		}()
		return f(), nil
	}
	realise := func(v core.Value) core.Value {
		if s, ok := v.(*core.LazySeq); ok {
			return core.NewVector(newTestThread().Seq(s, "test", 1))
		}
		return v
	}
	same := func(a, b core.Value) bool {
		a, b = realise(a), realise(b)
		if fa, ok := a.(float64); ok && math.IsNaN(fa) {
			fb, ok := b.(float64)
			return ok && math.IsNaN(fb)
		}
		return core.Equal(a, b) && core.TypeName(a) == core.TypeName(b)
	}
	checked := 0
	for name, b := range builtins.BuiltinTable() {
		if b.Fn1 == nil && b.Fn2 == nil {
			continue
		}
		th := newTestThread()
		for _, x := range samples {
			if b.Fn1 != nil {
				fv, fe := run(th, func() core.Value { return b.Fn1(th, x) })
				sv, se := run(th, func() core.Value { return b.Fn(th, []core.Value{x}) })
				compareOutcome(t, fmt.Sprintf("(%s %s)", name, core.PrStr(x)), fv, fe, sv, se, same)
				checked++
			}
			if b.Fn2 == nil {
				continue
			}
			for _, y := range samples {
				fv, fe := run(th, func() core.Value { return b.Fn2(th, x, y) })
				sv, se := run(th, func() core.Value { return b.Fn(th, []core.Value{x, y}) })
				compareOutcome(t, fmt.Sprintf("(%s %s %s)", name, core.PrStr(x), core.PrStr(y)), fv, fe, sv, se, same)
				checked++
			}
		}
	}
	if checked < 5000 {
		t.Fatalf("only %d combinations checked", checked)
	}
}

func compareOutcome(t *testing.T, what string, fv core.Value, fe *core.Error, sv core.Value, se *core.Error, same func(a, b core.Value) bool) {
	t.Helper()
	switch {
	case fe != nil || se != nil:
		if fe == nil || se == nil || fe.Kind != se.Kind || fe.Msg != se.Msg {
			t.Errorf("%s: fast path %v / %v, Fn %v / %v", what, fv, fe, sv, se)
		}
	case !same(fv, sv):
		t.Errorf("%s: fast path %s, Fn %s", what, core.PrStr(fv), core.PrStr(sv))
	}
}

// newTestThread returns a Thread with default limits for calling builtins.
func newTestThread() *core.Thread {
	th := &core.Thread{Ctx: context.Background(), MaxDepth: 100, NextCheck: 1 << 62}
	th.Host = &core.Host{}
	return th
}

// TestFastNodesMatchApply compiles calls of the builtins with fast nodes
// (fastNode1/fastNode2) with constant and local arguments and compares
// them with the same call through apply, which uses the general Fn.
func TestFastNodesMatchApply(t *testing.T) {
	lits := []string{"nil", "true", "0", "1", "-7", "1024", "1025", "9223372036854775807", "-9223372036854775808",
		"0.5", "2.0", "##NaN", "##Inf", `""`, `"ab"`, ":a", "[]", "[1 2]", "{}", "{:a 1}", "#{1}", "(range 3)"}
	outcome := func(src string) string {
		res, err := Exec(context.Background(), src, Options{})
		if err != nil {
			e := err.(*core.Error)
			return fmt.Sprintf("error %v %s", e.Kind, e.Msg)
		}
		return core.PrStr(res.Value)
	}
	n := 0
	for name, b := range builtins.BuiltinTable() {
		if b.Fn1 == nil && b.Fn2 == nil || strings.Contains(name, "/") {
			continue
		}
		for _, x := range lits {
			if b.Fn1 != nil {
				want := outcome(fmt.Sprintf("(apply %s [%s])", name, x))
				for _, src := range []string{fmt.Sprintf("(%s %s)", name, x), fmt.Sprintf("(let [x %s] (%s x))", x, name)} {
					if got := outcome(src); got != want {
						t.Errorf("%s: %s, apply gives %s", src, got, want)
					}
					n++
				}
			}
			if b.Fn2 == nil {
				continue
			}
			for _, y := range lits {
				want := outcome(fmt.Sprintf("(apply %s [%s %s])", name, x, y))
				for _, src := range []string{fmt.Sprintf("(%s %s %s)", name, x, y), fmt.Sprintf("(let [x %s y %s] (%s x y))", x, y, name)} {
					if got := outcome(src); got != want {
						t.Errorf("%s: %s, apply gives %s", src, got, want)
					}
					n++
				}
			}
		}
	}
	if n < 5000 {
		t.Fatalf("only %d calls compared", n)
	}
}
