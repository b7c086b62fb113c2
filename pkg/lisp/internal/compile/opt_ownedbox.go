package compile

import (
	"math"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// Loop-owned accumulators. An accumulator updated by its loop's recur,
//
//	(loop [xs xs acc 0] (if (empty? xs) acc (recur (rest xs) (+ acc (first xs)))))
//
// would call the + builtin on every iteration. When the compiler can see
// that the binding's value is never kept anywhere while the loop runs —
// inside the loop it is only an argument of arithmetic and comparison
// builtins (which return new values) or stored back into itself by recur —
// the loop owns the binding: recur computes its arithmetic update inline
// (integers and floats as the builtin computes them, anything else through
// the builtin). Each new number is a new box (a Value is never written
// after it is made), except in a walk over a vector whose recur is the
// update alone: there no code reads the binding until the walk ends, so
// the number stays an unboxed Go value and is boxed once, at the end
// (ownedArg.walk). Ownership is decided statically below.

// ownSafeMin reports whether builtin name neither keeps an argument nor
// returns it when called with at least min arguments: its result is a new
// number or a boolean (the entry's owns fact).
func ownSafeMin(name string) (min int, ok bool) {
	e := builtins.Facts(name)
	return e.OwnMin, e.OwnMin > 0
}

// ownUnsafeHeads are forms under which no binding can be owned: they bind
// function names (letfn) or define globals.
var ownUnsafeHeads = map[string]bool{"letfn": true, "def": true, "defn": true, "defn-": true}

// ownedBindings decides which loop bindings the loop owns: forms are
// the loop forms that run while it iterates (test, recurring branches),
// names the binding names; skip is a binding never owned (-1: none).
// It returns whether each binding is owned, or nil when none is.
func (c *Compiler) ownedBindings(names []string, skip int, forms []*syntax.Form) []bool {
	if c.PlainLoops || c.sc.bindsAny(func(n string) bool { _, ok := ownSafeMin(n); return ok }) {
		return nil
	}
	for _, f := range forms {
		if ownShadows(f, false) {
			return nil
		}
	}
	var owned []bool
	for i, name := range names {
		if i == skip || !c.ownable(name, i, forms) {
			continue
		}
		if owned == nil {
			owned = make([]bool, len(names))
		}
		owned[i] = true
		c.OwnedN++
	}
	return owned
}

// ownShadows reports whether f could rebind an ownSafe name: such a name
// used other than as a call head, or a form that binds function names.
func ownShadows(f *syntax.Form, head bool) bool {
	switch f.Kind {
	case syntax.FSym:
		if f.Ns != "" {
			return false
		}
		if head {
			return ownUnsafeHeads[f.Name]
		}
		_, safe := ownSafeMin(f.Name)
		return safe
	case syntax.FLit, syntax.FRegex:
		return false
	}
	for i, it := range f.Items {
		if ownShadows(it, i == 0 && f.Kind == syntax.FList) {
			return true
		}
	}
	return false
}

// ownable checks binding name (index i) in every form, and that some recur
// updates it with arithmetic (else owning it gains nothing).
func (c *Compiler) ownable(name string, i int, forms []*syntax.Form) bool {
	updated := false
	for _, f := range forms {
		if !ownSafeUse(f, name, i, &updated) {
			return false
		}
	}
	return updated
}

// ownSafeUse checks that in f, name only appears as an argument of an
// ownSafeMin call, as the test of an if/when, or in recur position i (bare
// or as an update, see ownedUpdateForm). It is conservative: a form it
// does not know that mentions name fails.
func ownSafeUse(f *syntax.Form, name string, i int, updated *bool) bool {
	switch f.Kind {
	case syntax.FSym:
		return f.Ns != "" || f.Name != name // a bare use keeps the value
	case syntax.FLit, syntax.FRegex:
		return true
	case syntax.FFnLit:
		return !formUses(f, name) // a closure keeps it
	case syntax.FList:
	default:
		return ownSafeAll(f.Items, name, i, updated)
	}
	if len(f.Items) == 0 {
		return true
	}
	head := f.Items[0]
	args := f.Items[1:]
	if head.Kind != syntax.FSym || head.Ns != "" {
		return ownSafeAll(f.Items, name, i, updated)
	}
	argsOK := func(args []*syntax.Form) bool {
		for _, a := range args {
			if !a.IsSym(name) && !ownSafeUse(a, name, i, updated) {
				return false
			}
		}
		return true
	}
	if min, ok := ownSafeMin(head.Name); ok && len(args) >= min {
		return argsOK(args)
	}
	switch head.Name {
	case "recur":
		for j, a := range args {
			switch {
			case j == i && a.IsSym(name):
			case j == i && ownedUpdateForm(a, name) != nil:
				*updated = true
				if !argsOK(a.Items[1:]) {
					return false
				}
			case !ownSafeUse(a, name, i, updated):
				return false
			}
		}
		return true
	case "if", "if-not", "when", "when-not":
		if len(args) == 0 {
			return false
		}
		return argsOK(args[:1]) && ownSafeAll(args[1:], name, i, updated)
	case "do", "let", "cond", "and", "or":
		return ownSafeAll(args, name, i, updated)
	}
	if IsSpecialForm(head.Name) {
		return !formUses(f, name) // fn, loop, for, threading...: may capture or rebind
	}
	return ownSafeAll(args, name, i, updated) // a call: a bare argument fails
}

func ownSafeAll(fs []*syntax.Form, name string, i int, updated *bool) bool {
	for _, f := range fs {
		if !ownSafeUse(f, name, i, updated) {
			return false
		}
	}
	return true
}

// ownedUpdateForm returns the other operand of an update of name that
// recur computes inline: (+ name x), (+ x name), (- name x),
// (* name x), (* x name), (inc name), (dec name). It returns nil for any
// other form (for inc/dec, a form for the constant 1).
func ownedUpdateForm(f *syntax.Form, name string) *syntax.Form {
	if f.Kind != syntax.FList || len(f.Items) < 2 || f.Items[0].Kind != syntax.FSym || f.Items[0].Ns != "" {
		return nil
	}
	op, args := f.Items[0].Name, f.Items[1:]
	switch {
	case (op == "inc" || op == "dec") && len(args) == 1 && args[0].IsSym(name):
		return &syntax.Form{Kind: syntax.FLit, Pos: f.Pos, Val: int64(1)}
	case (op == "+" || op == "-" || op == "*") && len(args) == 2 && args[0].IsSym(name) && !formUses(args[1], name):
		return args[1]
	case (op == "+" || op == "*") && len(args) == 2 && args[1].IsSym(name) && !formUses(args[0], name):
		return args[0]
	}
	return nil
}

// ownedArg is a recur argument that updates an owned binding.
type ownedArg struct {
	slot     int           // the binding's slot
	op       byte          // '+', '-' or '*'
	x        operand       // the other operand
	xkw      *core.Keyword // with xslot: the other operand is (:xkw local)
	xslot    int
	xwalk    bool          // xslot is a walk's item: when unset, x computes it
	accFirst bool          // the binding is the first operand
	b        *core.Builtin // the builtin as written (inc, +, ...)
	unary    bool          // inc or dec: b takes the binding alone
	pos      core.Pos
}

// compileOwnedUpdate compiles recur argument f for the owned binding in
// slot, or returns nil when f is not an update (ownedUpdateForm).
func (c *Compiler) compileOwnedUpdate(f *syntax.Form, name string, slot int) *ownedArg {
	xf := ownedUpdateForm(f, name)
	if xf == nil {
		return nil
	}
	op := f.Items[0].Name
	o := &ownedArg{slot: slot, accFirst: f.Items[1].IsSym(name), b: c.Builtins[op], unary: len(f.Items) == 2, pos: f.Pos}
	switch op {
	case "inc", "+":
		o.op = '+'
	case "dec", "-":
		o.op = '-'
	case "*":
		o.op = '*'
	}
	o.x = c.operandOf(xf, c.compile(xf, false))
	if xf.Kind == syntax.FList && len(xf.Items) == 2 && xf.Items[0].Kind == syntax.FLit {
		// (+ acc (:k item)): the lookup inline, as the (:k m) node does it
		if kw, ok := xf.Items[0].Val.(*core.Keyword); ok {
			if arg := c.operandOf(xf.Items[1], nil); arg.slot >= 0 {
				o.xkw, o.xslot = kw, arg.slot
			} else if slot, ok := c.walkItem(xf.Items[1]); ok {
				o.xkw, o.xslot, o.xwalk = kw, slot, true
			}
		}
	}
	return o
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
	switch acc.kind {
	case 'i':
		switch y := x.(type) {
		case int64:
			p, q := int64(acc.n), y
			if !o.accFirst {
				p, q = q, p
			}
			if s, ok := intOp(o.op, p, q); ok {
				return ownedVal{kind: 'i', n: uint64(s)}
			}
		case float64:
			if y == y {
				return o.floatOp(float64(int64(acc.n)), y)
			}
		}
	case 'f':
		p := math.Float64frombits(acc.n)
		switch y := x.(type) {
		case int64:
			if p == p {
				return o.floatOp(p, float64(y))
			}
		case float64:
			if p == p && y == y {
				return o.floatOp(p, y)
			}
		}
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

// store writes the update into the binding's slot (a number in a new
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
	for i := 0; i < n; i++ {
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

// recurOwned is recurIntoSlots for a recur that updates owned bindings
// (owned[i] set): every argument is computed first, then stored.
func recurOwned(args []operand, curs []*cursorArg, slots []int, owned []*ownedArg, gen *walkGeneric) core.Node {
	if len(args) == 1 {
		o := owned[0]
		return func(fr *core.Frame) core.Value {
			if gen != nil && walkUnset(fr.Slots[gen.item]) {
				return gen.run(fr)
			}
			o.Store(fr, o.eval(fr))
			return core.RecurSentinel
		}
	}
	if curs == nil {
		curs = make([]*cursorArg, len(args))
	}
	return func(fr *core.Frame) core.Value {
		if gen != nil && walkUnset(fr.Slots[gen.item]) {
			return gen.run(fr)
		}
		var vals [maxDirectRecur]core.Value
		var nums [maxDirectRecur]ownedVal
		var adv [maxDirectRecur]*core.Vector
		for i := range args {
			switch o, cu := owned[i], curs[i]; {
			case o != nil:
				nums[i] = o.eval(fr)
			case cu != nil:
				vals[i], adv[i] = cursorStep(fr, cu, &args[i])
			default:
				vals[i] = args[i].Get(fr)
			}
		}
		for i, s := range slots {
			if v := adv[i]; v != nil {
				v.DropFirst()
			}
			if o := owned[i]; o != nil {
				o.Store(fr, nums[i])
				continue
			}
			fr.Slots[s] = vals[i]
		}
		return core.RecurSentinel
	}
}

// bindsAny reports whether a name for which is returns true is a local,
// captured or self name of this scope or an enclosing one.
func (s *scope) bindsAny(is func(string) bool) bool {
	for ; s != nil; s = s.parent {
		for _, l := range s.locals {
			if is(l.name) {
				return true
			}
		}
		for _, n := range s.capNames {
			if is(n) {
				return true
			}
		}
		if s.selfName != "" && is(s.selfName) {
			return true
		}
	}
	return false
}
