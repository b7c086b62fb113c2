package lisp

import (
	"strconv"
	"strings"
)

// Pipeline fusion. LLM-written programs are mostly pipelines such as
//
//	(->> ctx/orders (filter :paid) (map :total) (reduce +))
//
// Evaluated as written, filter and map each build a vector the size of
// their input only for reduce to walk it once and drop it. When the
// compiler sees reduce (or count, distinct, set, frequencies, group-by)
// applied to a chain of map/filter/remove calls (one function, one
// collection each) whose functions are all pure, it compiles one loop
// instead: each item goes through the stages and straight into the
// reducing function.
//
// The result is exactly the eager pipeline's. Arguments are evaluated in
// the order the program gives them. Pure functions (pureFn) cannot observe
// that their calls now interleave per item, and errors are made to agree:
// when a stage or the reducer fails, the rest of the items run through the
// stages eagerly first (eagerStages), so the error the eager pipeline
// would have met first is the one raised; after a reduced the rest of the
// items still pass the stages. A collection other than a vector (a lazy
// seq, a map, a set, a string) runs the stages eagerly, as unfused code
// does. No intermediate vector is charged to the memory limit.

// stage kinds of a fused pipeline.
const (
	stageMap = iota
	stageFilter
	stageRemove
)

// maxFuseStages bounds the stages fused into one loop (longer chains fuse
// their outermost stages and run the rest eagerly).
const maxFuseStages = 8

type fuseStage struct {
	kind int
	fn   node
	b    *Builtin // the builtin the stage replaces (eager fallback)
	pos  Pos
}

// fusedStageOf reports whether f is (map g coll), (filter p coll) or
// (remove p coll) naming the builtin (not a local of that name).
func (c *compiler) fusedStageOf(f *form) (*Builtin, int, bool) {
	if f.kind != fList || len(f.items) != 3 {
		return nil, 0, false
	}
	head := f.items[0]
	if head.kind != fSym || (head.ns != "" && head.ns != "clojure.core" && head.ns != "core") {
		return nil, 0, false
	}
	if head.ns == "" {
		if _, _, local := c.sc.lookup(head.name); local {
			return nil, 0, false
		}
	}
	b, ok := c.builtins[head.name]
	if !ok {
		return nil, 0, false
	}
	switch b.Name {
	case "map":
		return b, stageMap, true
	case "filter":
		return b, stageFilter, true
	case "remove":
		return b, stageRemove, true
	}
	return nil, 0, false
}

// fusedReduce compiles (reduce f coll) / (reduce f init coll) where coll is
// a map/filter/remove chain; ok is false when the form does not fuse.
func (c *compiler) fusedReduce(f *form) (node, bool) {
	n := len(f.items) - 1
	collForm := f.items[n]
	if !c.fusable(collForm) || !c.pureFn(f.items[1]) {
		return nil, false
	}
	fnNode := c.compileReducer(f.items[1])
	var initNode node
	if n == 3 {
		initNode = c.compile(f.items[2], false)
	}
	stages, collNode := c.fuseChain(collForm, true)
	c.fusions++
	pos := f.pos
	reduce := c.builtins["reduce"]
	return func(fr *frame) Value {
		th := fr.th
		fv := fnNode(fr)
		var acc Value
		if initNode != nil {
			acc = initNode(fr)
		}
		var fns [maxFuseStages]Value
		coll, items, fused := startChain(fr, stages, &fns, collNode, pos)
		if !fused {
			if initNode != nil {
				return callBuiltin3(th, reduce, fv, acc, coll)
			}
			return slowCall2(th, reduce, fv, coll)
		}
		return reduceFused(th, fv, acc, initNode != nil, stages, fns[:len(stages)], items, pos)
	}, true
}

// fusable reports whether f is a map/filter/remove call with a pure
// function: a chain of at least one stage.
func (c *compiler) fusable(f *form) bool {
	_, _, ok := c.fusedStageOf(f)
	return ok && c.pureFn(f.items[1])
}

// fuseChain compiles a fusable chain: its stages outermost first (as their
// arguments are evaluated) and the innermost collection. once says the
// consumer reads the chain once, in order, and keeps none of it: then a
// range written as the innermost collection is streamed (streamNode).
func (c *compiler) fuseChain(collForm *form, once bool) ([]fuseStage, node) {
	var stages []fuseStage
	for len(stages) < maxFuseStages && c.fusable(collForm) {
		b, kind, _ := c.fusedStageOf(collForm)
		stages = append(stages, fuseStage{kind: kind, fn: c.compile(collForm.items[1], false), b: b, pos: collForm.pos})
		collForm = collForm.items[2]
	}
	coll := c.compile(collForm, false)
	if once && c.streamSource(collForm) {
		coll = streamNode(coll)
	}
	return stages, coll
}

