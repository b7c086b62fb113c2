package compile

import (
	"slices"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// Index loops. The other common way to walk a vector is by index:
//
//	(loop [i 0 acc 0]
//	  (if (< i (count xs))
//	    (recur (inc i) (+ acc (:qty (nth xs i))))
//	    acc))
//
// When i is only tested against (count xs), advanced by (inc i) and read
// through (nth xs i), and xs cannot change while the loop runs, this loop
// computes what the walk
//
//	(loop [ys xs acc 0] (if (seq ys) (recur (rest ys) (+ acc (:qty (first ys)))) acc))
//
// computes over a vector, so it is compiled both as written and as that
// walk (opt_walkloop.go), and each run picks the walk when xs is a vector
// the walk may take: i then stays a Go int, not a new box per iteration,
// and no count, nth or < is called. Anything else (xs nil, a string, a
// map, a lazy seq...) runs the loop as written, so values, errors and
// their positions are those of the loop as written; only steps are
// counted differently, as in every walk.
//
// xs cannot change while the loop runs when it is a local (not one of the
// loop's bindings). A global or ctx/ name could be redefined by code the
// loop runs, so for those the loop must call no function but builtins
// (no fn, def, memory/ or tool/ forms; every other symbol a builtin, a
// binding of the loop or of a let inside it), the other bindings must
// start as literals, and xs must be host data, whose items are plain data
// (no function among them to call).

// indexLoop compiles f as an index loop (see above) or returns nil; loop
// compiles a loop form (its two versions).
func (c *Compiler) indexLoop(f *syntax.Form, lin []bool, loop func(*Compiler, *syntax.Form, []bool) core.Node) core.Node {
	if c.PlainLoops || c.inIndexLoop || len(f.Items) != 3 || f.Items[1].Kind != syntax.FVec {
		return nil
	}
	b := f.Items[1].Items
	body := f.Items[2]
	if len(b) == 0 || len(b)%2 != 0 || body.Kind != syntax.FList || len(body.Items) != 4 {
		return nil
	}
	head, test := body.Items[0], body.Items[1]
	isIf := c.headSpecial(body) == spIf
	if !isIf && c.headSpecial(body) != spIfNot {
		return nil
	}
	if test.Kind != syntax.FList || len(test.Items) != 3 || test.Items[0].Kind != syntax.FSym || test.Items[0].Ns != "" {
		return nil
	}
	op, iForm, cf := test.Items[0].Name, test.Items[1], test.Items[2]
	if (op != "<" && op != ">=") || !c.isBuiltin(test.Items[0]) || iForm.Kind != syntax.FSym || iForm.Ns != "" {
		return nil
	}
	if len(cf.Items) != 2 || !c.callsBuiltin(cf, "count") || cf.Items[1].Kind != syntax.FSym {
		return nil
	}
	coll := cf.Items[1]
	var i binding
	idx := -1
	var names []binding
	literals := true
	for k := 0; k < len(b); k += 2 {
		p, init := b[k], b[k+1]
		if p.Kind != syntax.FSym || p.Ns != "" || p.Name == "&" || p.Name == "_" || slices.ContainsFunc(names, func(n binding) bool { return n.name == p.Name }) {
			return nil
		}
		names = append(names, bindingOf(p))
		if bindingOf(p).is(iForm) {
			if init.Kind != syntax.FLit || init.Val != int64(0) {
				return nil
			}
			i, idx = bindingOf(p), k/2
			continue
		}
		literals = literals && literalForm(init)
	}
	if idx < 0 || anyIs(names, coll) {
		return nil
	}
	// the branch taken while i < (count xs), and the one that ends the loop
	rec, exit := body.Items[2], body.Items[3]
	if (op == "<") != isIf {
		rec, exit = exit, rec
	}
	if i.usedIn(exit) {
		return nil
	}
	xsSym := c.madeBinder(" index "+i.name, b[2*idx].Pos) // a name no program can write
	xs := bindingOf(xsSym)
	rec2, ok := c.indexRewrite(rec, i, coll, xsSym, idx, len(names))
	if !ok || i.usedIn(rec2) {
		return nil
	}
	invariant := false
	if coll.Ns == "" {
		kind, _, ok := c.sc.lookup(coll)
		invariant = ok && kind == refLocal
	}
	if !invariant && (!literals || !c.indexPure(rec2, append(slices.Clone(names), xs))) {
		return nil
	}
	read := c.indexColl(coll)
	if read == nil {
		return nil
	}

	// the walk: (loop [... xs coll ...] (if (seq xs) rec' exit)), or with
	// (empty? xs) for (>= i (count coll))
	wb := slices.Clone(b)
	wb[2*idx] = xsSym
	wb[2*idx+1] = coll
	wtest := mkList(test.Pos, mkBuiltin(map[string]string{"<": "seq", ">=": "empty?"}[op], test.Pos), xsSym)
	wbody := &syntax.Form{Kind: syntax.FList, Pos: body.Pos, Items: []*syntax.Form{head, wtest, body.Items[2], body.Items[3]}}
	if body.Items[2] == rec {
		wbody.Items[2] = rec2
	} else {
		wbody.Items[3] = rec2
	}
	wf := &syntax.Form{Kind: syntax.FList, Pos: f.Pos, Items: []*syntax.Form{
		f.Items[0], {Kind: syntax.FVec, Pos: f.Items[1].Pos, Items: wb}, wbody,
	}}

	c.inIndexLoop = true
	orig := loop(c, f, lin)
	walk := c.indexWalk(wf, lin, loop)
	c.inIndexLoop = false
	if walk == nil {
		return orig
	}
	c.IndexLoops++
	return func(fr *core.Frame) core.Value {
		if v, ok := read(fr).(*core.Vector); ok && (invariant || v.FromHost) {
			return walk(fr)
		}
		return orig(fr)
	}
}

// indexWalk compiles the walk wf made from an index loop, or returns nil
// when the compiler does not compile it as a walk.
func (c *Compiler) indexWalk(wf *syntax.Form, lin []bool, loop func(*Compiler, *syntax.Form, []bool) core.Node) (nd core.Node) {
	sc, locals, recur, walk, walks := c.sc, len(c.sc.locals), c.sc.recur, c.walk, c.Walks
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(*core.Error); !ok {
				panic(r)
			}
			nd = nil
		}
		if nd == nil {
			c.sc, c.walk = sc, walk
			c.sc.locals, c.sc.recur = c.sc.locals[:locals], recur
		}
	}()
	nd = loop(c, wf, lin)
	if c.Walks == walks {
		return nil
	}
	return nd
}

