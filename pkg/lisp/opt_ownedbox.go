package lisp

import (
	"math"
	"unsafe"
)

// Loop-owned number boxes. An accumulator updated by its loop's recur,
//
//	(loop [xs xs acc 0] (if (empty? xs) acc (recur (rest xs) (+ acc (first xs)))))
//
// would box a new number on every iteration. When the compiler can see
// that the binding's value is never kept anywhere while the loop runs —
// inside the loop it is only an argument of arithmetic and comparison
// builtins (which return new values) or stored back into itself by recur —
// the loop activation owns one box for it and recur overwrites the number
// in that box. Nothing else can hold the box until the loop ends (its
// value then leaves as the loop's result and the box is never written
// again: the next activation starts with a new one), so programs cannot
// observe the difference. This is the one place a box is written after
// it was published (opt_numbox.go); ownership is decided statically below and
// checked at run time (the binding must still hold the owned box).

// ownSafeMin reports whether builtin name neither keeps an argument nor
// returns it when called with at least min arguments: its result is a new
// number or a boolean (the entry's owns fact).
func ownSafeMin(name string) (min int, ok bool) {
	e := facts(name)
	return e.ownMin, e.ownMin > 0
}

// ownUnsafeHeads are forms under which no binding can be owned: they bind
// function names (letfn) or define globals.
var ownUnsafeHeads = map[string]bool{"letfn": true, "def": true, "defn": true, "defn-": true}

// ownedBindings decides which loop bindings get an owned box: forms are
// the loop forms that run while it iterates (test, recurring branches),
// names the binding names; skip is a binding never owned (-1: none).
// It returns each binding's owned-box slot, or nil when there is none.
func (c *compiler) ownedBindings(names []string, skip int, forms []*form) []int {
	if c.plainLoops || c.sc.bindsAny(func(n string) bool { _, ok := ownSafeMin(n); return ok }) {
		return nil
	}
	for _, f := range forms {
		if ownShadows(f, false) {
			return nil
		}
	}
	var owned []int
	for i, name := range names {
		if i == skip || !c.ownable(name, i, forms) {
			continue
		}
		if owned == nil {
			owned = make([]int, len(names))
			for j := range owned {
				owned[j] = -1
			}
		}
		owned[i] = c.sc.declare(" owned " + name)
		c.ownedN++
	}
	return owned
}

// ownShadows reports whether f could rebind an ownSafe name: such a name
// used other than as a call head, or a form that binds function names.
func ownShadows(f *form, head bool) bool {
	switch f.kind {
	case fSym:
		if f.ns != "" {
			return false
		}
		if head {
			return ownUnsafeHeads[f.name]
		}
		_, safe := ownSafeMin(f.name)
		return safe
	case fLit, fRegex:
		return false
	}
	for i, it := range f.items {
		if ownShadows(it, i == 0 && f.kind == fList) {
			return true
		}
	}
	return false
}