// startChain evaluates a fused chain's stage functions (into fns) and its
// collection, and counts the steps of the stage calls and of the consumer
// call, at their positions. A vector's items are returned to be fused
// (fused true); any other collection runs through the stages eagerly and
// comes back as coll for the consumer's general function.
func startChain(fr *frame, stages []fuseStage, fns *[maxFuseStages]Value, collNode node, pos Pos) (coll Value, items itemsOf, fused bool) {
	th := fr.th
	for i := range stages {
		fns[i] = stages[i].fn(fr)
	}
	coll = collNode(fr)
	vec, isVec := coll.(*Vector)
	for i := len(stages) - 1; i >= 0; i-- {
		th.pos = stages[i].pos
		th.tick()
		if !isVec {
			in, _ := coll.(*LazySeq)
			coll = slowCall2(th, stages[i].b, fns[i], coll)
			if out, ok := coll.(*LazySeq); ok && in != nil && in.stream {
				// the stage's seq over a stream is read only by the
				// next stage or the consumer: a stream too
				out.stream = true
			}
		}
	}
	th.pos = pos
	th.tick()
	if !isVec {
		return coll, itemsOf{}, false
	}
	return nil, vec.itemsOf(), true
}

// passStages runs item x through the stages, innermost (last) first: its
// value after the maps, and whether every filter kept it.
func passStages(th *Thread, stages []fuseStage, fns []Value, x Value) (Value, bool) {
	for k := len(stages) - 1; k >= 0; k-- {
		th.pos = stages[k].pos
		var y Value
		if kw, ok := fns[k].(*Keyword); ok { // as Call1 calls a keyword
			th.tick()
			y = kwGet(x, kw)
		} else {
			y = th.Call1(fns[k], x)
		}
		switch stages[k].kind {
		case stageMap:
			x = y
		case stageFilter:
			if !Truthy(y) {
				return nil, false
			}
		case stageRemove:
			if Truthy(y) {
				return nil, false
			}
		}
	}
	return x, true
}

// fusedConsumer compiles (count chain), (distinct chain), (set chain),
// (frequencies chain) and (group-by f chain) with a pure f, for a fusable
// chain: the items that pass the stages are counted, or go straight into
// the result's deduplicating set, counts or groups, without the stage
// vectors. The stages still run on every item (their errors count, as
// unfused).
func (c *compiler) fusedConsumer(f *form, b *Builtin) (node, bool) {
	var keyNode node // group-by's key function
	switch {
	case b.Name == "group-by" && len(f.items) == 3:
		if !c.pureFn(f.items[1]) {
			return nil, false
		}
	case len(f.items) != 2:
		return nil, false
	}
	chainForm := f.items[len(f.items)-1]
	if !c.fusable(chainForm) {
		return nil, false
	}
	if len(f.items) == 3 {
		keyNode = c.compile(f.items[1], false)
	}
	stages, collNode := c.fuseChain(chainForm, b.Name == "count")
	c.fusions++
	pos := f.pos
	return func(fr *frame) Value {
		var key Value
		if keyNode != nil {
			key = keyNode(fr) // evaluated first, as the call's first argument
		}
		var fns [maxFuseStages]Value
		coll, items, fused := startChain(fr, stages, &fns, collNode, pos)
		th := fr.th
		switch {
		case !fused && keyNode != nil:
			return slowCall2(th, b, key, coll)
		case !fused:
			return slowCall1(th, b, coll)
		case b.Name == "count":
			return countFused(th, stages, fns[:len(stages)], items)
		case b.Name == "frequencies":
			return frequenciesFused(th, stages, fns[:len(stages)], items, pos)
		case b.Name == "group-by":
			return groupFused(th, key, stages, fns[:len(stages)], items, pos)
		}
		return collectFused(th, stages, fns[:len(stages)], items, b.Name == "set", pos)
	}, true
}

