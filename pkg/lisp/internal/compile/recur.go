package compile

import (
	"math"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// bindDirect starts a loop whose bindings are plain symbols: each init
// into its slot, the loop's cursor headers cleared.
func bindDirect(fr *core.Frame, inits []core.Node, direct, owns []int) {
	for i, in := range inits {
		fr.Slots[direct[i]] = in(fr)
	}
	for _, o := range owns {
		fr.Slots[o] = nil
	}
}

// maxDirectRecur is the most bindings a loop may have for recur to store
// them itself (recurIntoSlots).
const maxDirectRecur = 4

// cursorStep evaluates a recur argument (rest xs) / (next xs) that
// advances a loop's own vector: a vector of 2+ items gives a view, which
// the loop owns and advances in place (adv, once every argument is
// computed); anything else evaluates the call as written.
func cursorStep(fr *core.Frame, cu *cursorArg, a *operand) (core.Value, *core.Vector) {
	if v, ok := fr.Slots[cu.slot].(*core.Vector); ok && v.Len() > 1 {
		th := fr.Th
		th.CallPos = cu.pos
		th.Tick()
		if o, _ := fr.Slots[cu.own].(*core.Vector); o == v {
			return v, v
		}
		nv := v.OwnedRest()
		fr.Slots[cu.own] = nv
		return nv, nil
	}
	return a.Get(fr), nil
}

// unsetMark fills a walk's item slot while it walks a sequence (other than
// a vector): its (first xs) are then computed as written.
type unsetMark struct{}

var unsetItem core.Value = &unsetMark{}

func walkUnset(v core.Value) bool {
	_, ok := v.(*unsetMark)
	return ok
}

// walkGeneric is a walk's recur over a sequence: every argument in order,
// the advance among them, then all stored (as the recur as written).
type walkGeneric struct {
	*walkAdvance
	args  []operand // the other arguments (those of owned[i] unused)
	slots []int
	owned []*ownedArg
}

func (g *walkGeneric) run(fr *core.Frame) core.Value {
	var vals [maxDirectRecur]core.Value
	var nums [maxDirectRecur]ownedVal
	var next core.Value
	advance := func() {
		th := fr.Th
		th.CallPos = g.pos
		th.Tick()
		next = core.SlowCall1(th, g.b, fr.Slots[g.xs])
	}
	for i := range g.args {
		if i == g.at {
			advance()
		}
		if o := g.owned[i]; o != nil {
			nums[i] = o.eval(fr)
		} else {
			vals[i] = g.args[i].Get(fr)
		}
	}
	if g.at == len(g.args) {
		advance()
	}
	for i, s := range g.slots {
		if o := g.owned[i]; o != nil {
			o.Store(fr, nums[i])
			continue
		}
		fr.Slots[s] = vals[i]
	}
	fr.Slots[g.xs] = next
	return core.RecurSentinel
}

// isRecur reports whether a node's value is the recur sentinel (a type
// check: cheaper than comparing interfaces).
func isRecur(v core.Value) bool {
	_, ok := v.(*core.RecurMark)
	return ok
}

// ownedVal is an accumulator's value: a number held unboxed (kind 'i' or
// 'f', its bits in n), or any value (kind 0, in v).
type ownedVal struct {
	kind byte
	n    uint64 // int64 or float64 bits
	v    core.Value
}

// value returns r as a Value (a number is boxed).
func (r ownedVal) value() core.Value {
	switch r.kind {
	case 'i':
		return core.Int(int64(r.n))
	case 'f':
		return math.Float64frombits(r.n)
	}
	return r.v
}

// unboxed returns v as an ownedVal, a number unboxed.
func unboxed(v core.Value) ownedVal {
	switch x := v.(type) {
	case int64:
		return ownedVal{kind: 'i', n: uint64(x)}
	case float64:
		return ownedVal{kind: 'f', n: math.Float64bits(x)}
	}
	return ownedVal{v: v}
}

// eval computes the update from the binding's current value.
func (o *ownedArg) eval(fr *core.Frame) ownedVal { return o.update(fr, unboxed(fr.Slots[o.slot])) }

// update computes the update from the accumulator's value acc (kind 'i'
// or 'f' when it is a number): integers and floats inline, as the
// builtin computes them, anything else (overflow, NaN, other values)
// through the builtin as written.
func (o *ownedArg) update(fr *core.Frame, acc ownedVal) ownedVal {
	var x core.Value
	if o.xkw != nil && !(o.xwalk && walkUnset(fr.Slots[o.xslot])) {
		x = core.KwGet(fr.Slots[o.xslot], o.xkw)
	} else {
		x = o.x.Get(fr)
	}
	if r, ok := o.num(acc, x); ok {
		return r
	}
	a, b := acc.value(), x
	if !o.accFirst {
		a, b = b, a
	}
	th := fr.Th
	th.CallPos = o.pos
	th.Tick()
	if o.unary {
		return ownedVal{v: o.b.Fn1(th, a)}
	}
	return ownedVal{v: o.b.Fn2(th, a, b)}
}

// num computes the update of the number acc (kind 'i' or 'f') with the
// operand x inline, as the builtin computes it; ok is false when update
// must call the builtin (acc or x not a number, an overflow, a NaN).
func (o *ownedArg) num(acc ownedVal, x core.Value) (r ownedVal, ok bool) {
	switch acc.kind {
	case 'i':
		switch y := x.(type) {
		case int64:
			p, q := int64(acc.n), y
			if !o.accFirst {
				p, q = q, p
			}
			if s, ok := intOp(o.op, p, q); ok {
				return ownedVal{kind: 'i', n: uint64(s)}, true
			}
		case float64:
			if y == y {
				return o.floatOp(float64(int64(acc.n)), y), true
			}
		}
	case 'f':
		p := math.Float64frombits(acc.n)
		switch y := x.(type) {
		case int64:
			if p == p {
				return o.floatOp(p, float64(y)), true
			}
		case float64:
			if p == p && y == y {
				return o.floatOp(p, y), true
			}
		}
	}
	return ownedVal{}, false
}

// intOp computes p op q, ok false when it overflows (the builtin then
// raises).
func intOp(op byte, p, q int64) (int64, bool) {
	switch op {
	case '+':
		if s := p + q; (s > p) == (q > 0) {
			return s, true
		}
	case '-':
		if s := p - q; (s < p) == (q > 0) {
			return s, true
		}
	case '*':
		// the overflow test of mulNum
		if s := p * q; q == 0 || (s/q == p && !(p == -1 && q == math.MinInt64) && !(q == -1 && p == math.MinInt64)) {
			return s, true
		}
	}
	return 0, false
}

// floatOp computes acc op x (in the order written) for a float update.
func (o *ownedArg) floatOp(acc, x float64) ownedVal {
	p, q := acc, x
	if !o.accFirst {
		p, q = q, p
	}
	var s float64
	switch o.op {
	case '+':
		s = p + q
	case '-':
		s = p - q
	case '*':
		s = p * q
	}
	return ownedVal{kind: 'f', n: math.Float64bits(s)}
}

// Store writes the update into the binding's slot (a number in a new
// box: a Value is never written after it is made).
func (o *ownedArg) Store(fr *core.Frame, r ownedVal) { fr.Slots[o.slot] = r.value() }

// walk runs the sole update of a walk over items (see compileWalk): item
// i into the item slot, then the update, for every item. The accumulator
// stays an unboxed Go number between iterations and is boxed into its
// slot when it is not a number and when the walk ends: nothing reads the
// slot in between (the walk's test reads the collection, and the update's
// other operand does not mention the binding: ownedUpdateForm), so no
// program sees the difference. Between iterations it ticks, counts the
// iteration and credits the walk's bindings (slots) as the walk does.
func (o *ownedArg) walk(fr *core.Frame, items core.ItemsOf, item int, mark int, it *core.LoopIter, slots []int) {
	th := fr.Th
	acc := unboxed(fr.Slots[o.slot])
	n := items.Len()
	i := 0
	if o.xkw != nil && o.xslot == item && items.Recs != nil {
		i, acc = o.walkRecords(fr, items.Recs, acc, mark, it, slots)
	}
	for ; i < n; i++ {
		fr.Slots[item] = items.At(i)
		if acc = o.update(fr, acc); acc.kind == 0 {
			fr.Slots[o.slot] = acc.v
			acc = unboxed(acc.v)
		}
		th.Tick()
		th.CountLoop()
		th.Sp = mark
		it.Next(th, fr.Slots, slots)
	}
	fr.Slots[o.slot] = acc.value()
}

// walkRecords is walk over host records whose update is (op acc (:k
// item)) (or (op (:k item) acc)), for as long as the update is a
// number's (num): each record's field read in place as KwGet reads a
// host record (core.RecordField), the record not put in the item slot,
// which nothing reads while num computes the update. It returns the
// index of the first record whose update num does not compute
// (len(recs) when it computes them all), with the accumulator before it:
// walk computes that record's update as written, reading the field again
// (a map read changes nothing).
//
// A sum of integer fields (op '+', an integer accumulator, int64 fields)
// runs in batches (sumInts); any other field or accumulator goes
// through num, one record at a time.
func (o *ownedArg) walkRecords(fr *core.Frame, recs []map[string]any, acc ownedVal, mark int, it *core.LoopIter, slots []int) (int, ownedVal) {
	th := fr.Th
	plus := o.op == '+'
	for i := 0; i < len(recs); i++ {
		if plus && acc.kind == 'i' {
			j, s := o.sumInts(th, recs[i:], int64(acc.n))
			acc.n = uint64(s)
			if j > 0 {
				th.Sp = mark
			}
			if i += j; i == len(recs) {
				break
			}
		}
		r, ok := o.num(acc, core.RecordField(recs[i], o.xkw))
		if !ok {
			return i, acc
		}
		acc = r
		th.Tick()
		th.CountLoop()
		th.Sp = mark
		it.Next(th, fr.Slots, slots)
	}
	return len(recs), acc
}

// sumInts adds the int64 fields of recs to s for as long as they are
// int64s that do not overflow and no iteration is due to check a budget
// (Thread.LoopRoom), and counts their steps and iterations at once: it
// returns how many records it added and the sum. Such an iteration
// allocates nothing and changes no binding the loop credits, so its
// LoopIter.Next has nothing to do (the caller's next iteration does it).
func (o *ownedArg) sumInts(th *core.Thread, recs []map[string]any, s int64) (int, int64) {
	n := min(int64(len(recs)), th.LoopRoom())
	k := 0
	for _, m := range recs[:n] {
		y, ok := core.FieldOf(m, o.xkw).(int64)
		if !ok {
			break
		}
		t := s + y
		if (t > s) != (y > 0) {
			break // overflow: num refuses it, and walk raises it as written
		}
		s = t
		k++
	}
	th.CountLoops(int64(k))
	return k, s
}
