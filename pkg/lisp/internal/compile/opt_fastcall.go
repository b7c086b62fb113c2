package compile

import (
	"math"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// Fixed-arity entry points for the builtins that loops and HOF bodies call
// most. A builtin's Fn takes its arguments as a slice on the value stack;
// for (< i n), (inc i), (first xs) or (+ acc x) that stack traffic and the
// variadic loops inside Fn cost more than the operation. fn1/fn2 take the
// arguments directly and handle the common types inline; anything else
// goes to Fn (slowCall1/slowCall2), so results and error messages stay
// exactly those of Fn.

// fast1 and fast2 call a builtin's fixed-arity entry (opt_fastcall.go) with
// the same step and position accounting as a stack call.
func fast1(fn func(*core.Thread, core.Value) core.Value, a operand, pos core.Pos) core.Node {
	return func(fr *core.Frame) core.Value {
		x := a.Get(fr)
		th := fr.Th
		th.CallPos = pos
		th.Tick()
		return fn(th, x)
	}
}

func fast2(fn func(*core.Thread, core.Value, core.Value) core.Value, a, b operand, pos core.Pos) core.Node {
	return func(fr *core.Frame) core.Value {
		x := a.Get(fr)
		y := b.Get(fr)
		th := fr.Th
		th.CallPos = pos
		th.Tick()
		return fn(th, x, y)
	}
}

// fastNode1 and fastNode2 compile a call of a builtin with a fixed-arity
// entry. The hottest ones (loop tests and accumulators) get their common
// case inline in the node, saving the entry's indirect call; the rest call
// the entry. The inline cases are those of the entries (same results).
func fastNode1(b *core.Builtin, a operand, pos core.Pos) core.Node {
	fn := b.Fn1
	switch b.Name {
	case "first":
		return func(fr *core.Frame) core.Value {
			x := a.Get(fr)
			th := fr.Th
			th.CallPos = pos
			th.Tick()
			if v, ok := x.(*core.Vector); ok {
				if v.Len() == 0 {
					return nil
				}
				return v.At(0)
			}
			return fn(th, x)
		}
	case "empty?":
		return func(fr *core.Frame) core.Value {
			x := a.Get(fr)
			th := fr.Th
			th.CallPos = pos
			th.Tick()
			if v, ok := x.(*core.Vector); ok {
				return v.Len() == 0
			}
			return fn(th, x)
		}
	case "inc":
		return func(fr *core.Frame) core.Value {
			x := a.Get(fr)
			th := fr.Th
			th.CallPos = pos
			th.Tick()
			if n, ok := x.(int64); ok && n < math.MaxInt64 {
				return th.BoxInt(n + 1)
			}
			return fn(th, x)
		}
	}
	return fast1(fn, a, pos)
}

func fastNode2(b *core.Builtin, a, c operand, pos core.Pos) core.Node {
	fn := b.Fn2
	switch b.Name {
	case "+":
		return func(fr *core.Frame) core.Value {
			x, y := a.Get(fr), c.Get(fr)
			th := fr.Th
			th.CallPos = pos
			th.Tick()
			if p, q, ok := builtins.Ints2(x, y); ok {
				if s := p + q; (s > p) == (q > 0) {
					return th.BoxInt(s)
				}
			}
			return fn(th, x, y)
		}
	case "<":
		return func(fr *core.Frame) core.Value {
			x, y := a.Get(fr), c.Get(fr)
			th := fr.Th
			th.CallPos = pos
			th.Tick()
			if p, q, ok := builtins.Ints2(x, y); ok {
				return p < q
			}
			return fn(th, x, y)
		}
	case ">":
		return func(fr *core.Frame) core.Value {
			x, y := a.Get(fr), c.Get(fr)
			th := fr.Th
			th.CallPos = pos
			th.Tick()
			if p, q, ok := builtins.Ints2(x, y); ok {
				return p > q
			}
			return fn(th, x, y)
		}
	case "nth":
		return func(fr *core.Frame) core.Value {
			x, y := a.Get(fr), c.Get(fr)
			th := fr.Th
			th.CallPos = pos
			th.Tick()
			if v, ok := x.(*core.Vector); ok {
				if i, ok := y.(int64); ok && i >= 0 && i < int64(v.Len()) {
					return v.At(int(i))
				}
			}
			return fn(th, x, y)
		}
	case "=":
		return func(fr *core.Frame) core.Value {
			x, y := a.Get(fr), c.Get(fr)
			th := fr.Th
			th.CallPos = pos
			th.Tick()
			if same, ok := builtins.FastEqual(x, y); ok {
				return same
			}
			return fn(th, x, y)
		}
	}
	return fast2(fn, a, c, pos)
}

// countCompare compiles (< x (count coll)) (and <=, >, >=) with coll a
// symbol, the test of an index loop, when count is the builtin: the
// count of a vector is compared as a Go int, not boxed (a count above the
// small-integer cache would be a new box on every test). Anything else
// calls count and the comparison as written, with the same steps and
// positions. ok is false when f is not such a call.
func (c *Compiler) countCompare(b *core.Builtin, f *syntax.Form) (core.Node, bool) {
	cf := f.Items[2]
	if len(cf.Items) != 2 || !c.callsBuiltin(cf, "count") || cf.Items[1].Kind != syntax.FSym {
		return nil, false
	}
	count, ok := c.Builtins["count"]
	if !ok || count.Fn1 == nil {
		return nil, false
	}
	var cmp func(p, q int64) bool
	switch b.Name {
	case "<":
		cmp = func(p, q int64) bool { return p < q }
	case "<=":
		cmp = func(p, q int64) bool { return p <= q }
	case ">":
		cmp = func(p, q int64) bool { return p > q }
	case ">=":
		cmp = func(p, q int64) bool { return p >= q }
	default:
		return nil, false
	}
	x := c.operandOf(f.Items[1], c.compile(f.Items[1], false))
	coll := c.operandOf(cf.Items[1], c.compile(cf.Items[1], false))
	fn, countFn, pos, countPos := b.Fn2, count.Fn1, f.Pos, cf.Pos
	return func(fr *core.Frame) core.Value {
		xv := x.Get(fr)
		cv := coll.Get(fr)
		th := fr.Th
		th.CallPos = countPos
		th.Tick()
		if v, ok := cv.(*core.Vector); ok {
			if p, ok := xv.(int64); ok {
				th.CallPos = pos
				th.Tick()
				return cmp(p, int64(v.Len()))
			}
		}
		n := countFn(th, cv)
		th.CallPos = pos
		th.Tick()
		return fn(th, xv, n)
	}, true
}

// updateNode compiles (update m k f) and (update m k f x): on a reduce's
// transient accumulator (Map.transientSlot) it updates the value in place
// without putting the arguments on the stack, as the builtin does;
// otherwise it calls the builtin. With cnt (opt_count.go) it adds x (or 1)
// to the slot's sum kept unboxed, and before any other write boxes the
// sums into the map.
func updateNode(b *core.Builtin, ops []operand, pos core.Pos, cnt *counter) core.Node {
	n := len(ops)
	return func(fr *core.Frame) core.Value {
		m, k, f := ops[0].Get(fr), ops[1].Get(fr), ops[2].Get(fr)
		var x core.Value
		if n == 4 {
			x = ops[3].Get(fr)
		}
		th := fr.Th
		th.CallPos = pos
		th.Tick()
		if mp, ok := m.(*core.Map); ok {
			if i := mp.TransientSlot(k); i >= 0 {
				if cnt != nil {
					if cnt.add(th, mp, i, x) {
						return mp
					}
					mp.FlushCounts()
				}
				var nv core.Value
				if n == 4 {
					nv = th.Call2(f, mp.Vals[i], x)
				} else {
					nv = th.Call1(f, mp.Vals[i])
				}
				return mp.SetSlot(th, pos, i, nv)
			}
			if cnt != nil {
				mp.FlushCounts()
			}
		}
		mark := th.Sp
		a := th.AllocArgs(n)
		a[0], a[1], a[2] = m, k, f
		if n == 4 {
			a[3] = x
		}
		v := b.Fn(th, a)
		th.Sp = mark
		return v
	}
}
