package lisp

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

// walkHeads are the special forms a walk body may use: they neither make
// functions (which could keep xs) nor loops (whose recur is another's).
var walkHeads = map[string]bool{
	"let": true, "if": true, "if-not": true, "when": true, "when-not": true,
	"cond": true, "do": true, "and": true, "or": true, "recur": true,
	"->": true, "->>": true,
}

// walkPlan is a loop recognised as a walk over binding idx.
type walkPlan struct {
	idx       int // the walked binding
	xs        string
	testEmpty bool  // test is (empty? xs), else (seq xs)
	recurWhen bool  // the test value that recurs
	exit, rec *form // the branch that ends the loop, the one that recurs
	test      *form
	advance   *form // a (rest xs) / (next xs) of a recur, for its position
	useNext   bool
}

// walkLoop recognises a walk: f is (loop [bindings] (if test a b)) with
// plain-symbol bindings; names the binding names.
func (c *compiler) walkLoop(f *form, names []string) *walkPlan {
	if c.plainLoops {
		return nil
	}
	body := f.items[2:]
	if len(body) != 1 || body[0].kind != fList || len(body[0].items) != 4 {
		return nil
	}
	ifForm := body[0]
	head, test := ifForm.items[0], ifForm.items[1]
	if !head.isSym("if") && !head.isSym("if-not") {
		return nil
	}
	if test.kind != fList || len(test.items) != 2 || test.items[1].kind != fSym || test.items[1].ns != "" {
		return nil
	}
	p := &walkPlan{idx: -1, xs: test.items[1].name, test: test}
	for i, n := range names {
		if n == p.xs {
			p.idx = i
		}
	}
	if p.idx < 0 {
		return nil
	}
	switch {
	case test.items[0].isSym("empty?"):
		p.testEmpty = true
	case test.items[0].isSym("seq"):
	default:
		return nil
	}
	for _, n := range []string{"if", "if-not", "empty?", "seq", "first", "rest", "next"} {
		if _, _, local := c.sc.lookup(n); local {
			return nil
		}
	}
	// the test value that recurs (xs not empty), and the branch it takes:
	// (if (empty? xs) exit rec), (if (seq xs) rec exit), if-not swapped
	p.recurWhen = !p.testEmpty
	if p.recurWhen == head.isSym("if") {
		p.rec, p.exit = ifForm.items[2], ifForm.items[3]
	} else {
		p.exit, p.rec = ifForm.items[2], ifForm.items[3]
	}
	if formUses(p.exit, p.xs) || formUses(p.exit, "recur") || !formUses(p.rec, "recur") {
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
func (c *compiler) walkBody(f *form, p *walkPlan, n int) bool {
	switch f.kind {
	case fSym:
		return f.ns != "" || (f.name != p.xs && f.name != "first")
	case fFnLit:
		return !walkMentions(f, p.xs)
	case fList:
	default:
		for _, it := range f.items {
			if !c.walkBody(it, p, n) {
				return false
			}
		}
		return true
	}
	if len(f.items) == 0 {
		return true
	}
	head := f.items[0]
	if isWalkFirst(f, p.xs) {
		return true
	}
	if head.kind == fSym && head.ns == "" {
		switch {
		case head.name == "recur":
			if len(f.items) != n+1 {
				return false
			}
			adv := f.items[1+p.idx]
			if adv.kind != fList || len(adv.items) != 2 || !adv.items[1].isSym(p.xs) {
				return false
			}
			switch {
			case adv.items[0].isSym("rest"):
			case adv.items[0].isSym("next"):
				p.useNext = true
			default:
				return false
			}
			if p.advance == nil {
				p.advance = adv
			}
			for i, a := range f.items[1:] {
				if i != p.idx && !c.walkBody(a, p, n) {
					return false
				}
			}
			return true
		case head.name == "first":
			// (first other): fine, as a head
		case head.name == p.xs:
			return false
		case head.name == "fn":
			return !walkMentions(f, p.xs) // a function may run after xs moved on
		case isSpecialForm(head.name) && !walkHeads[head.name]:
			return false
		}
		if head.name == "first" {
			return c.walkBody(&form{kind: fVec, items: f.items[1:]}, p, n)
		}
	}
	for _, it := range f.items {
		if !c.walkBody(it, p, n) {
			return false
		}
	}
	return true
}

// walkMentions reports whether f mentions xs, first or recur.
func walkMentions(f *form, xs string) bool {
	return formUses(f, xs) || formUses(f, "first") || formUses(f, "recur")
}

// isWalkFirst reports whether f is (first xs).
func isWalkFirst(f *form, xs string) bool {
	return f.kind == fList && len(f.items) == 2 && f.items[0].isSym("first") && f.items[1].isSym(xs)
}

// walkAlias makes the compiler read (first xs) from the walk's item slot.
type walkAlias struct {
	xs               string
	xsSlot, itemSlot int // xs's slot, the hidden item local's slot
	sc               *scope
}

// walkItem returns the item local's slot when f is the walk's (first xs)
// in the walk's own scope (and first is still the builtin).
func (c *compiler) walkItem(f *form) (int, bool) {
	w := c.walk
	if w == nil || c.sc != w.sc || !isWalkFirst(f, w.xs) {
		return 0, false
	}
	if _, _, local := c.sc.lookup("first"); local {
		return 0, false
	}
	kind, idx, ok := c.sc.lookup(w.xs)
	if !ok || kind != refLocal || idx != w.xsSlot {
		return 0, false
	}
	return w.itemSlot, true
}

// walkFirst compiles the walk's (first xs): the item slot, or when a
// walk over a sequence left it unset, (first xs) as written.
func (c *compiler) walkFirst(f *form) node {
	slot, ok := c.walkItem(f)
	if !ok {
		return nil
	}
	xs, first, pos := c.walk.xsSlot, c.builtins["first"], f.pos
	return func(fr *frame) Value {
		v := fr.slots[slot]
		if walkUnset(v) {
			th := fr.th
			th.pos = pos
			th.tick()
			return slowCall1(th, first, fr.slots[xs])
		}
		return v
	}
}

// unsetMark fills a walk's item slot while it walks a sequence (other than
// a vector): its (first xs) are then computed as written.
type unsetMark struct{}

var unsetItem Value = &unsetMark{}

func walkUnset(v Value) bool {
	_, ok := v.(*unsetMark)
	return ok
}

// walkAdvance is how a walk advances xs when it walks a sequence: the
// recur computes (rest xs) / (next xs) at its place among the arguments.
type walkAdvance struct {
	item, xs int // the item and xs slots
	b        *Builtin
	pos      Pos
	at       int // the advance's index among the recur's arguments
}

// walkGeneric is a walk's recur over a sequence: every argument in order,
// the advance among them, then all stored (as the recur as written).
type walkGeneric struct {
	*walkAdvance
	args  []operand // the other arguments (those of owned[i] unused)
	slots []int
	owned []*ownedArg
}

func (g *walkGeneric) run(fr *frame) Value {
	var vals [maxDirectRecur]Value
	var nums [maxDirectRecur]ownedVal
	var next Value
	advance := func() {
		th := fr.th
		th.pos = g.pos
		th.tick()
		next = slowCall1(th, g.b, fr.slots[g.xs])
	}
	for i := range g.args {
		if i == g.at {
			advance()
		}
		if o := g.owned[i]; o != nil {
			nums[i] = o.eval(fr)
		} else {
			vals[i] = g.args[i].get(fr)
		}
	}
	if g.at == len(g.args) {
		advance()
	}
	for i, s := range g.slots {
		if o := g.owned[i]; o != nil {
			o.store(fr, nums[i])
			continue
		}
		fr.slots[s] = vals[i]
	}
	fr.slots[g.xs] = next
	return recurSentinel
}

// compileWalk compiles a recognised walk loop (see walkLoop). names are
// the binding names, inits their compiled inits, slots their frame slots.
func (c *compiler) compileWalk(p *walkPlan, names []string, inits []node, slots []int) node {
	c.walks++
	item := c.sc.declare(" first " + p.xs)
	owned := c.ownedBindings(names, p.idx, []*form{p.test, p.rec})
	savedWalk := c.walk
	c.walk = &walkAlias{xs: p.xs, xsSlot: slots[p.idx], itemSlot: item, sc: c.sc}
	advB := c.builtins["rest"]
	if p.useNext {
		advB = c.builtins["next"]
	}
	xsSlot := slots[p.idx]
	c.sc.recur = &recurTarget{n: len(slots), slots: slots, walk: p.idx + 1, names: names, owned: owned,
		walkAdv: &walkAdvance{item: item, xs: xsSlot, b: advB, pos: p.advance.pos, at: p.idx}}
	var exit, again node
	if p.exit.pos.Offset < p.rec.pos.Offset {
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
	if p.rec.kind == fList && len(p.rec.items) > 0 && p.rec.items[0].isSym("recur") {
		sole = c.sc.recur.sole
	}
	if sole != nil {
		c.soleWalks++
	}
	testB := c.builtins["seq"]
	if p.testEmpty {
		testB = c.builtins["empty?"]
	}
	testPos := p.test.pos
	return func(fr *frame) Value {
		th := fr.th
		bindDirect(fr, inits, slots, nil)
		mark := th.sp
		coll := fr.slots[xsSlot]
		if v, ok := coll.(*Vector); ok || coll == nil {
			var items itemsOf
			if ok {
				items = v.itemsOf()
			}
			var it loopIter
			it.begin(th, fr.slots, slots)
			if sole != nil {
				sole.walk(fr, items, item, mark, &it, slots)
				fr.slots[item] = nil
				return exit(fr)
			}
			for i := 0; ; i++ {
				if i >= items.len() {
					fr.slots[item] = nil
					return exit(fr)
				}
				fr.slots[item] = items.at(i)
				if r := again(fr); !isRecur(r) {
					return r
				}
				th.tick()
				th.countLoop()
				th.sp = mark
				it.next(th, fr.slots, slots)
			}
		}
		// any other collection: the builtins as written; recur advances xs
		fr.slots[item] = unsetItem
		var it loopIter
		it.begin(th, fr.slots, slots)
		for {
			th.pos = testPos
			th.tick()
			if Truthy(slowCall1(th, testB, fr.slots[xsSlot])) != p.recurWhen {
				return exit(fr)
			}
			if r := again(fr); !isRecur(r) {
				return r
			}
			th.tick()
			th.countLoop()
			th.sp = mark
			it.next(th, fr.slots, slots)
		}
	}
}

// isRecur reports whether a node's value is the recur sentinel (a type
// check: cheaper than comparing interfaces).
func isRecur(v Value) bool {
	_, ok := v.(*recurMark)
	return ok
}
