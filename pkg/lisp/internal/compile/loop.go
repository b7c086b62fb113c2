package compile

import (
	"math/bits"
	"slices"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// loop and recur. A loop compiles to a Go for over its frame slots: recur
// stores the new values itself (bindDirect, recurDirect), a
// (loop [...] (if test exit (recur ...))) runs without the if node
// (loopIf), and loops that walk a collection or keep a number in an owned
// box use the optimisations of opt_walkloop.go and opt_ownedbox.go.

func sfLoop(c *Compiler, f *syntax.Form, _ bool) core.Node {
	var lin []bool
	if !c.PlainLoops {
		lin = c.LinearLoopBindings(f)
	}
	nd := compileLoop(c, f, lin)
	if lin == nil {
		return nd
	}
	return func(fr *core.Frame) core.Value {
		v := nd(fr)
		if m, ok := v.(*core.Map); ok && m.Edit != nil {
			builtins.EndTransient(m) // the loop's own accumulator, handed out as is
		}
		return v
	}
}

// LinearLoopBindings reports which bindings of a loop (plain symbols
// bound once) are used linearly in its body (linearTail: only as the map
// argument of a tail assoc/update/dissoc/assoc-in/update-in handed to
// recur as the same binding, or returned as is); nil when none is. Such a
// binding starts as a private transient copy of its initial map, so a
// loop that builds a map with assoc updates it in place as a linear
// reduce does (Map.edit); the transient is ended when the loop returns
// it.
func (c *Compiler) LinearLoopBindings(f *syntax.Form) []bool {
	if len(f.Items) < 3 || f.Items[1].Kind != syntax.FVec || len(f.Items[1].Items)%2 != 0 {
		return nil
	}
	b := f.Items[1].Items
	body := f.Items[2:]
	var lin []bool
	for i := 0; i < len(b); i += 2 {
		p := b[i]
		if p.Kind != syntax.FSym || p.Ns != "" || p.Name == "&" || p.Name == "_" {
			continue
		}
		acc := bindingOf(p)
		again := false
		for j := 0; j < len(b); j += 2 { // another binding of the name hides it
			again = again || (j != i && declares(b[j], p.Name))
		}
		for j := i + 1; j < len(b); j += 2 { // later inits see the binding
			again = again || acc.usedIn(b[j])
		}
		if again || !c.linearLoopBody(body, acc, i/2) {
			continue
		}
		if lin == nil {
			lin = make([]bool, len(b)/2)
		}
		lin[i/2] = true
	}
	return lin
}

// linearLoopBody checks a loop body for linear use of binding k, acc.
func (c *Compiler) linearLoopBody(body []*syntax.Form, acc binding, k int) bool {
	if len(body) == 0 {
		return false
	}
	for _, f := range body[:len(body)-1] {
		if acc.usedIn(f) {
			return false
		}
	}
	return c.linearTail(body[len(body)-1], acc, k)
}

// compileLoop compiles a loop; lin marks the bindings that start as
// transient maps (linearLoopBindings).
func compileLoop(c *Compiler, f *syntax.Form, lin []bool) core.Node {
	if nd := c.indexLoop(f, lin, compileLoop); nd != nil {
		return nd
	}
	b := c.bindingPairs(f, "loop")
	saved := len(c.sc.locals)
	savedRecur := c.sc.recur
	inits := make([]core.Node, 0, len(b)/2)
	binds := make([]core.Binder, 0, len(b)/2)
	var cursors []*loopCursorSlot
	var owns []int
	// direct[i] is the slot of binding i when it is a plain symbol that no
	// other binding of this loop declares again (stored without a binder)
	direct := make([]int, 0, len(b)/2)
	for i := 0; i < len(b); i += 2 {
		init := c.compile(b[i+1], false)
		if lin != nil && lin[i/2] {
			init = transientInit(init)
		}
		inits = append(inits, init)
		binds = append(binds, c.compilePattern(b[i]))
		slot := -1
		if b[i].Kind == syntax.FSym {
			slot = c.sc.locals[len(c.sc.locals)-1].slot
		}
		direct = append(direct, slot)
	}
	for i := range direct {
		if direct[i] < 0 {
			continue
		}
		for _, l := range c.sc.locals[saved:] {
			if l.name == b[2*i].Name && l.slot != direct[i] {
				direct[i] = -1 // declared again by another binding
				break
			}
		}
	}
	var names []binding // the bindings when all are plain symbols
	if len(direct) <= maxDirectRecur && !slices.Contains(direct, -1) {
		names = make([]binding, len(direct))
		for i := range direct {
			names[i] = bindingOf(b[2*i])
		}
		if p := c.walkLoop(f, names); p != nil {
			nd := c.compileWalk(p, names, inits, direct)
			c.sc.recur = savedRecur
			c.sc.locals = c.sc.locals[:saved]
			return nd
		}
	}
	for i, slot := range direct {
		p := bindingOf(b[2*i])
		if slot < 0 || !c.advancesByRest(f.Items[2:], p) || !c.loopCursor(p, f.Items[2:]) {
			continue
		}
		if cursors == nil {
			cursors = make([]*loopCursorSlot, len(binds))
		}
		own := c.sc.declare(" cursor " + p.name)
		cursors[i] = &loopCursorSlot{name: p, slot: slot, own: own}
		owns = append(owns, own)
	}
	allDirect := len(direct) <= maxDirectRecur
	for _, s := range direct {
		allDirect = allDirect && s >= 0
	}
	rt := &recurTarget{n: len(binds), cursors: cursors}
	if allDirect {
		rt.slots = direct
		if test, rec, exit := c.loopIfForms(f.Items[2:]); test != nil {
			forms := []*syntax.Form{test, rec, exit}
			if !c.mentionsRecur(exit) {
				forms = forms[:2]
			}
			rt.names = names
			rt.owned = c.ownedBindings(rt.names, -1, forms)
		}
	}
	c.sc.recur = rt
	var test, exit, again core.Node
	var recurWhen bool
	if allDirect {
		test, exit, again, recurWhen = c.loopIf(f.Items[2:])
	}
	var body core.Node
	if test == nil {
		body = c.compileBody(f.Items[2:], true)
	}
	c.sc.recur = savedRecur
	c.sc.locals = c.sc.locals[:saved]
	if test != nil {
		// (loop [...] (if test exit (recur ...))) as a Go loop: the recur
		// branch runs without a trip through the if node and the sentinel
		return func(fr *core.Frame) core.Value {
			th := fr.Th
			bindDirect(fr, inits, direct, owns)
			mark := th.Sp
			var it core.LoopIter
			it.Begin(th, fr.Slots, direct)
			for {
				if core.Truthy(test(fr)) == recurWhen {
					again(fr)
				} else if v := exit(fr); v != core.RecurSentinel {
					return v
				}
				th.Tick()
				th.CountLoop()
				th.Sp = mark
				it.Next(th, fr.Slots, direct)
			}
		}
	}
	if allDirect {
		// recur stores the new bindings itself
		return func(fr *core.Frame) core.Value {
			th := fr.Th
			bindDirect(fr, inits, direct, owns)
			mark := th.Sp
			var it core.LoopIter
			it.Begin(th, fr.Slots, direct)
			for {
				v := body(fr)
				if _, again := v.(*core.RecurMark); !again {
					return v
				}
				th.Tick()
				th.CountLoop()
				th.Sp = mark
				it.Next(th, fr.Slots, direct)
			}
		}
	}
	return func(fr *core.Frame) core.Value {
		th := fr.Th
		for i, in := range inits {
			binds[i](fr, in(fr))
		}
		for _, o := range owns {
			fr.Slots[o] = nil
		}
		mark := th.Sp
		var it core.LoopIter // given nothing: the bindings may be destructured
		it.Mark = th.Alloc
		for {
			v := body(fr)
			if v != core.RecurSentinel {
				return v
			}
			th.Tick()
			th.CountLoop()
			args := th.RecurArgs
			it.NextArgs(th, args)
			for i, bd := range binds {
				if s := direct[i]; s >= 0 {
					fr.Slots[s] = args[i]
				} else {
					bd(fr, args[i])
				}
			}
			th.Sp = mark
		}
	}
}

// transientInit wraps the initial value of a linear loop binding: a map
// becomes a private transient copy (the map itself is never changed).
func transientInit(init core.Node) core.Node {
	return func(fr *core.Frame) core.Value {
		v := init(fr)
		if m, ok := v.(*core.Map); ok && !m.Ord {
			return m.Transient()
		}
		return v
	}
}

// loopIfForms returns the test and branches of a loop body that is one
// (if test a b) or (if-not ...) where exactly one branch is a recur form
// (nil test: any other body). It only reads the forms: sfLoop's analyses
// use it before compiling, loopIf to compile.
func (c *Compiler) loopIfForms(body []*syntax.Form) (test, rec, exit *syntax.Form) {
	if len(body) != 1 || body[0].Kind != syntax.FList || len(body[0].Items) != 4 {
		return nil, nil, nil
	}
	f := body[0]
	if sp := c.headSpecial(f); sp != spIf && sp != spIfNot {
		return nil, nil, nil
	}
	isRecur := func(g *syntax.Form) bool { return c.headSpecial(g) == spRecur }
	a, b := f.Items[2], f.Items[3]
	switch {
	case isRecur(b) && !isRecur(a):
		return f.Items[1], b, a
	case isRecur(a) && !isRecur(b):
		return f.Items[1], a, b
	}
	return nil, nil, nil
}

// loopIf compiles a loop body of loopIfForms' shape:
// it returns the test, the other branch (compiled in tail position: it may
// recur too), the recur, and which truth value of the test recurs. test is
// nil for any other body.
func (c *Compiler) loopIf(body []*syntax.Form) (test, exit, again core.Node, recurWhen bool) {
	testF, rec, _ := c.loopIfForms(body)
	if testF == nil {
		return nil, nil, nil, false
	}
	f := body[0]
	a, b := f.Items[2], f.Items[3]
	recurWhen = rec == a
	if c.headSpecial(f) == spIfNot {
		recurWhen = !recurWhen
	}
	test = c.compile(testF, false)
	an, bn := c.compile(a, true), c.compile(b, true) // source order, as if does
	if rec == a {
		again, exit = an, bn
	} else {
		again, exit = bn, an
	}
	return test, exit, again, recurWhen
}

// recurIntoSlots compiles a loop's recur whose bindings are all plain
// symbols: the new values are computed, then stored straight into the
// loop's slots (the loop node just runs its body again).
func recurIntoSlots(args []operand, curs []*cursorArg, slots []int, gen *walkGeneric) core.Node {
	if curs == nil {
		curs = make([]*cursorArg, len(args))
	}
	switch len(args) {
	case 1:
		a0, c0, s0 := args[0], curs[0], slots[0]
		return func(fr *core.Frame) core.Value {
			if gen != nil && walkUnset(fr.Slots[gen.item]) {
				return gen.run(fr)
			}
			var v0 core.Value
			var adv0 *core.Vector
			if c0 != nil {
				v0, adv0 = cursorStep(fr, c0, &a0)
			} else {
				v0 = a0.Get(fr)
			}
			if adv0 != nil {
				adv0.DropFirst()
			}
			fr.Slots[s0] = v0
			return core.RecurSentinel
		}
	case 2:
		a0, a1, c0, c1, s0, s1 := args[0], args[1], curs[0], curs[1], slots[0], slots[1]
		return func(fr *core.Frame) core.Value {
			if gen != nil && walkUnset(fr.Slots[gen.item]) {
				return gen.run(fr)
			}
			var v0, v1 core.Value
			var adv0, adv1 *core.Vector
			if c0 != nil {
				v0, adv0 = cursorStep(fr, c0, &a0)
			} else {
				v0 = a0.Get(fr)
			}
			if c1 != nil {
				v1, adv1 = cursorStep(fr, c1, &a1)
			} else {
				v1 = a1.Get(fr)
			}
			if adv0 != nil {
				adv0.DropFirst()
			}
			if adv1 != nil {
				adv1.DropFirst()
			}
			fr.Slots[s0], fr.Slots[s1] = v0, v1
			return core.RecurSentinel
		}
	}
	return func(fr *core.Frame) core.Value {
		if gen != nil && walkUnset(fr.Slots[gen.item]) {
			return gen.run(fr)
		}
		var vals [maxDirectRecur]core.Value
		var adv [maxDirectRecur]*core.Vector // cursors advanced once all args are computed
		for i := range args {
			if cu := curs[i]; cu != nil {
				vals[i], adv[i] = cursorStep(fr, cu, &args[i])
				continue
			}
			vals[i] = args[i].Get(fr)
		}
		for i, s := range slots {
			if v := adv[i]; v != nil {
				v.DropFirst()
			}
			fr.Slots[s] = vals[i]
		}
		return core.RecurSentinel
	}
}

// recurDirect compiles a recur of a loop whose bindings are all plain
// symbols (rt.slots): the arguments are computed, then stored straight into
// the loop's slots. A walk loop's advance is left to the loop (opt_walkloop.go),
// an owned binding's arithmetic update writes its box (opt_ownedbox.go).
func (c *Compiler) recurDirect(f *syntax.Form, rt *recurTarget) core.Node {
	n := len(f.Items) - 1
	ops := make([]operand, 0, n)
	slots := make([]int, 0, n)
	var curs []*cursorArg
	var owned []*ownedArg
	for i, af := range f.Items[1:] {
		if i == rt.walk-1 {
			continue // the walk loop advances it
		}
		var ow *ownedArg
		if rt.owned != nil && rt.owned[i] {
			ow = c.compileOwnedUpdate(af, rt.names[i], rt.slots[i])
		}
		var op operand
		if ow == nil {
			op = c.operandOf(af, c.compile(af, false))
		}
		cu := c.cursorRecurArg(i, af)
		if cu != nil && curs == nil {
			curs = make([]*cursorArg, len(ops), len(f.Items))
		}
		if ow != nil && owned == nil {
			owned = make([]*ownedArg, len(ops), len(f.Items))
		}
		ops, slots = append(ops, op), append(slots, rt.slots[i])
		if curs != nil {
			curs = append(curs, cu)
		}
		if owned != nil {
			owned = append(owned, ow)
		}
	}
	var gen *walkGeneric
	if w := rt.walkAdv; w != nil {
		gen = &walkGeneric{walkAdvance: w, args: ops, slots: slots, owned: owned}
		if owned == nil {
			gen.owned = make([]*ownedArg, len(ops))
		}
	}
	if len(ops) == 0 {
		if gen != nil {
			return func(fr *core.Frame) core.Value {
				if walkUnset(fr.Slots[gen.item]) {
					return gen.run(fr)
				}
				return core.RecurSentinel
			}
		}
		return func(*core.Frame) core.Value { return core.RecurSentinel }
	}
	if owned != nil {
		if gen != nil && len(ops) == 1 && curs == nil {
			rt.sole = owned[0]
		}
		return recurOwned(ops, curs, slots, owned, gen)
	}
	return recurIntoSlots(ops, curs, slots, gen)
}

func sfRecur(c *Compiler, f *syntax.Form, tail bool) core.Node {
	if c.sc.recur == nil || !tail {
		c.fail(core.KindAnalysis, f.Pos, "recur must be the last expression of a loop or fn body", "recur must be in tail position")
	}
	n := len(f.Items) - 1
	if n != c.sc.recur.n {
		c.fail(core.KindArity, f.Pos, "", "recur expects %s (the loop's bindings), got %d", core.ArgsText(c.sc.recur.n), n)
	}
	rt := c.sc.recur
	if rt.slots != nil {
		return c.recurDirect(f, rt)
	}
	args := c.compileAll(f.Items[1:])
	var curs []*cursorArg
	for i, af := range f.Items[1:] {
		if cu := c.cursorRecurArg(i, af); cu != nil {
			if curs == nil {
				curs = make([]*cursorArg, n)
			}
			curs[i] = cu
		}
	}
	if curs == nil {
		return func(fr *core.Frame) core.Value {
			th := fr.Th
			a := th.AllocArgs(n)
			for i, an := range args {
				a[i] = an(fr)
			}
			th.RecurArgs = a
			return core.RecurSentinel
		}
	}
	return func(fr *core.Frame) core.Value {
		th := fr.Th
		a := th.AllocArgs(n)
		var pending uint64
		for i, an := range args {
			if cu := curs[i]; cu != nil {
				if v, ok := fr.Slots[cu.slot].(*core.Vector); ok && v.Len() > 1 {
					// (rest xs) / (next xs) on a vector of 2+ items: a view
					th.CallPos = cu.pos
					th.Tick()
					if o, _ := fr.Slots[cu.own].(*core.Vector); o == v {
						a[i] = v // advanced once every argument is evaluated
						pending |= 1 << i
					} else {
						nv := v.OwnedRest()
						fr.Slots[cu.own] = nv
						a[i] = nv
					}
					continue
				}
			}
			a[i] = an(fr)
		}
		for pending != 0 {
			v := a[bits.TrailingZeros64(pending)].(*core.Vector)
			pending &= pending - 1
			v.DropFirst()
		}
		th.RecurArgs = a
		return core.RecurSentinel
	}
}
