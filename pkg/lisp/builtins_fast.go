package lisp

// attachFast sets fn1/fn2 on the builtins that have a fast path. It runs
// once, while the table is built. Each entry is one flat function: these
// run once per loop iteration, so no helper closures in between.
func attachFast(r *registry) {
	r.builtin("+").fn2 = func(th *Thread, x, y Value) Value { return addNum(th, "+", x, y, 1) }
	r.builtin("-").fn2 = func(th *Thread, x, y Value) Value { return subNum(th, x, y, 1) }
	r.builtin("*").fn2 = func(th *Thread, x, y Value) Value { return mulNum(th, x, y, 1) }
	r.builtin("inc").fn1 = func(th *Thread, x Value) Value { return addNum(th, "inc", x, int64(1), 1) }
	r.builtin("dec").fn1 = func(th *Thread, x Value) Value { return addNum(th, "dec", x, int64(-1), 1) }
	lt, gt, le, ge := r.builtin("<"), r.builtin(">"), r.builtin("<="), r.builtin(">=")
	lt.fn2 = func(th *Thread, x, y Value) Value {
		if p, q, ok := ints2(x, y); ok {
			return p < q
		}
		if p, q, ok := floats2(x, y); ok {
			return p < q
		}
		return slowCall2(th, lt, x, y)
	}
	gt.fn2 = func(th *Thread, x, y Value) Value {
		if p, q, ok := ints2(x, y); ok {
			return p > q
		}
		if p, q, ok := floats2(x, y); ok {
			return p > q
		}
		return slowCall2(th, gt, x, y)
	}
	le.fn2 = func(th *Thread, x, y Value) Value {
		if p, q, ok := ints2(x, y); ok {
			return p <= q
		}
		if p, q, ok := floats2(x, y); ok {
			return p <= q
		}
		return slowCall2(th, le, x, y)
	}
	ge.fn2 = func(th *Thread, x, y Value) Value {
		if p, q, ok := ints2(x, y); ok {
			return p >= q
		}
		if p, q, ok := floats2(x, y); ok {
			return p >= q
		}
		return slowCall2(th, ge, x, y)
	}
	eq, ne := r.builtin("="), r.builtin("not=")
	eq.fn2 = func(th *Thread, x, y Value) Value {
		if same, ok := fastEqual(x, y); ok {
			return same
		}
		return slowCall2(th, eq, x, y)
	}
	ne.fn2 = func(th *Thread, x, y Value) Value {
		if same, ok := fastEqual(x, y); ok {
			return !same
		}
		return slowCall2(th, ne, x, y)
	}
	first, rest, empty, count, get := r.builtin("first"), r.builtin("rest"), r.builtin("empty?"), r.builtin("count"), r.builtin("get")
	first.fn1 = func(th *Thread, x Value) Value {
		if v, ok := x.(*Vector); ok {
			if v.Len() == 0 {
				return nil
			}
			return v.At(0)
		}
		return slowCall1(th, first, x)
	}
	rest.fn1 = func(th *Thread, x Value) Value {
		if v, ok := x.(*Vector); ok {
			return v.sub(min(1, v.Len()), v.Len())
		}
		return slowCall1(th, rest, x)
	}
	empty.fn1 = func(th *Thread, x Value) Value {
		if v, ok := x.(*Vector); ok {
			return v.Len() == 0
		}
		return slowCall1(th, empty, x)
	}
	count.fn1 = func(th *Thread, x Value) Value {
		if v, ok := x.(*Vector); ok {
			return Int(int64(v.Len()))
		}
		return slowCall1(th, count, x)
	}
	get.fn2 = func(th *Thread, x, y Value) Value {
		switch m := x.(type) {
		case *Map:
			v, _ := m.Get(y)
			return v
		case hostMap:
			v, _ := m.get(y)
			return v
		}
		return slowCall2(th, get, x, y)
	}
	r.builtin("not").fn1 = func(th *Thread, x Value) Value { return !Truthy(x) }
	r.builtin("nil?").fn1 = func(th *Thread, x Value) Value { return x == nil }
	r.builtin("some?").fn1 = func(th *Thread, x Value) Value { return x != nil }
}

// ints2 returns both values as int64 when both are integers.
func ints2(x, y Value) (int64, int64, bool) {
	if p, ok := x.(int64); ok {
		if q, ok := y.(int64); ok {
			return p, q, true
		}
	}
	return 0, 0, false
}

// floats2 returns both values as float64 when both are numbers, at least
// one a float, and neither NaN (NaN comparisons take the general path).
func floats2(x, y Value) (float64, float64, bool) {
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

// fastEqual decides = for two integers, strings or keywords (ok false:
// use the general Equal).
func fastEqual(x, y Value) (same, ok bool) {
	switch p := x.(type) {
	case int64:
		if q, ok := y.(int64); ok {
			return p == q, true
		}
	case string:
		if q, ok := y.(string); ok {
			return p == q, true
		}
	case *Keyword:
		if q, ok := y.(*Keyword); ok {
			return p == q || p.Name == q.Name, true
		}
	}
	return false, false
}
