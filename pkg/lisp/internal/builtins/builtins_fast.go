package builtins

import (
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// attachFast sets fn1/fn2 on the builtins that have a fast path. It runs
// once, while the table is built. Each entry is one flat function: these
// run once per loop iteration, so no helper closures in between.
func attachFast(r *registry) {
	r.builtin("+").Fn2 = func(th *core.Thread, x, y core.Value) core.Value { return addNum(th, "+", x, y, 1) }
	r.builtin("-").Fn2 = func(th *core.Thread, x, y core.Value) core.Value { return subNum(th, x, y, 1) }
	r.builtin("*").Fn2 = func(th *core.Thread, x, y core.Value) core.Value { return mulNum(th, x, y, 1) }
	r.builtin("inc").Fn1 = func(th *core.Thread, x core.Value) core.Value { return addNum(th, "inc", x, int64(1), 1) }
	r.builtin("dec").Fn1 = func(th *core.Thread, x core.Value) core.Value { return addNum(th, "dec", x, int64(-1), 1) }
	lt, gt, le, ge := r.builtin("<"), r.builtin(">"), r.builtin("<="), r.builtin(">=")
	lt.Fn2 = func(th *core.Thread, x, y core.Value) core.Value {
		if p, q, ok := Ints2(x, y); ok {
			return p < q
		}
		if p, q, ok := floats2(x, y); ok {
			return p < q
		}
		return core.SlowCall2(th, lt, x, y)
	}
	gt.Fn2 = func(th *core.Thread, x, y core.Value) core.Value {
		if p, q, ok := Ints2(x, y); ok {
			return p > q
		}
		if p, q, ok := floats2(x, y); ok {
			return p > q
		}
		return core.SlowCall2(th, gt, x, y)
	}
	le.Fn2 = func(th *core.Thread, x, y core.Value) core.Value {
		if p, q, ok := Ints2(x, y); ok {
			return p <= q
		}
		if p, q, ok := floats2(x, y); ok {
			return p <= q
		}
		return core.SlowCall2(th, le, x, y)
	}
	ge.Fn2 = func(th *core.Thread, x, y core.Value) core.Value {
		if p, q, ok := Ints2(x, y); ok {
			return p >= q
		}
		if p, q, ok := floats2(x, y); ok {
			return p >= q
		}
		return core.SlowCall2(th, ge, x, y)
	}
	eq, ne := r.builtin("="), r.builtin("not=")
	eq.Fn2 = func(th *core.Thread, x, y core.Value) core.Value {
		if same, ok := FastEqual(x, y); ok {
			return same
		}
		return core.SlowCall2(th, eq, x, y)
	}
	ne.Fn2 = func(th *core.Thread, x, y core.Value) core.Value {
		if same, ok := FastEqual(x, y); ok {
			return !same
		}
		return core.SlowCall2(th, ne, x, y)
	}
	first, rest, empty, count, get := r.builtin("first"), r.builtin("rest"), r.builtin("empty?"), r.builtin("count"), r.builtin("get")
	first.Fn1 = func(th *core.Thread, x core.Value) core.Value {
		if v, ok := x.(*core.Vector); ok {
			if v.Len() == 0 {
				return nil
			}
			return v.At(0)
		}
		return core.SlowCall1(th, first, x)
	}
	rest.Fn1 = func(th *core.Thread, x core.Value) core.Value {
		if v, ok := x.(*core.Vector); ok {
			return v.Sub(min(1, v.Len()), v.Len())
		}
		return core.SlowCall1(th, rest, x)
	}
	empty.Fn1 = func(th *core.Thread, x core.Value) core.Value {
		if v, ok := x.(*core.Vector); ok {
			return v.Len() == 0
		}
		return core.SlowCall1(th, empty, x)
	}
	count.Fn1 = func(th *core.Thread, x core.Value) core.Value {
		if v, ok := x.(*core.Vector); ok {
			return core.Int(int64(v.Len()))
		}
		return core.SlowCall1(th, count, x)
	}
	nth := r.builtin("nth")
	nth.Fn2 = func(th *core.Thread, x, y core.Value) core.Value {
		if v, ok := x.(*core.Vector); ok {
			if i, ok := y.(int64); ok && i >= 0 && i < int64(v.Len()) {
				return v.At(int(i))
			}
		}
		return core.SlowCall2(th, nth, x, y)
	}
	get.Fn2 = func(th *core.Thread, x, y core.Value) core.Value {
		switch m := x.(type) {
		case *core.Map:
			v, _ := m.Get(y)
			return v
		case core.HostMap:
			v, _ := m.Get(y)
			return v
		}
		return core.SlowCall2(th, get, x, y)
	}
	r.builtin("not").Fn1 = func(th *core.Thread, x core.Value) core.Value { return !core.Truthy(x) }
	r.builtin("nil?").Fn1 = func(th *core.Thread, x core.Value) core.Value { return x == nil }
	r.builtin("some?").Fn1 = func(th *core.Thread, x core.Value) core.Value { return x != nil }
}

// Ints2 returns both values as int64 when both are integers.
func Ints2(x, y core.Value) (int64, int64, bool) {
	if p, ok := x.(int64); ok {
		if q, ok := y.(int64); ok {
			return p, q, true
		}
	}
	return 0, 0, false
}

// floats2 returns both values as float64 when both are numbers, at least
// one a float, and neither NaN (NaN comparisons take the general path).
func floats2(x, y core.Value) (float64, float64, bool) {
	var p, q float64
	switch a := x.(type) {
	case float64:
		p = a
	case int64:
		p = float64(a)
	default:
		return 0, 0, false
	}
	switch b := y.(type) {
	case float64:
		q = b
	case int64:
		if _, isInt := x.(int64); isInt {
			return 0, 0, false
		}
		q = float64(b)
	default:
		return 0, 0, false
	}
	if p != p || q != q {
		return 0, 0, false
	}
	return p, q, true
}

// FastEqual decides = for two integers, strings or keywords (ok false:
// use the general Equal).
func FastEqual(x, y core.Value) (same, ok bool) {
	switch p := x.(type) {
	case int64:
		if q, ok := y.(int64); ok {
			return p == q, true
		}
	case string:
		if q, ok := y.(string); ok {
			return p == q, true
		}
	case *core.Keyword:
		if q, ok := y.(*core.Keyword); ok {
			return p == q || p.Name == q.Name, true
		}
	}
	return false, false
}
