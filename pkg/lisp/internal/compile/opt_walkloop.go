package compile

import (
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// Walk loops. The most common loop an LLM writes walks a collection:
//
//	(loop [xs coll acc 0]
//	  (if (empty? xs)
//	    acc
//	    (recur (rest xs) (+ acc (:qty (first xs))))))
//
// Compiled as written, every iteration calls empty?, first and rest on
// xs. When the compiler can see that xs is only ever tested, advanced by
// its recur and read through (first xs), it compiles the loop as a walk:
// (first xs) becomes a hidden local that the loop sets once per iteration,
// and xs itself is never materialised. At run time a vector (or nil) is
// walked by index; any other collection is walked through the empty?,
// first and rest (or next) builtins, so values, errors and laziness are
// those of the loop as written.

// walkHead reports whether special form sp may be in a walk's body: it
// neither makes functions (which could keep xs) nor loops (whose recur is
// another's).
func walkHead(sp specialID) bool {
	switch sp {
	case spLet, spCond, spDo, spAnd, spOr, spRecur, spThread, spThreadL:
		return true
	}
	return testFirst(sp)
}

// walkPlan is a loop recognised as a walk over binding idx.
type walkPlan struct {
	idx       int // the walked binding
	xs        binding
	testEmpty bool         // test is (empty? xs), else (seq xs)
	recurWhen bool         // the test value that recurs
	exit, rec *syntax.Form // the branch that ends the loop, the one that recurs
	test      *syntax.Form
	advance   *syntax.Form // a (rest xs) / (next xs) of a recur, for its position
	useNext   bool
}

// walkLoop recognises a walk: f is (loop [bindings] (if test a b)) with
// plain-symbol bindings; names the bindings.
func (c *Compiler) walkLoop(f *syntax.Form, names []binding) *walkPlan {
	if c.PlainLoops {
		return nil
	}
	body := f.Items[2:]
	if len(body) != 1 || body[0].Kind != syntax.FList || len(body[0].Items) != 4 {
		return nil
	}
	ifForm := body[0]
	test := ifForm.Items[1]
	isIf := c.headSpecial(ifForm) == spIf
	if !isIf && c.headSpecial(ifForm) != spIfNot {
		return nil
	}
	if test.Kind != syntax.FList || len(test.Items) != 2 || test.Items[1].Kind != syntax.FSym || test.Items[1].Ns != "" {
		return nil
	}
	p := &walkPlan{idx: -1, test: test}
	for i, n := range names {
		if n.is(test.Items[1]) {
			p.idx, p.xs = i, n
		}
	}
	if p.idx < 0 {
		return nil
	}
	switch {
	case c.isBuiltinSym(test.Items[0], "empty?"):
		p.testEmpty = true
	case c.isBuiltinSym(test.Items[0], "seq"):
	default:
		return nil
	}
	// the test value that recurs (xs not empty), and the branch it takes:
	// (if (empty? xs) exit rec), (if (seq xs) rec exit), if-not swapped
	p.recurWhen = !p.testEmpty
	if p.recurWhen == isIf {
		p.rec, p.exit = ifForm.Items[2], ifForm.Items[3]
	} else {
		p.exit, p.rec = ifForm.Items[2], ifForm.Items[3]
	}
	if p.xs.usedIn(p.exit) || c.mentionsRecur(p.exit) || !c.mentionsRecur(p.rec) {
		return nil
	}
	if !c.walkBody(p.rec, p, len(names)) {
		return nil
	}
	return p
}

// walkBody checks the recurring branch: xs appears only in (first xs) and
// as the (rest xs) / (next xs) of each recur at the walked position, first
// only as a call head, and no form makes a function or another loop.
func (c *Compiler) walkBody(f *syntax.Form, p *walkPlan, n int) bool {
	switch f.Kind {
	case syntax.FSym:
		return !p.xs.is(f) && !c.isBuiltinSym(f, "first")
	case syntax.FFnLit:
		return !c.walkMentions(f, p.xs)
	case syntax.FList:
	default:
		for _, it := range f.Items {
			if !c.walkBody(it, p, n) {
				return false
			}
		}
		return true
	}
	if len(f.Items) == 0 {
		return true
	}
	head := f.Items[0]
	if c.isWalkFirst(f, p.xs) {
		return true
	}
	if head.Kind == syntax.FSym && head.Ns == "" {
		sp := c.symSpecial(head)
		switch {
		case sp == spRecur:
			if len(f.Items) != n+1 {
				return false
			}
			adv := f.Items[1+p.idx]
			if !c.cursorAdvance(adv, p.xs) {
				return false
			}
			p.useNext = p.useNext || adv.Items[0].Name == "next"
			if p.advance == nil {
				p.advance = adv
			}
			for i, a := range f.Items[1:] {
				if i != p.idx && !c.walkBody(a, p, n) {
					return false
				}
			}
			return true
		case c.isBuiltinSym(head, "first"):
			// (first other): fine, as a head
			return c.walkBody(&syntax.Form{Kind: syntax.FVec, Items: f.Items[1:]}, p, n)
		case p.xs.is(head):
			return false
		case sp == spFn:
			return !c.walkMentions(f, p.xs) // a function may run after xs moved on
		case sp != 0 && !walkHead(sp):
			return false
		}
	}
	for _, it := range f.Items {
		if !c.walkBody(it, p, n) {
			return false
		}
	}
	return true
}

// walkMentions reports whether f mentions xs, the builtin first or recur.
func (c *Compiler) walkMentions(f *syntax.Form, xs binding) bool {
	return mentions(f, func(s *syntax.Form) bool {
		return xs.is(s) || c.isBuiltinSym(s, "first") || c.symSpecial(s) == spRecur
	})
}

// walkFirst compiles the walk's (first xs): the item slot, or when a
// walk over a sequence left it unset, (first xs) as written.
func (c *Compiler) walkFirst(f *syntax.Form) core.Node {
	slot, ok := c.walkItem(f)
	if !ok {
		return nil
	}
	xs, first, pos := c.walk.xsSlot, c.Builtins["first"], f.Pos
	return func(fr *core.Frame) core.Value {
		v := fr.Slots[slot]
		if walkUnset(v) {
			th := fr.Th
			th.CallPos = pos
			th.Tick()
			return core.SlowCall1(th, first, fr.Slots[xs])
		}
		return v
	}
}

// compileWalk compiles a recognised walk loop (see walkLoop). names are
// the bindings, inits their compiled inits, slots their frame slots.
func (c *Compiler) compileWalk(p *walkPlan, names []binding, inits []core.Node, slots []int) core.Node {
	c.Walks++
	item := c.sc.declare(" first " + p.xs.name)
	owned := c.ownedBindings(names, p.idx, []*syntax.Form{p.test, p.rec})
	savedWalk := c.walk
	c.walk = &walkAlias{xs: p.xs, xsSlot: slots[p.idx], itemSlot: item, sc: c.sc}
	advB := c.Builtins["rest"]
	if p.useNext {
		advB = c.Builtins["next"]
	}
	xsSlot := slots[p.idx]
	c.sc.recur = &recurTarget{n: len(slots), slots: slots, walk: p.idx + 1, names: names, owned: owned,
		walkAdv: &walkAdvance{item: item, xs: xsSlot, b: advB, pos: p.advance.Pos, at: p.idx}}
	var exit, again core.Node
	if p.exit.Pos.Offset < p.rec.Pos.Offset {
		exit = c.compile(p.exit, true)
		again = c.compile(p.rec, true)
	} else {
		again = c.compile(p.rec, true)
		exit = c.compile(p.exit, true)
	}
	c.walk = savedWalk
	// (if (empty? xs) exit (recur (rest xs) (+ acc ...))): the recurring
	// branch is the recur itself and its one update is an owned binding's, so
	// a vector's walk runs the update without calling the recur node
	var sole *ownedArg
	if c.headSpecial(p.rec) == spRecur {
		sole = c.sc.recur.sole
	}
	if sole != nil {
		c.SoleWalks++
	}
	testB := c.Builtins["seq"]
	if p.testEmpty {
		testB = c.Builtins["empty?"]
	}
	testPos := p.test.Pos
	return func(fr *core.Frame) core.Value {
		th := fr.Th
		bindDirect(fr, inits, slots, nil)
		mark := th.Sp
		coll := fr.Slots[xsSlot]
		if v, ok := coll.(*core.Vector); ok || coll == nil {
			var items core.ItemsOf
			if ok {
				items = v.ItemsOf()
			}
			var it core.LoopIter
			it.Begin(th, fr.Slots, slots)
			if sole != nil {
				sole.walk(fr, items, item, mark, &it, slots)
				fr.Slots[item] = nil
				return exit(fr)
			}
			for i := 0; ; i++ {
				if i >= items.Len() {
					fr.Slots[item] = nil
					return exit(fr)
				}
				fr.Slots[item] = items.At(i)
				if r := again(fr); !isRecur(r) {
					return r
				}
				th.Tick()
				th.CountLoop()
				th.Sp = mark
				it.Next(th, fr.Slots, slots)
			}
		}
		// any other collection: the builtins as written; recur advances xs
		fr.Slots[item] = unsetItem
		var it core.LoopIter
		it.Begin(th, fr.Slots, slots)
		for {
			th.CallPos = testPos
			th.Tick()
			if core.Truthy(core.SlowCall1(th, testB, fr.Slots[xsSlot])) != p.recurWhen {
				return exit(fr)
			}
			if r := again(fr); !isRecur(r) {
				return r
			}
			th.Tick()
			th.CountLoop()
			th.Sp = mark
			it.Next(th, fr.Slots, slots)
		}
	}
}
