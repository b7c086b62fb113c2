package lisp

import "math"

// Fixed-arity entry points for the builtins that loops and HOF bodies call
// most. A builtin's Fn takes its arguments as a slice on the value stack;
// for (< i n), (inc i), (first xs) or (+ acc x) that stack traffic and the
// variadic loops inside Fn cost more than the operation. fn1/fn2 take the
// arguments directly and handle the common types inline; anything else
// goes to Fn (slowCall1/slowCall2), so results and error messages stay
// exactly those of Fn.

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