// indexRewrite returns f with each (nth coll i) as (first xs) and each
// recur's argument at idx, which must be (inc i), as (rest xs); ok is
// false when a recur does not advance i so. Only the symbols that name
// coll and i where the loop names them are rewritten (a local of the
// same name inside the loop is another binding), and the first and rest
// it writes are the builtins whatever locals are in scope there.
func (c *Compiler) indexRewrite(f *syntax.Form, i binding, coll, xs *syntax.Form, idx, n int) (*syntax.Form, bool) {
	if len(f.Items) == 3 && c.callsBuiltin(f, "nth") && sameRef(f.Items[1], coll) && i.is(f.Items[2]) {
		return mkList(f.Pos, mkBuiltin("first", f.Items[0].Pos), xs), true
	}
	if len(f.Items) == 0 {
		return f, true
	}
	g := *f
	g.Items = make([]*syntax.Form, len(f.Items))
	isRecur := c.headSpecial(f) == spRecur
	for k, it := range f.Items {
		if isRecur && k == idx+1 {
			if len(f.Items) != n+1 || len(it.Items) != 2 || !c.callsBuiltin(it, "inc") || !i.is(it.Items[1]) {
				return nil, false
			}
			g.Items[k] = mkList(it.Pos, mkBuiltin("rest", it.Items[0].Pos), xs)
			continue
		}
		r, ok := c.indexRewrite(it, i, coll, xs, idx, n)
		if !ok {
			return nil, false
		}
		g.Items[k] = r
	}
	return &g, true
}