// eachPassing runs items through the stages and calls emit with each item
// that passes, th.pos at the fused call; errors as reduceFused. It is the
// loop of the fused consumers that collect what passes (distinct, set,
// frequencies, group-by).
func eachPassing(th *Thread, stages []fuseStage, fns []Value, items itemsOf, pos Pos, emit func(x Value)) {
	idx := 0
	defer eagerOnPanic(th, stages, fns, items, &idx, th.sp, th.depth)
	for i := range items.len() {
		x := items.at(i)
		idx = i
		x, keep := passStages(th, stages, fns, x)
		if !keep {
			continue
		}
		th.pos = pos
		emit(x)
	}
}

// collectFused runs items through the stages into distinct's or set's
// deduplication.
func collectFused(th *Thread, stages []fuseStage, fns []Value, items itemsOf, asSet bool, pos Pos) Value {
	d := distinctSink{out: make([]Value, 0, min(items.len(), 64))}
	eachPassing(th, stages, fns, items, pos, func(x Value) {
		th.tick()
		d.add(x, x)
	})
	if asSet {
		return setFromSeen(th, &d.seen)
	}
	return d.result(th)
}

// frequenciesFused counts the items that pass the stages by value.
func frequenciesFused(th *Thread, stages []fuseStage, fns []Value, items itemsOf, pos Pos) Value {
	var f freqSink
	eachPassing(th, stages, fns, items, pos, func(x Value) {
		th.tick()
		f.add(x)
	})
	return f.result(th)
}

// groupFused groups the items that pass the stages by (key item); keyOf
// ticks.
func groupFused(th *Thread, key Value, stages []fuseStage, fns []Value, items itemsOf, pos Pos) Value {
	g := groupSink{group: make([]int32, 0, items.len())}
	kept := make([]Value, 0, items.len())
	eachPassing(th, stages, fns, items, pos, func(x Value) {
		g.add(keyOf(th, key, x))
		kept = append(kept, x)
	})
	return g.result(th, itemsOf{items: kept})
}

// countFused counts the items that pass the stages; errors as reduceFused.
func countFused(th *Thread, stages []fuseStage, fns []Value, items itemsOf) Value {
	idx := 0
	defer eagerOnPanic(th, stages, fns, items, &idx, th.sp, th.depth)
	n := int64(0)
	for i := range items.len() {
		x := items.at(i)
		idx = i
		if _, keep := passStages(th, stages, fns, x); keep {
			n++
		}
	}
	return th.boxInt(n)
}

// eagerOnPanic is deferred by the fused loops. The unfused pipeline runs
// each stage over all items before the next, so its first error may be one
// the fused loop has not met yet when it fails at item *idx. The stages are
// pure, so running them again is not observable: they run eagerly from
// that item on (sp and depth as at the loop's start), which raises that
// error if there is one; otherwise the loop's own panic goes on.
func eagerOnPanic(th *Thread, stages []fuseStage, fns []Value, items itemsOf, idx *int, sp, depth int) {
	r := recover()
	if r == nil {
		return
	}
	e, ok := r.(*Error)
	if _, host := r.(*HostDataError); (ok && deterministic(e.Kind)) || host {
		th.sp, th.depth = sp, depth
		eagerStages(th, stages, fns, items.from(*idx))
	}
	panic(r)
}

// eagerStages runs the stages over items as the unfused pipeline does,
// innermost first, for their errors only.
func eagerStages(th *Thread, stages []fuseStage, fns []Value, items []Value) {
	var coll Value = NewVector(items)
	for i := len(stages) - 1; i >= 0; i-- {
		th.pos = stages[i].pos
		coll = slowCall2(th, stages[i].b, fns[i], coll)
	}
}

// deterministic reports whether an error kind comes from the program's
// values (and so recurs when the same calls run again) rather than from a
// budget or the caller.
func deterministic(k Kind) bool {
	switch k {
	case KindLoopLimit, KindDepthLimit, KindStepLimit, KindTimeout, KindMemory, KindCanceled, KindInternal:
		return false
	}
	return true
}

// sum modes of reduceFused's unboxed + accumulator.
const (
	sumBoxed = iota // acc holds the value
	sumInt          // isum holds it
	sumFloat        // fsum holds it
)

