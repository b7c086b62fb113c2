package compile

import (
	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
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
	fn   core.Node
	b    *core.Builtin // the builtin the stage replaces (eager fallback)
	pos  core.Pos
}

// fusedStageOf reports whether f is (map g coll), (filter p coll) or
// (remove p coll) naming the builtin (not a local of that name).
func (c *Compiler) fusedStageOf(f *syntax.Form) (*core.Builtin, int, bool) {
	if f.Kind != syntax.FList || len(f.Items) != 3 {
		return nil, 0, false
	}
	head := f.Items[0]
	if head.Kind != syntax.FSym || (head.Ns != "" && head.Ns != "clojure.core" && head.Ns != "core") {
		return nil, 0, false
	}
	if head.Ns == "" && !c.isBuiltin(head) {
		return nil, 0, false
	}
	b, ok := c.Builtins[head.Name]
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
func (c *Compiler) fusedReduce(f *syntax.Form) (core.Node, bool) {
	n := len(f.Items) - 1
	collForm := f.Items[n]
	if !c.fusable(collForm) || !c.pureFn(f.Items[1]) {
		return nil, false
	}
	fnNode := c.compileReducer(f.Items[1])
	var initNode core.Node
	if n == 3 {
		initNode = c.compile(f.Items[2], false)
	}
	stages, src := c.fuseChain(collForm, true)
	c.Fusions++
	pos := f.Pos
	reduce := c.Builtins["reduce"]
	return func(fr *core.Frame) core.Value {
		th := fr.Th
		fv := fnNode(fr)
		var acc core.Value
		if initNode != nil {
			acc = initNode(fr)
		}
		var fns [maxFuseStages]core.Value
		coll, items, fused := startChain(fr, stages, &fns, src, pos)
		if !fused {
			if initNode != nil {
				return core.CallBuiltin3(th, reduce, fv, acc, coll)
			}
			return core.SlowCall2(th, reduce, fv, coll)
		}
		return reduceFused(th, fv, acc, initNode != nil, stages, fns[:len(stages)], items, pos)
	}, true
}

// fusable reports whether f is a map/filter/remove call with a pure
// function: a chain of at least one stage.
func (c *Compiler) fusable(f *syntax.Form) bool {
	_, _, ok := c.fusedStageOf(f)
	return ok && c.pureFn(f.Items[1])
}

// fuseSource is the innermost collection of a fused chain: its node, and
// the key of the ctx/ (or data/) input when it is one, whose host records
// the fused loop reads in place (Host.CtxRecords) without the vector view
// that evaluating the node makes.
type fuseSource struct {
	node   core.Node
	ctxKey string
}

// fuseChain compiles a fusable chain: its stages outermost first (as their
// arguments are evaluated) and the innermost collection. once says the
// consumer reads the chain once, in order, and keeps none of it: then a
// range written as the innermost collection is streamed (streamNode).
func (c *Compiler) fuseChain(collForm *syntax.Form, once bool) ([]fuseStage, fuseSource) {
	var stages []fuseStage
	for len(stages) < maxFuseStages && c.fusable(collForm) {
		b, kind, _ := c.fusedStageOf(collForm)
		stages = append(stages, fuseStage{kind: kind, fn: c.compile(collForm.Items[1], false), b: b, pos: collForm.Pos})
		collForm = collForm.Items[2]
	}
	src := fuseSource{node: c.compile(collForm, false)}
	if once && c.streamSource(collForm) {
		src.node = streamNode(src.node)
	}
	if collForm.Kind == syntax.FSym && (collForm.Ns == "ctx" || collForm.Ns == "data") {
		src.ctxKey = collForm.Name
	}
	return stages, src
}

// startChain evaluates a fused chain's stage functions (into fns) and its
// collection, and counts the steps of the stage calls and of the consumer
// call, at their positions. A vector's items are returned to be fused
// (fused true); any other collection runs through the stages eagerly and
// comes back as coll for the consumer's general function. Host records
// given as a ctx/ input are read in place: the same items the input's
// vector view gives, without making the view.
func startChain(fr *core.Frame, stages []fuseStage, fns *[maxFuseStages]core.Value, src fuseSource, pos core.Pos) (coll core.Value, items core.ItemsOf, fused bool) {
	th := fr.Th
	for i := range stages {
		fns[i] = stages[i].fn(fr)
	}
	var vec *core.Vector
	isVec := false
	if src.ctxKey != "" {
		items, isVec = th.Host.CtxRecords(src.ctxKey)
	}
	if !isVec {
		coll = src.node(fr)
		vec, isVec = coll.(*core.Vector)
		if isVec {
			items = vec.ItemsOf()
		}
	}
	for i := len(stages) - 1; i >= 0; i-- {
		th.CallPos = stages[i].pos
		th.Tick()
		if !isVec {
			in, _ := coll.(*core.LazySeq)
			coll = core.SlowCall2(th, stages[i].b, fns[i], coll)
			if out, ok := coll.(*core.LazySeq); ok && in != nil && in.Stream {
				// the stage's seq over a stream is read only by the
				// next stage or the consumer: a stream too
				out.Stream = true
			}
		}
	}
	th.CallPos = pos
	th.Tick()
	if !isVec {
		return coll, core.ItemsOf{}, false
	}
	return nil, items, true
}

// passStages runs item x through the stages, innermost (last) first: its
// value after the maps, and whether every filter kept it.
func passStages(th *core.Thread, stages []fuseStage, fns []core.Value, x core.Value) (core.Value, bool) {
	for k := len(stages) - 1; k >= 0; k-- {
		th.CallPos = stages[k].pos
		var y core.Value
		if kw, ok := fns[k].(*core.Keyword); ok { // as Call1 calls a keyword
			th.Tick()
			y = core.KwGet(x, kw)
		} else {
			y = th.Call1(fns[k], x)
		}
		switch stages[k].kind {
		case stageMap:
			x = y
		case stageFilter:
			if !core.Truthy(y) {
				return nil, false
			}
		case stageRemove:
			if core.Truthy(y) {
				return nil, false
			}
		}
	}
	return x, true
}

// keywordStages reports whether every stage's function is a keyword (as
// in (filter :active) and (map :price)), and puts the keywords in kws.
func keywordStages(fns []core.Value, kws *[maxFuseStages]*core.Keyword) bool {
	for k, f := range fns {
		kw, ok := f.(*core.Keyword)
		if !ok {
			return false
		}
		kws[k] = kw
	}
	return true
}

// recordStages is passStages for the host record m when every stage's
// function is a keyword (keywordStages): until a map stage gives another
// value, each stage reads the record's field in place as KwGet reads a
// host record (core.RecordField), without making the record a Value.
// mapped is false when the record passed every stage unmapped: the caller
// makes it the value (ItemsOf.At).
func recordStages(th *core.Thread, stages []fuseStage, kws []*core.Keyword, m map[string]any) (x core.Value, keep, mapped bool) {
	for k := len(stages) - 1; k >= 0; k-- {
		th.CallPos = stages[k].pos
		th.Tick() // as Call1 calls a keyword
		var y core.Value
		if mapped {
			y = core.KwGet(x, kws[k])
		} else {
			y = core.RecordField(m, kws[k])
		}
		switch stages[k].kind {
		case stageMap:
			x, mapped = y, true
		case stageFilter:
			if !core.Truthy(y) {
				return nil, false, false
			}
		case stageRemove:
			if core.Truthy(y) {
				return nil, false, false
			}
		}
	}
	return x, true, mapped
}

// fusedConsumer compiles (count chain), (distinct chain), (set chain),
// (frequencies chain) and (group-by f chain) with a pure f, for a fusable
// chain: the items that pass the stages are counted, or go straight into
// the result's deduplicating set, counts or groups, without the stage
// vectors. The stages still run on every item (their errors count, as
// unfused).
func (c *Compiler) fusedConsumer(f *syntax.Form, b *core.Builtin) (core.Node, bool) {
	var keyNode core.Node // group-by's key function
	switch {
	case b.Name == "group-by" && len(f.Items) == 3:
		if !c.pureFn(f.Items[1]) {
			return nil, false
		}
	case len(f.Items) != 2:
		return nil, false
	}
	chainForm := f.Items[len(f.Items)-1]
	if !c.fusable(chainForm) {
		return nil, false
	}
	if len(f.Items) == 3 {
		keyNode = c.compile(f.Items[1], false)
	}
	stages, src := c.fuseChain(chainForm, b.Name == "count")
	c.Fusions++
	pos := f.Pos
	return func(fr *core.Frame) core.Value {
		var key core.Value
		if keyNode != nil {
			key = keyNode(fr) // evaluated first, as the call's first argument
		}
		var fns [maxFuseStages]core.Value
		coll, items, fused := startChain(fr, stages, &fns, src, pos)
		th := fr.Th
		switch {
		case !fused && keyNode != nil:
			return core.SlowCall2(th, b, key, coll)
		case !fused:
			return core.SlowCall1(th, b, coll)
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
func eachPassing(th *core.Thread, stages []fuseStage, fns []core.Value, items core.ItemsOf, pos core.Pos, emit func(x core.Value)) {
	idx := 0
	defer eagerOnPanic(th, stages, fns, items, &idx, th.Sp, th.Depth)
	var kws [maxFuseStages]*core.Keyword
	fields := items.Recs != nil && keywordStages(fns, &kws)
	for i := range items.Len() {
		idx = i
		var x core.Value
		var keep bool
		if fields {
			var mapped bool
			if x, keep, mapped = recordStages(th, stages, kws[:len(stages)], items.Recs[i]); keep && !mapped {
				x = items.At(i)
			}
		} else {
			x, keep = passStages(th, stages, fns, items.At(i))
		}
		if !keep {
			continue
		}
		th.CallPos = pos
		emit(x)
	}
}

// collectFused runs items through the stages into distinct's or set's
// deduplication.
func collectFused(th *core.Thread, stages []fuseStage, fns []core.Value, items core.ItemsOf, asSet bool, pos core.Pos) core.Value {
	d := builtins.DistinctSink{Out: make([]core.Value, 0, min(items.Len(), 64))}
	eachPassing(th, stages, fns, items, pos, func(x core.Value) {
		th.Tick()
		d.Add(x, x)
	})
	if asSet {
		return builtins.SetFromSeen(th, &d.Seen)
	}
	return d.Result(th)
}

// frequenciesFused counts the items that pass the stages by value.
func frequenciesFused(th *core.Thread, stages []fuseStage, fns []core.Value, items core.ItemsOf, pos core.Pos) core.Value {
	var f builtins.FreqSink
	eachPassing(th, stages, fns, items, pos, func(x core.Value) {
		th.Tick()
		f.Add(x)
	})
	return f.Result(th)
}

// groupFused groups the items that pass the stages by (key item); keyOf
// ticks.
func groupFused(th *core.Thread, key core.Value, stages []fuseStage, fns []core.Value, items core.ItemsOf, pos core.Pos) core.Value {
	g := builtins.GroupSink{Group: make([]int32, 0, items.Len())}
	kept := make([]core.Value, 0, items.Len())
	eachPassing(th, stages, fns, items, pos, func(x core.Value) {
		g.Add(builtins.KeyOf(th, key, x))
		kept = append(kept, x)
	})
	return g.Result(th, core.ItemsOf{Items: kept})
}

// countFused counts the items that pass the stages; errors as reduceFused.
func countFused(th *core.Thread, stages []fuseStage, fns []core.Value, items core.ItemsOf) core.Value {
	if len(stages) == 1 && items.Recs != nil {
		if kw, ok := fns[0].(*core.Keyword); ok && stages[0].kind != stageMap {
			return countFieldTest(th, stages[0], kw, items.Recs)
		}
	}
	idx := 0
	defer eagerOnPanic(th, stages, fns, items, &idx, th.Sp, th.Depth)
	n := int64(0)
	var kws [maxFuseStages]*core.Keyword
	fields := items.Recs != nil && keywordStages(fns, &kws)
	for i := range items.Len() {
		idx = i
		var keep bool
		if fields {
			_, keep, _ = recordStages(th, stages, kws[:len(stages)], items.Recs[i])
		} else {
			_, keep = passStages(th, stages, fns, items.At(i))
		}
		if keep {
			n++
		}
	}
	return th.BoxInt(n)
}

// countFieldTest is countFused through one stage that tests field kw of
// host records, as in (count (filter :active rs)): recordStages with the
// stage's position set once, as nothing in the loop moves it. It defers
// no eagerOnPanic: with one stage, the first error of the eager pipeline
// is the one the loop meets, at the same record (the field read as the
// keyword reads the record's view: core.RecordField) and the same
// position.
func countFieldTest(th *core.Thread, st fuseStage, kw *core.Keyword, recs []map[string]any) core.Value {
	kept := st.kind == stageFilter
	if len(recs) > 0 {
		th.CallPos = st.pos
	}
	n := int64(0)
	for _, m := range recs {
		th.Tick()
		if core.Truthy(core.RecordField(m, kw)) == kept {
			n++
		}
	}
	return th.BoxInt(n)
}

// eagerOnPanic is deferred by the fused loops. The unfused pipeline runs
// each stage over all items before the next, so its first error may be one
// the fused loop has not met yet when it fails at item *idx. The stages are
// pure, so running them again is not observable: they run eagerly from
// that item on (sp and depth as at the loop's start), which raises that
// error if there is one; otherwise the loop's own panic goes on.
func eagerOnPanic(th *core.Thread, stages []fuseStage, fns []core.Value, items core.ItemsOf, idx *int, sp, depth int) {
	r := recover()
	if r == nil {
		return
	}
	e, ok := r.(*core.Error)
	if _, host := r.(*core.HostDataError); (ok && Deterministic(e.Kind)) || host {
		th.Sp, th.Depth = sp, depth
		eagerStages(th, stages, fns, items.From(*idx))
	}
	panic(r)
}

// eagerStages runs the stages over items as the unfused pipeline does,
// innermost first, for their errors only.
func eagerStages(th *core.Thread, stages []fuseStage, fns []core.Value, items []core.Value) {
	var coll core.Value = core.NewVector(items)
	for i := len(stages) - 1; i >= 0; i-- {
		th.CallPos = stages[i].pos
		coll = core.SlowCall2(th, stages[i].b, fns[i], coll)
	}
}

// Deterministic reports whether an error kind comes from the program's
// values (and so recurs when the same calls run again) rather than from a
// budget or the caller.
func Deterministic(k core.Kind) bool {
	switch k {
	case core.KindLoopLimit, core.KindDepthLimit, core.KindStepLimit, core.KindTimeout, core.KindMemory, core.KindCanceled, core.KindInternal:
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
func reduceFused(th *core.Thread, f, acc core.Value, started bool, stages []fuseStage, fns []core.Value, items core.ItemsOf, pos core.Pos) (result core.Value) {
	acc, transient := builtins.TransientAcc(f, acc, started)
	idx := 0 // the item being processed
	defer eagerOnPanic(th, stages, fns, items, &idx, th.Sp, th.Depth)
	if transient {
		defer func() { builtins.EndTransientResult(result) }()
	}
	plus := false
	if b, ok := f.(*core.Builtin); ok && b.Name == "+" {
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
			acc = th.BoxInt(isum)
		case sumFloat:
			acc = th.BoxFloat(fsum)
		}
		mode = sumBoxed
	}
	if started {
		unbox()
	}
	lc := th.NewLoopCaller(f, 2)
	defer lc.End()
	tok := builtins.Feeding(acc, transient, items.Len())
	var kws [maxFuseStages]*core.Keyword
	fields := items.Recs != nil && keywordStages(fns, &kws)
	for i := range items.Len() {
		idx = i
		if tok != nil {
			tok.Done = i + 1
		}
		var x core.Value
		var keep bool
		if fields {
			var mapped bool
			if x, keep, mapped = recordStages(th, stages, kws[:len(stages)], items.Recs[i]); keep && !mapped {
				x = items.At(i)
			}
		} else {
			x, keep = passStages(th, stages, fns, items.At(i))
		}
		if !keep {
			continue
		}
		th.CallPos = pos
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
					th.Tick()
					continue
				}
			case float64:
				mode, fsum = sumFloat, float64(isum)+y
				th.Tick()
				continue
			}
		case sumFloat:
			switch y := x.(type) {
			case float64:
				fsum += y
				th.Tick()
				continue
			case int64:
				fsum += float64(y)
				th.Tick()
				continue
			}
		}
		box() // the general path: overflow, a non-number, any other fn
		acc = lc.Call2(acc, x)
		if r, ok := acc.(*core.Reduced); ok {
			// the unfused stages would have run over every item: their
			// errors still count
			eagerStages(th, stages, fns, items.From(i+1))
			return r.Val
		}
		unbox()
	}
	if !started {
		// as unfused reduce: no items and no init is (f)
		if plus {
			return core.Int(0)
		}
		return builtins.ReduceEmpty(th, f)
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
	return builtins.Facts(name).FnArg == i
}

// pureForm reports whether special form sp may be in a pure body: its
// parts are checked like a call's (a binding name is a value).
func pureForm(sp specialID) bool {
	switch sp {
	case spIf, spIfNot, spWhen, spWhenNot, spCond, spAnd, spOr, spDo, spLet, spIfLet, spWhenLet, spIfSome, spWhenSome,
		spCase, spThread, spThreadL, spSomeThread, spSomeThreadL, spCondThread, spCondThreadL, spQuote:
		return true
	}
	return false
}

// threads reports whether sp is a threading form, whose bare symbol
// steps are calls.
func threads(sp specialID) bool {
	switch sp {
	case spThread, spThreadL, spSomeThread, spSomeThreadL, spCondThread, spCondThreadL:
		return true
	}
	return false
}

// pureFn reports whether f evaluates to a function without effects.
func (c *Compiler) pureFn(f *syntax.Form) bool {
	switch f.Kind {
	case syntax.FLit:
		_, ok := f.Val.(*core.Keyword)
		return ok
	case syntax.FSet:
		return c.pureExprs(f.Items)
	case syntax.FSym:
		return c.pureBuiltin(f) && builtins.Facts(f.Name).IsPure
	case syntax.FFnLit:
		return c.pureExpr(&syntax.Form{Kind: syntax.FList, Pos: f.Pos, Items: f.Items})
	case syntax.FList:
		if len(f.Items) == 0 || f.Items[0].Kind != syntax.FSym {
			return false
		}
		head := f.Items[0]
		if c.symSpecial(head) == spFn {
			return c.pureFnLiteral(f)
		}
		if c.pureBuiltin(head) && builtins.Facts(head.Name).FnArg > 0 {
			// (fnil + 0), (complement even?) ...: a pure function of pure parts
			return c.pureExpr(f)
		}
	}
	return false
}

// pureFnLiteral checks (fn name? [params] body...) and multi-arity fns.
func (c *Compiler) pureFnLiteral(f *syntax.Form) bool {
	items := f.Items[1:]
	if len(items) > 0 && items[0].Kind == syntax.FSym {
		items = items[1:] // a name: the fn may call itself (pure if the rest is)
	}
	var arities [][]*syntax.Form
	if len(items) > 0 && items[0].Kind == syntax.FVec {
		arities = [][]*syntax.Form{items}
	} else {
		for _, a := range items {
			if a.Kind != syntax.FList || len(a.Items) == 0 || a.Items[0].Kind != syntax.FVec {
				return false
			}
			arities = append(arities, a.Items)
		}
	}
	for _, a := range arities {
		if !c.pureExprs(a[1:]) {
			return false
		}
	}
	return true
}

func (c *Compiler) pureExprs(fs []*syntax.Form) bool {
	for _, f := range fs {
		if !c.pureExpr(f) {
			return false
		}
	}
	return true
}

// pureBuiltin reports whether sym names a pure builtin at its position
// (resolve.go: not a local of that name).
func (c *Compiler) pureBuiltin(sym *syntax.Form) bool {
	if sym.Kind != syntax.FSym {
		return false
	}
	if sym.Ns != "" {
		canon, ok := NsAliases[sym.Ns]
		if !ok || (canon != "str" && canon != "core" && canon != "set") {
			return false
		}
	} else if !c.isBuiltin(sym) {
		return false
	}
	e := builtins.Facts(sym.Name)
	return e.IsPure || e.FnArg != 0
}

// pureExpr reports whether evaluating f has no effect and calls only pure
// functions. Every symbol counts as what it names at its place
// (resolve.go): a call of a local, bound anywhere, may call any function.
func (c *Compiler) pureExpr(f *syntax.Form) bool {
	if f == nil {
		return true
	}
	switch f.Kind {
	case syntax.FLit, syntax.FRegex:
		return true
	case syntax.FSym:
		if f.Ns == "" || f.Ns == "ctx" || f.Ns == "data" {
			return true // a value: reading it has no effect
		}
		return c.pureBuiltin(f)
	case syntax.FVec, syntax.FMap, syntax.FSet:
		return c.pureExprs(f.Items)
	case syntax.FFnLit:
		return c.pureFn(f)
	case syntax.FList:
	default:
		return false
	}
	if len(f.Items) == 0 {
		return true
	}
	head, args := f.Items[0], f.Items[1:]
	switch head.Kind {
	case syntax.FLit:
		if _, ok := head.Val.(*core.Keyword); ok {
			return c.pureExprs(args)
		}
		return false
	case syntax.FSym:
	default:
		return false
	}
	switch sp := c.symSpecial(head); {
	case sp == spFn:
		return c.pureFnLiteral(f)
	case sp == spQuote:
		return true
	case threads(sp):
		for _, a := range args[min(1, len(args)):] {
			if a.Kind == syntax.FSym && !c.pureFn(a) {
				return false // (-> x println): a call of the symbol
			}
		}
		return c.pureExprs(args)
	case pureForm(sp):
		return c.pureExprs(args)
	case sp != 0:
		return false
	}
	if !c.pureBuiltin(head) {
		return false // a local (it may hold any function), a tool, a global
	}
	if builtins.Facts(head.Name).FnArg != 0 {
		for i, a := range args {
			if fnArgAt(head.Name, i+1, len(args)) {
				if !c.pureFn(a) {
					return false
				}
			} else if !c.pureExpr(a) {
				return false
			}
		}
		return true
	}
	return c.pureExprs(args)
}

// compileReducer compiles reduce's function; a literal fn (or #(...))
// that uses its accumulator linearly is marked so reduce may pass a
// transient map.
func (c *Compiler) compileReducer(f *syntax.Form) core.Node {
	c.lastProto = nil
	outer := c.countForm
	counting := c.countBody(f, c.PlainLoops)
	c.countForm = counting
	nd := c.compile(f, false)
	c.countForm = outer
	if p := c.lastProto; p != nil && f != nil {
		if step := c.recordStepOf(f, counting); step != nil {
			p.RecordStep = step
			c.RecordSteps++
		}
		if f.Kind == syntax.FFnLit {
			f = FnLitAsFn(f)
		}
		if c.isFnForm(f) && c.LinearAccFn(f) {
			p.LinearAcc = true
		}
	}
	return nd
}