// indexPure reports whether f can run no code but builtins: every list a
// call of a builtin or a keyword, or a walk head (let, if, cond...); every
// symbol a builtin, one of names or a local a let inside f binds (to a
// plain symbol), or a ctx/ or namespaced builtin; no fn, def, memory/ or
// tool/ form.
func (c *Compiler) indexPure(f *syntax.Form, names []binding) bool {
	switch f.Kind {
	case syntax.FLit, syntax.FRegex:
		return true
	case syntax.FSym:
		switch {
		case f.Ns == "ctx" || f.Ns == "data":
			return true
		case f.Ns == "memory" || f.Ns == "mem" || f.Ns == "tool":
			return false
		case f.Ns != "":
			_, ok := c.LookupBuiltin(f.Ns, f.Name)
			return ok
		case anyIs(names, f):
			return true
		}
		return c.isBuiltin(f)
	case syntax.FList:
	default:
		for _, it := range f.Items {
			if !c.indexPure(it, names) {
				return false
			}
		}
		return true
	}
	if len(f.Items) == 0 {
		return true
	}
	head := f.Items[0]
	args := f.Items[1:]
	switch {
	case head.Kind == syntax.FLit:
		if _, ok := head.Val.(*core.Keyword); !ok {
			return false
		}
	case head.Kind != syntax.FSym:
		return false
	case c.symSpecial(head) != 0:
		if !walkHead(c.symSpecial(head)) {
			return false
		}
		if c.symSpecial(head) == spLet {
			if len(args) == 0 || args[0].Kind != syntax.FVec || len(args[0].Items)%2 != 0 {
				return false
			}
			bs := args[0].Items
			inner := slices.Clone(names)
			for k := 0; k < len(bs); k += 2 {
				if bs[k].Kind != syntax.FSym || bs[k].Ns != "" || !c.indexPure(bs[k+1], inner) {
					return false
				}
				inner = append(inner, bindingOf(bs[k]))
			}
			for _, it := range args[1:] {
				if !c.indexPure(it, inner) {
					return false
				}
			}
			return true
		}
	case !c.indexPure(head, nil) || anyIs(names, head):
		return false // a call of a binding could call a function
	}
	for _, it := range args {
		if !c.indexPure(it, names) {
			return false
		}
	}
	return true
}

// literalForm reports whether f is a literal: a constant, or a vector,
// map or set of literals.
func literalForm(f *syntax.Form) bool {
	switch f.Kind {
	case syntax.FLit:
		return true
	case syntax.FVec, syntax.FMap, syntax.FSet:
		for _, it := range f.Items {
			if !literalForm(it) {
				return false
			}
		}
		return true
	}
	return false
}

// indexColl returns a node that reads coll (a symbol) without raising:
// a local's slot, ctx/ and data/ as the program reads them, a global from
// memory (nil when it is not defined).
func (c *Compiler) indexColl(coll *syntax.Form) core.Node {
	switch coll.Ns {
	case "":
		if kind, slot, ok := c.sc.lookup(coll); ok {
			if kind != refLocal {
				return nil
			}
			return func(fr *core.Frame) core.Value { return fr.Slots[slot] }
		}
		if _, ok := c.Builtins[coll.Name]; ok || IsSpecialForm(coll.Name) {
			return nil
		}
		name := coll.Name
		return func(fr *core.Frame) core.Value { return fr.Th.Mem[name] }
	case "ctx", "data":
		key := coll.Name
		return func(fr *core.Frame) core.Value { return fr.Th.Host.CtxGet(fr.Th, key) }
	}
	return nil
}