// ownable checks binding name (index i) in every form, and that some recur
// updates it with arithmetic (else owning it gains nothing).
func (c *compiler) ownable(name string, i int, forms []*form) bool {
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
func ownSafeUse(f *form, name string, i int, updated *bool) bool {
	switch f.kind {
	case fSym:
		return f.ns != "" || f.name != name // a bare use keeps the value
	case fLit, fRegex:
		return true
	case fFnLit:
		return !formUses(f, name) // a closure keeps it
	case fList:
	default:
		return ownSafeAll(f.items, name, i, updated)
	}
	if len(f.items) == 0 {
		return true
	}
	head := f.items[0]
	args := f.items[1:]
	if head.kind != fSym || head.ns != "" {
		return ownSafeAll(f.items, name, i, updated)
	}
	argsOK := func(args []*form) bool {
		for _, a := range args {
			if !a.isSym(name) && !ownSafeUse(a, name, i, updated) {
				return false
			}
		}
		return true
	}
	if min, ok := ownSafeMin(head.name); ok && len(args) >= min {
		return argsOK(args)
	}
	switch head.name {
	case "recur":
		for j, a := range args {
			switch {
			case j == i && a.isSym(name):
			case j == i && ownedUpdateForm(a, name) != nil:
				*updated = true
				if !argsOK(a.items[1:]) {
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
	if isSpecialForm(head.name) {
		return !formUses(f, name) // fn, loop, for, threading...: may capture or rebind
	}
	return ownSafeAll(args, name, i, updated) // a call: a bare argument fails
}

func ownSafeAll(fs []*form, name string, i int, updated *bool) bool {
	for _, f := range fs {
		if !ownSafeUse(f, name, i, updated) {
			return false
		}
	}
	return true
}

// ownedUpdateForm returns the other operand of an update of name that
// recur can write into the owned box: (+ name x), (+ x name), (- name x),
// (* name x), (* x name), (inc name), (dec name). It returns nil for any
// other form (for inc/dec, a form for the constant 1).
func ownedUpdateForm(f *form, name string) *form {
	if f.kind != fList || len(f.items) < 2 || f.items[0].kind != fSym || f.items[0].ns != "" {
		return nil
	}
	op, args := f.items[0].name, f.items[1:]
	switch {
	case (op == "inc" || op == "dec") && len(args) == 1 && args[0].isSym(name):
		return &form{kind: fLit, pos: f.pos, val: int64(1)}
	case (op == "+" || op == "-" || op == "*") && len(args) == 2 && args[0].isSym(name) && !formUses(args[1], name):
		return args[1]
	case (op == "+" || op == "*") && len(args) == 2 && args[1].isSym(name) && !formUses(args[0], name):
		return args[0]
	}
	return nil
}

// ownedArg is a recur argument that updates an owned binding.
type ownedArg struct {
	slot, own int      // the binding's slot, its owned box's slot
	op        byte     // '+', '-' or '*'
	x         operand  // the other operand
	xkw       *Keyword // with xslot: the other operand is (:xkw local)
	xslot     int
	xwalk     bool     // xslot is a walk's item: when unset, x computes it
	accFirst  bool     // the binding is the first operand
	b         *Builtin // the builtin as written (inc, +, ...)
	unary     bool     // inc or dec: b takes the binding alone
	pos       Pos
}

// compileOwnedUpdate compiles recur argument f for owned binding (slot,
// own), or returns nil when f is not an update (ownedUpdateForm).
func (c *compiler) compileOwnedUpdate(f *form, name string, slot, own int) *ownedArg {
	xf := ownedUpdateForm(f, name)
	if xf == nil {
		return nil
	}
	op := f.items[0].name
	o := &ownedArg{slot: slot, own: own, accFirst: f.items[1].isSym(name), b: c.builtins[op], unary: len(f.items) == 2, pos: f.pos}
	switch op {
	case "inc", "+":
		o.op = '+'
	case "dec", "-":
		o.op = '-'
	case "*":
		o.op = '*'
	}
	o.x = c.operandOf(xf, c.compile(xf, false))
	if xf.kind == fList && len(xf.items) == 2 && xf.items[0].kind == fLit {
		// (+ acc (:k item)): the lookup inline, as the (:k m) node does it
		if kw, ok := xf.items[0].val.(*Keyword); ok {
			if arg := c.operandOf(xf.items[1], nil); arg.slot >= 0 {
				o.xkw, o.xslot = kw, arg.slot
			} else if slot, ok := c.walkItem(xf.items[1]); ok {
				o.xkw, o.xslot, o.xwalk = kw, slot, true
			}
		}
	}
	return o
}

// ownedVal is an update's result: a number to write into the owned box
// (kind 'i' or 'f'), or any other value (kind 0) to store as recur would.
type ownedVal struct {
	kind byte
	n    uint64 // int64 or float64 bits
	v    Value
}

// eval computes the update from the binding's current value.
func (o *ownedArg) eval(fr *frame) ownedVal {
	acc := fr.slots[o.slot]
	var x Value
	if o.xkw != nil && !(o.xwalk && walkUnset(fr.slots[o.xslot])) {
		x = kwGet(fr.slots[o.xslot], o.xkw)
	} else {
		x = o.x.get(fr)
	}
	a, b := acc, x
	if !o.accFirst {
		a, b = x, acc
	}
	if p, q, ok := ints2(a, b); ok {
		switch o.op {
		case '+':
			if s := p + q; (s > p) == (q > 0) {
				return ownedVal{kind: 'i', n: uint64(s)}
			}
		case '-':
			if s := p - q; (s < p) == (q > 0) {
				return ownedVal{kind: 'i', n: uint64(s)}
			}
		case '*':
			// the overflow test of mulNum
			if s := p * q; q == 0 || (s/q == p && !(p == -1 && q == math.MinInt64) && !(q == -1 && p == math.MinInt64)) {
				return ownedVal{kind: 'i', n: uint64(s)}
			}
		}
	} else if p, q, ok := floats2(a, b); ok {
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
	th := fr.th
	th.pos = o.pos
	th.tick()
	if o.unary {
		return ownedVal{v: o.b.fn1(th, acc)}
	}
	return ownedVal{v: o.b.fn2(th, a, b)}
}

// store writes the update: into the owned box when the binding still holds
// it and the number kind is the same, else into a new owned box.
func (o *ownedArg) store(fr *frame, r ownedVal) {
	if r.kind == 0 {
		fr.slots[o.slot] = r.v
		return
	}
	typ := int64Type
	if r.kind == 'f' {
		typ = float64Type
	}
	cur := (*eface)(unsafe.Pointer(&fr.slots[o.slot]))
	own := (*eface)(unsafe.Pointer(&fr.slots[o.own]))
	if own.data != nil && cur.data == own.data && cur.typ == typ {
		*(*uint64)(cur.data) = r.n
		return
	}
	var nv Value
	if r.kind == 'i' {
		if n := int64(r.n); n >= -128 && n <= smallIntMax {
			fr.slots[o.slot] = smallInts[n+128] // shared: no box to own yet
			return
		}
		nv = boxIn(&fr.th.ints, int64Type, int64(r.n))
	} else {
		nv = boxIn(&fr.th.floats, float64Type, math.Float64frombits(r.n))
	}
	fr.slots[o.own], fr.slots[o.slot] = nv, nv
}

// recurOwned is recurIntoSlots for a recur that updates owned bindings
// (owned[i] set): every argument is computed first, then stored.
func recurOwned(args []operand, curs []*cursorArg, slots []int, owned []*ownedArg, gen *walkGeneric) node {
	if len(args) == 1 {
		o := owned[0]
		return func(fr *frame) Value {
			if gen != nil && walkUnset(fr.slots[gen.item]) {
				return gen.run(fr)
			}
			o.store(fr, o.eval(fr))
			return recurSentinel
		}
	}
	if curs == nil {
		curs = make([]*cursorArg, len(args))
	}
	return func(fr *frame) Value {
		if gen != nil && walkUnset(fr.slots[gen.item]) {
			return gen.run(fr)
		}
		var vals [maxDirectRecur]Value
		var nums [maxDirectRecur]ownedVal
		var adv [maxDirectRecur]*Vector
		for i := range args {
			switch o, cu := owned[i], curs[i]; {
			case o != nil:
				nums[i] = o.eval(fr)
			case cu != nil:
				vals[i], adv[i] = cursorStep(fr, cu, &args[i])
			default:
				vals[i] = args[i].get(fr)
			}
		}
		for i, s := range slots {
			if v := adv[i]; v != nil {
				v.dropFirst()
			}
			if o := owned[i]; o != nil {
				o.store(fr, nums[i])
				continue
			}
			fr.slots[s] = vals[i]
		}
		return recurSentinel
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