// reduceFused runs the fused loop over items: each item passes the stages
// (innermost, i.e. last, first) and then the reducing function. A reduce
// with + keeps its sum unboxed while the items are numbers.
func reduceFused(th *Thread, f, acc Value, started bool, stages []fuseStage, fns []Value, items itemsOf, pos Pos) (result Value) {
	acc, transient := transientAcc(f, acc, started)
	idx := 0 // the item being processed
	defer eagerOnPanic(th, stages, fns, items, &idx, th.sp, th.depth)
	if transient {
		defer func() { endTransientResult(result) }()
	}
	plus := false
	if b, ok := f.(*Builtin); ok && b.Name == "+" {
		plus = true
	}
	mode := sumBoxed
	var isum int64
	var fsum float64
	unbox := func() {
		if !plus {
			return
		}
		switch x := acc.(type) {
		case int64:
			mode, isum = sumInt, x
		case float64:
			mode, fsum = sumFloat, x
		}
	}
	box := func() {
		switch mode {
		case sumInt:
			acc = th.boxInt(isum)
		case sumFloat:
			acc = th.boxFloat(fsum)
		}
		mode = sumBoxed
	}
	if started {
		unbox()
	}
	lc := th.newLoopCaller(f, 2)
	defer lc.end()
	tok := feeding(acc, transient, items.len())
	for i := range items.len() {
		x := items.at(i)
		idx = i
		if tok != nil {
			tok.done = i + 1
		}
		x, keep := passStages(th, stages, fns, x)
		if !keep {
			continue
		}
		th.pos = pos
		if !started {
			acc, started = x, true
			unbox()
			continue
		}
		switch mode {
		case sumInt:
			switch y := x.(type) {
			case int64:
				if s := isum + y; (s > isum) == (y > 0) {
					isum = s
					th.tick()
					continue
				}
			case float64:
				mode, fsum = sumFloat, float64(isum)+y
				th.tick()
				continue
			}
		case sumFloat:
			switch y := x.(type) {
			case float64:
				fsum += y
				th.tick()
				continue
			case int64:
				fsum += float64(y)
				th.tick()
				continue
			}
		}
		box() // the general path: overflow, a non-number, any other fn
		acc = lc.call2(acc, x)
		if r, ok := acc.(*Reduced); ok {
			// the unfused stages would have run over every item: their
			// errors still count
			eagerStages(th, stages, fns, items.from(i+1))
			return r.Val
		}
		unbox()
	}
	if !started {
		// as unfused reduce: no items and no init is (f)
		if plus {
			return Int(0)
		}
		return reduceEmpty(th, f)
	}
	box()
	return acc
}

// Fusion is only invisible when the stage functions and the reducing
// function have no effects: then running them interleaved, or again, can
// not be observed. pureFn and pureExpr decide that from the source,
// conservatively: keywords, data builtins, and fn literals whose bodies
// only compute with data builtins, special forms and their own values.
// A call of a local (which may hold any function), tools, output, def and
// memory writes, return and fail all make a form impure.

// fnArgAt returns whether argument i (1-based) of a call of builtin name
// with n arguments is called as a function: the entry's hof argument, or
// for the builtins marked hof(-1), the argument their call's shape calls.
func fnArgAt(name string, i, n int) bool {
	switch name {
	case "sort": // (sort comparator coll)
		return n == 2 && i == 1
	case "sort-by": // (sort-by keyfn comparator coll)
		return i == 1 || (n == 3 && i == 2)
	case "replace", "replace-first": // a function of the match
		return i == 3
	}
	return facts(name).fnArg == i
}

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// pureForms are the special forms a pure body may use (their subforms are
// checked like calls; binding names are added to the locals).
var pureForms = wordSet(`if if-not when when-not cond and or do let if-let when-let if-some when-some
	case -> ->> some-> some->> cond-> cond->> quote`)

// pureFn reports whether f evaluates to a function without effects.
func (c *compiler) pureFn(f *form) bool {
	switch f.kind {
	case fLit:
		_, ok := f.val.(*Keyword)
		return ok
	case fSet:
		return c.pureExprs(f.items, nil)
	case fSym:
		return c.pureBuiltin(f) && facts(f.name).isPure
	case fFnLit:
		locals := map[string]bool{"%": true, "%&": true}
		for i := 1; i <= 9; i++ {
			locals["%"+strconv.Itoa(i)] = true
		}
		return c.pureExpr(&form{kind: fList, pos: f.pos, items: f.items}, locals)
	case fList:
		if len(f.items) == 0 || f.items[0].kind != fSym {
			return false
		}
		head := f.items[0]
		if head.isSym("fn") {
			return c.pureFnLiteral(f, nil)
		}
		if c.pureBuiltin(head) && facts(head.name).fnArg > 0 {
			// (fnil + 0), (complement even?) ...: a pure function of pure parts
			return c.pureExpr(f, nil)
		}
	}
	return false
}

