package lisp

import "math"

// Fixed-arity entry points for the builtins that loops and HOF bodies call
// most. A builtin's Fn takes its arguments as a slice on the value stack;
// for (< i n), (inc i), (first xs) or (+ acc x) that stack traffic and the
// variadic loops inside Fn cost more than the operation. fn1/fn2 take the
// arguments directly and handle the common types inline; anything else
// goes to Fn (slowCall1/slowCall2), so results and error messages stay
// exactly those of Fn.

// slowCall1 calls b.Fn with one argument on the value stack. It and
// slowCall2 are the fallback of every fixed-arity entry, so they store
// the arguments directly rather than through withArgs's slice.
func slowCall1(th *Thread, b *Builtin, x Value) Value {
	mark := th.sp
	a := th.allocArgs(1)
	a[0] = x
	v := b.Fn(th, a)
	th.sp = mark
	return v
}

// slowCall2 calls b.Fn with two arguments on the value stack.
func slowCall2(th *Thread, b *Builtin, x, y Value) Value {
	mark := th.sp
	a := th.allocArgs(2)
	a[0], a[1] = x, y
	v := b.Fn(th, a)
	th.sp = mark
	return v
}

// callBuiltin3 calls b.Fn with three arguments on the value stack.
func callBuiltin3(th *Thread, b *Builtin, x, y, z Value) Value { return th.withArgs(b.Fn, x, y, z) }

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

// fast1 and fast2 call a builtin's fixed-arity entry (opt_fastcall.go) with
// the same step and position accounting as a stack call.
func fast1(fn func(*Thread, Value) Value, a operand, pos Pos) node {
	return func(fr *frame) Value {
		x := a.get(fr)
		th := fr.th
		th.pos = pos
		th.tick()
		return fn(th, x)
	}
}

func fast2(fn func(*Thread, Value, Value) Value, a, b operand, pos Pos) node {
	return func(fr *frame) Value {
		x := a.get(fr)
		y := b.get(fr)
		th := fr.th
		th.pos = pos
		th.tick()
		return fn(th, x, y)
	}
}

// fastNode1 and fastNode2 compile a call of a builtin with a fixed-arity
// entry. The hottest ones (loop tests and accumulators) get their common
// case inline in the node, saving the entry's indirect call; the rest call
// the entry. The inline cases are those of the entries (same results).
func fastNode1(b *Builtin, a operand, pos Pos) node {
	fn := b.fn1
	switch b.Name {
	case "first":
		return func(fr *frame) Value {
			x := a.get(fr)
			th := fr.th
			th.pos = pos
			th.tick()
			if v, ok := x.(*Vector); ok {
				if v.Len() == 0 {
					return nil
				}
				return v.At(0)
			}
			return fn(th, x)
		}
	case "empty?":
		return func(fr *frame) Value {
			x := a.get(fr)
			th := fr.th
			th.pos = pos
			th.tick()
			if v, ok := x.(*Vector); ok {
				return v.Len() == 0
			}
			return fn(th, x)
		}
	case "inc":
		return func(fr *frame) Value {
			x := a.get(fr)
			th := fr.th
			th.pos = pos
			th.tick()
			if n, ok := x.(int64); ok && n < math.MaxInt64 {
				return th.boxInt(n + 1)
			}
			return fn(th, x)
		}
	}
	return fast1(fn, a, pos)
}

func fastNode2(b *Builtin, a, c operand, pos Pos) node {
	fn := b.fn2
	switch b.Name {
	case "+":
		return func(fr *frame) Value {
			x, y := a.get(fr), c.get(fr)
			th := fr.th
			th.pos = pos
			th.tick()
			if p, q, ok := ints2(x, y); ok {
				if s := p + q; (s > p) == (q > 0) {
					return th.boxInt(s)
				}
			}
			return fn(th, x, y)
		}
	case "<":
		return func(fr *frame) Value {
			x, y := a.get(fr), c.get(fr)
			th := fr.th
			th.pos = pos
			th.tick()
			if p, q, ok := ints2(x, y); ok {
				return p < q
			}
			return fn(th, x, y)
		}
	case ">":
		return func(fr *frame) Value {
			x, y := a.get(fr), c.get(fr)
			th := fr.th
			th.pos = pos
			th.tick()
			if p, q, ok := ints2(x, y); ok {
				return p > q
			}
			return fn(th, x, y)
		}
	case "=":
		return func(fr *frame) Value {
			x, y := a.get(fr), c.get(fr)
			th := fr.th
			th.pos = pos
			th.tick()
			if same, ok := fastEqual(x, y); ok {
				return same
			}
			return fn(th, x, y)
		}
	}
	return fast2(fn, a, c, pos)
}

// updateNode compiles (update m k f) and (update m k f x): on a reduce's
// transient accumulator (Map.transientSlot) it updates the value in place
// without putting the arguments on the stack, as the builtin does;
// otherwise it calls the builtin.
func updateNode(b *Builtin, ops []operand, pos Pos) node {
	n := len(ops)
	return func(fr *frame) Value {
		m, k, f := ops[0].get(fr), ops[1].get(fr), ops[2].get(fr)
		var x Value
		if n == 4 {
			x = ops[3].get(fr)
		}
		th := fr.th
		th.pos = pos
		th.tick()
		if mp, ok := m.(*Map); ok {
			if i := mp.transientSlot(k); i >= 0 {
				var nv Value
				if n == 4 {
					nv = th.Call2(f, mp.vals[i], x)
				} else {
					nv = th.Call1(f, mp.vals[i])
				}
				return mp.setSlot(th, pos, i, nv)
			}
		}
		mark := th.sp
		a := th.allocArgs(n)
		a[0], a[1], a[2] = m, k, f
		if n == 4 {
			a[3] = x
		}
		v := b.Fn(th, a)
		th.sp = mark
		return v
	}
}
