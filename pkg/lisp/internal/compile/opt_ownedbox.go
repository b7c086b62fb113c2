package compile

import (
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

// ownedBindings decides which loop bindings the loop owns: forms are
// the loop forms that run while it iterates (test, recurring branches),
// names the binding names; skip is a binding never owned (-1: none).
// It returns whether each binding is owned, or nil when none is.
func (c *Compiler) ownedBindings(names []binding, skip int, forms []*syntax.Form) []bool {
	if c.PlainLoops {
		return nil
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

// ownable checks binding name (index i) in every form, and that some recur
// updates it with arithmetic (else owning it gains nothing).
func (c *Compiler) ownable(name binding, i int, forms []*syntax.Form) bool {
	updated := false
	for _, f := range forms {
		if !c.ownSafeUse(f, name, i, &updated) {
			return false
		}
	}
	return updated
}

// ownSafeUse checks that in f, name only appears as an argument of an
// ownSafeMin builtin's call, as the test of an if/when, or in recur
// position i (bare or as an update, see ownedUpdateForm). Each head counts
// as what it names there (resolve.go). It is conservative: a form it does
// not know that mentions name fails.
func (c *Compiler) ownSafeUse(f *syntax.Form, name binding, i int, updated *bool) bool {
	switch f.Kind {
	case syntax.FSym:
		return !name.is(f) // a bare use keeps the value
	case syntax.FLit, syntax.FRegex:
		return true
	case syntax.FFnLit:
		return !name.usedIn(f) // a closure keeps it
	case syntax.FList:
	default:
		return c.ownSafeAll(f.Items, name, i, updated)
	}
	if len(f.Items) == 0 {
		return true
	}
	head := f.Items[0]
	args := f.Items[1:]
	if head.Kind != syntax.FSym || head.Ns != "" {
		return c.ownSafeAll(f.Items, name, i, updated)
	}
	argsOK := func(args []*syntax.Form) bool {
		for _, a := range args {
			if !name.is(a) && !c.ownSafeUse(a, name, i, updated) {
				return false
			}
		}
		return true
	}
	if b := c.headBuiltin(f); b != "" {
		if min, ok := ownSafeMin(b); ok && len(args) >= min {
			return argsOK(args)
		}
		return c.ownSafeAll(args, name, i, updated) // a call: a bare argument fails
	}
	sp := c.headSpecial(f)
	if testFirst(sp) {
		if len(args) == 0 {
			return false
		}
		return argsOK(args[:1]) && c.ownSafeAll(args[1:], name, i, updated)
	}
	switch sp {
	case 0:
		if name.is(head) {
			return false // the binding called: it sees itself
		}
		return c.ownSafeAll(args, name, i, updated) // a call: a bare argument fails
	case spRecur:
		for j, a := range args {
			switch {
			case j == i && name.is(a):
			case j == i && c.ownedUpdateForm(a, name) != nil:
				*updated = true
				if !argsOK(a.Items[1:]) {
					return false
				}
			case !c.ownSafeUse(a, name, i, updated):
				return false
			}
		}
		return true
	case spDo, spLet, spCond, spAnd, spOr:
		return c.ownSafeAll(args, name, i, updated)
	}
	return !name.usedIn(f) // fn, loop, for, threading...: may capture it
}

func (c *Compiler) ownSafeAll(fs []*syntax.Form, name binding, i int, updated *bool) bool {
	for _, f := range fs {
		if !c.ownSafeUse(f, name, i, updated) {
			return false
		}
	}
	return true
}

// ownedUpdateForm returns the other operand of an update of name that
// recur computes inline: (+ name x), (+ x name), (- name x),
// (* name x), (* x name), (inc name), (dec name), with the builtins of
// those names. It returns nil for any other form (for inc/dec, a form for
// the constant 1).
func (c *Compiler) ownedUpdateForm(f *syntax.Form, name binding) *syntax.Form {
	if len(f.Items) < 2 {
		return nil
	}
	op, args := c.headBuiltin(f), f.Items[1:]
	switch {
	case (op == "inc" || op == "dec") && len(args) == 1 && name.is(args[0]):
		return &syntax.Form{Kind: syntax.FLit, Pos: f.Pos, Val: int64(1)}
	case (op == "+" || op == "-" || op == "*") && len(args) == 2 && name.is(args[0]) && !name.usedIn(args[1]):
		return args[1]
	case (op == "+" || op == "*") && len(args) == 2 && name.is(args[1]) && !name.usedIn(args[0]):
		return args[0]
	}
	return nil
}

// compileOwnedUpdate compiles recur argument f for the owned binding in
// slot, or returns nil when f is not an update (ownedUpdateForm).
func (c *Compiler) compileOwnedUpdate(f *syntax.Form, name binding, slot int) *ownedArg {
	xf := c.ownedUpdateForm(f, name)
	if xf == nil {
		return nil
	}
	op := f.Items[0].Name
	o := &ownedArg{slot: slot, accFirst: name.is(f.Items[1]), b: c.Builtins[op], unary: len(f.Items) == 2, pos: f.Pos}
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

// walkItem returns the item local's slot when f is the walk's (first xs)
// in the walk's own scope (and first is still the builtin).
func (c *Compiler) walkItem(f *syntax.Form) (int, bool) {
	w := c.walk
	if w == nil || c.sc != w.sc || !c.isWalkFirst(f, w.xs) {
		return 0, false
	}
	kind, idx, ok := c.sc.find(localKey{w.xs.name, w.xs.id})
	if !ok || kind != refLocal || idx != w.xsSlot {
		return 0, false
	}
	return w.itemSlot, true
}

// isWalkFirst reports whether f is (first xs), with the builtin first.
func (c *Compiler) isWalkFirst(f *syntax.Form, xs binding) bool {
	return len(f.Items) == 2 && c.callsBuiltin(f, "first") && xs.is(f.Items[1])
}