// pureFnLiteral checks (fn name? [params] body...) and multi-arity fns.
func (c *compiler) pureFnLiteral(f *form, outer map[string]bool) bool {
	items := f.items[1:]
	if len(items) > 0 && items[0].kind == fSym {
		items = items[1:] // a name: the fn may call itself (pure if the rest is)
	}
	var arities [][]*form
	if len(items) > 0 && items[0].kind == fVec {
		arities = [][]*form{items}
	} else {
		for _, a := range items {
			if a.kind != fList || len(a.items) == 0 || a.items[0].kind != fVec {
				return false
			}
			arities = append(arities, a.items)
		}
	}
	for _, a := range arities {
		locals := copyLocals(outer)
		bindNames(a[0], locals)
		if !c.pureExprs(a[1:], locals) {
			return false
		}
	}
	return true
}

func copyLocals(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m)+4)
	for k := range m {
		out[k] = true
	}
	return out
}

// bindNames adds the symbols of a binding pattern to locals.
func bindNames(p *form, locals map[string]bool) {
	if p == nil {
		return
	}
	if p.kind == fSym {
		locals[p.name] = true
		return
	}
	for _, it := range p.items {
		bindNames(it, locals)
	}
}

func (c *compiler) pureExprs(fs []*form, locals map[string]bool) bool {
	for _, f := range fs {
		if !c.pureExpr(f, locals) {
			return false
		}
	}
	return true
}

// pureBuiltin reports whether sym names a pure builtin (not shadowed).
func (c *compiler) pureBuiltin(sym *form) bool {
	if sym.kind != fSym {
		return false
	}
	if sym.ns != "" {
		canon, ok := nsAliases[sym.ns]
		if !ok || (canon != "str" && canon != "core" && canon != "set") {
			return false
		}
	} else if _, _, local := c.sc.lookup(sym.name); local {
		return false
	}
	e := facts(sym.name)
	return e.isPure || e.fnArg != 0
}

// pureExpr reports whether evaluating f has no effect and calls only pure
// functions. locals are names bound inside the fn being checked.
func (c *compiler) pureExpr(f *form, locals map[string]bool) bool {
	if f == nil {
		return true
	}
	switch f.kind {
	case fLit, fRegex:
		return true
	case fSym:
		if f.ns == "" || f.ns == "ctx" || f.ns == "data" {
			return true // a value: reading it has no effect
		}
		return c.pureBuiltin(f)
	case fVec, fMap, fSet:
		return c.pureExprs(f.items, locals)
	case fFnLit:
		return c.pureFn(f)
	case fList:
	default:
		return false
	}
	if len(f.items) == 0 {
		return true
	}
	head, args := f.items[0], f.items[1:]
	switch head.kind {
	case fLit:
		if _, ok := head.val.(*Keyword); ok {
			return c.pureExprs(args, locals)
		}
		return false
	case fSym:
	default:
		return false
	}
	if head.ns == "" && locals[head.name] {
		return false // calling a local: it may hold any function
	}
	if head.ns == "" && head.name == "fn" {
		return c.pureFnLiteral(f, locals)
	}
	if head.ns == "" && pureForms[head.name] {
		if _, _, shadowed := c.sc.lookup(head.name); shadowed {
			return false
		}
		if head.name == "quote" {
			return true
		}
		if (head.name == "let" || strings.HasSuffix(head.name, "-let") || strings.HasSuffix(head.name, "-some")) &&
			len(args) > 0 && args[0].kind == fVec {
			inner := copyLocals(locals)
			bs := args[0].items
			for i := 0; i+1 < len(bs); i += 2 {
				if !c.pureExpr(bs[i+1], inner) {
					return false
				}
				bindNames(bs[i], inner)
			}
			return c.pureExprs(args[1:], inner)
		}
		return c.pureExprs(args, locals)
	}
	if !c.pureBuiltin(head) {
		return false
	}
	if facts(head.name).fnArg != 0 {
		for i, a := range args {
			if fnArgAt(head.name, i+1, len(args)) {
				if !c.pureFn(a) {
					return false
				}
			} else if !c.pureExpr(a, locals) {
				return false
			}
		}
		return true
	}
	return c.pureExprs(args, locals)
}
