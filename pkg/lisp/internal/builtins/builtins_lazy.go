package builtins

import (
	"math"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// EagerRangeMax is the largest range built eagerly as a vector; larger
// ones are lazy so (take 5 (range 1e9)) works.
const EagerRangeMax = 100_000

func registerLazy(r *registry) {
	r.Add("range", 0, 3, biRange).
		doc("the integers from start (0) below end by step (1); endless without end").ref(RefSeq).pure()
	r.Add("iterate", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		f, cur := a[0], a[1]
		first := true
		return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) {
			if first {
				first = false
				return cur, true
			}
			cur = th.Call1(f, cur)
			return cur, true
		})
	}).doc("the lazy sequence x, (f x), (f (f x)), ...")
	r.Add("cycle", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		items := th.Seq(a[0], "cycle", 1)
		if len(items) == 0 {
			return core.EmptyVector
		}
		i := 0
		return core.NewPureSeq(func(buf []core.Value) []core.Value {
			for len(buf) < cap(buf) {
				buf = append(buf, items[i])
				if i++; i == len(items) {
					i = 0
				}
			}
			return buf
		})
	}).doc("the items of the collection repeated without end, lazily")
	r.Add("repeat", 1, 2, func(th *core.Thread, a []core.Value) core.Value {
		if len(a) == 1 {
			x := a[0]
			return core.NewPureSeq(func(buf []core.Value) []core.Value {
				for len(buf) < cap(buf) {
					buf = append(buf, x)
				}
				return buf
			})
		}
		n := countArg(th, "repeat", a[0], 1)
		th.AllocSlots(n)
		out := make([]core.Value, n)
		for i := range out {
			out[i] = a[1]
		}
		return &core.Vector{Slots: out}
	}).doc("x repeated n times, or without end").ref(RefSeq)
	r.Add("repeatedly", 1, 2, func(th *core.Thread, a []core.Value) core.Value {
		if len(a) == 1 {
			f := a[0]
			return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) { return th.Call(f), true })
		}
		n := countArg(th, "repeatedly", a[0], 1)
		th.AllocSlots(n)
		out := make([]core.Value, n)
		for i := range out {
			out[i] = th.Call(a[1])
		}
		return &core.Vector{Slots: out}
	}).doc("the results of calling f n times, or without end")
}

// countArg reads a count argument (an integer, or an integral float such
// as 1e8); negative counts are 0.
func countArg(th *core.Thread, fn string, v core.Value, argN int) int {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return 0
		}
		if x > math.MaxInt32 {
			th.AllocSlots(math.MaxInt32)
		}
		return int(x)
	case float64:
		if x != x || x < 0 {
			return 0
		}
		if x > math.MaxInt32 {
			th.AllocSlots(math.MaxInt32)
		}
		return int(x)
	}
	th.TypeError(fn, "number", v, argN)
	return 0
}

func biRange(th *core.Thread, a []core.Value) core.Value {
	if len(a) == 0 {
		i := int64(0)
		return core.NewPureSeq(func(buf []core.Value) []core.Value {
			for len(buf) < cap(buf) {
				buf = append(buf, core.Int(i))
				i++
			}
			return buf
		})
	}
	var start, end, step core.Value = core.Int(0), nil, core.Int(1)
	switch len(a) {
	case 1:
		end = num(th, "range", a[0], 1)
	case 2:
		start, end = num(th, "range", a[0], 1), num(th, "range", a[1], 2)
	case 3:
		start, end, step = num(th, "range", a[0], 1), num(th, "range", a[1], 2), num(th, "range", a[2], 3)
	}
	_, sf, sFloat := th.Num("range", start, 1)
	_, ef, eFloat := th.Num("range", end, 2)
	_, stf, stFloat := th.Num("range", step, 3)
	if stf == 0 || math.IsNaN(stf) || (stf > 0 && sf >= ef) || (stf < 0 && sf <= ef) {
		if sFloat || eFloat || stFloat {
			return core.EmptyVector
		}
	}
	allInt := !sFloat && !stFloat
	n := math.Ceil((ef - sf) / stf)
	if math.IsInf(n, 0) || n > math.MaxInt32 {
		n = math.MaxInt32
	}
	count := int(n)
	if allInt && !eFloat {
		// exactly, in integers: floats round int64s near the ends together
		count = intRangeCount(start.(int64), end.(int64), step.(int64))
		if count == 0 {
			return core.EmptyVector
		}
	}
	if allInt {
		s0, st := start.(int64), step.(int64)
		if count <= EagerRangeMax {
			th.AllocSlots(count)
			out := make([]core.Value, count)
			for i := range out {
				out[i] = core.Int(s0 + int64(i)*st)
			}
			return &core.Vector{Slots: out}
		}
		i := 0
		return core.NewPureSeq(func(buf []core.Value) []core.Value {
			for ; len(buf) < cap(buf) && i < count; i++ {
				buf = append(buf, core.Int(s0+int64(i)*st))
			}
			return buf
		})
	}
	// As Clojure: the first item is start as given (an integer stays
	// one), each next one the float sum of the item before and step.
	item := func(x float64) core.Value {
		if x == sf {
			return start
		}
		return x
	}
	if count <= EagerRangeMax {
		th.AllocSlots(count)
		out := make([]core.Value, 0, count)
		for x := sf; (stf > 0 && x < ef) || (stf < 0 && x > ef); x += stf {
			if x+stf == x {
				// a step below x's float precision never moves it: the
				// range would never end (and never fill its count)
				th.Raise(core.KindValue, "range: step %s does not change %s (below its float precision): the range would never end", core.PrStr(stf), core.PrStr(x))
			}
			if len(out) == cap(out) {
				// rounding gave an item past the count charged
				th.AllocSlots(1)
			}
			out = append(out, item(x))
		}
		return &core.Vector{Slots: out}
	}
	x := sf
	return core.NewPureSeq(func(buf []core.Value) []core.Value {
		for ; len(buf) < cap(buf) && ((stf > 0 && x < ef) || (stf < 0 && x > ef)); x += stf {
			buf = append(buf, item(x))
		}
		return buf
	})
}

// intRangeCount is the number of items of (range start end step) over
// integers (capped at MaxInt32), computed without overflow.
func intRangeCount(start, end, step int64) int {
	var span, by uint64
	switch {
	case step > 0 && end > start:
		span, by = uint64(end)-uint64(start), uint64(step)
	case step < 0 && end < start:
		span, by = uint64(start)-uint64(end), -uint64(step)
	default:
		return 0
	}
	n := span / by
	if span%by != 0 {
		n++
	}
	return int(min(n, math.MaxInt32))
}
