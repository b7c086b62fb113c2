package compile

import (
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// Loop cursors: (loop [xs coll ...] (if (empty? xs) ... (recur (rest xs) ...)))
// walks a vector with rest, which would allocate a new vector header per
// iteration. When the compiler can prove that the loop binding never
// escapes — every use only reads it (first, count, empty?, ...) — the
// loop owns the header it made for the first (rest xs) and advances that
// same header in place afterwards. Programs cannot observe the
// difference: the header is reachable only from the loop's slot.

// cursorReaders are builtins that read their first argument without
// retaining it or returning it (rest and next return a new view).
var cursorReaders = map[string]bool{
	"first": true, "second": true, "last": true, "rest": true, "next": true,
	"empty?": true, "count": true, "nth": true,
}

// loopCursor reports whether loop binding name may be advanced in place:
// body (the loop's body forms) only uses it as the first argument of a
// cursorReaders builtin, or as (seq name) in a test position. Each head
// counts as what it names there (resolve.go): a local named first or
// when is a function, which may keep the binding.
func (c *Compiler) loopCursor(name binding, body []*syntax.Form) bool {
	if name.name == "&" {
		return false
	}
	for _, f := range body {
		if !c.cursorSafe(f, name) {
			return false
		}
	}
	return true
}

// cursorSafe checks one form (see loopCursor). It is conservative: any
// form it does not know that mentions name fails.
func (c *Compiler) cursorSafe(f *syntax.Form, name binding) bool {
	if !name.usedIn(f) {
		return true
	}
	switch f.Kind {
	case syntax.FVec, syntax.FMap, syntax.FSet:
		return c.allCursorSafe(f.Items, name) // items are evaluated at once
	case syntax.FList:
	default:
		return false // a bare use, or inside #(...)
	}
	if len(f.Items) == 0 {
		return false
	}
	it := f.Items
	head := it[0]
	if head.Kind == syntax.FLit {
		if _, ok := head.Val.(*core.Keyword); ok {
			return c.allCursorSafe(it[1:], name) // (:k (first xs))
		}
		return false
	}
	if head.Kind != syntax.FSym {
		return false
	}
	if head.Ns != "" {
		if _, isNs := NsAliases[head.Ns]; !isNs || head.Ns == "memory" || head.Ns == "mem" {
			return false
		}
		return c.allCursorSafe(it[1:], name) // a namespaced builtin call
	}
	if name.is(head) {
		return false
	}
	if cursorReaders[c.headBuiltin(f)] && len(it) >= 2 && name.is(it[1]) {
		return c.allCursorSafe(it[2:], name)
	}
	sp := c.headSpecial(f)
	if testFirst(sp) {
		if len(it) < 2 {
			return false
		}
		return c.cursorTest(it[1], name) && c.allCursorSafe(it[2:], name)
	}
	switch sp {
	case 0:
		return c.allCursorSafe(it[1:], name) // a function call: args are evaluated first
	case spCond:
		for i := 1; i < len(it); i++ {
			if i%2 == 1 && !c.cursorTest(it[i], name) {
				return false
			}
			if i%2 == 0 && !c.cursorSafe(it[i], name) {
				return false
			}
		}
		return true
	case spDo, spAnd, spOr, spRecur:
		return c.allCursorSafe(it[1:], name)
	case spLet:
		if len(it) < 2 || it[1].Kind != syntax.FVec || len(it[1].Items)%2 != 0 {
			return false
		}
		bs := it[1].Items
		for i := 0; i < len(bs); i += 2 {
			if bs[i].Kind != syntax.FSym || bs[i].Ns != "" || name.is(bs[i]) {
				return false
			}
			if !c.cursorSafe(bs[i+1], name) {
				return false
			}
		}
		return c.allCursorSafe(it[2:], name)
	}
	return false // fn, for, loop, threading ...: may defer or rebind
}

// advancesByRest reports whether some form in fs is (rest name) or
// (next name): a cheap test before the full loopCursor analysis.
func (c *Compiler) advancesByRest(fs []*syntax.Form, name binding) bool {
	for _, f := range fs {
		if c.cursorAdvance(f, name) {
			return true
		}
		if c.advancesByRest(f.Items, name) {
			return true
		}
	}
	return false
}

// cursorAdvance reports whether f is (rest name) or (next name).
func (c *Compiler) cursorAdvance(f *syntax.Form, name binding) bool {
	return f.Kind == syntax.FList && len(f.Items) == 2 && name.is(f.Items[1]) &&
		(c.isBuiltinSym(f.Items[0], "rest") || c.isBuiltinSym(f.Items[0], "next"))
}

func (c *Compiler) allCursorSafe(fs []*syntax.Form, name binding) bool {
	for _, f := range fs {
		if !c.cursorSafe(f, name) {
			return false
		}
	}
	return true
}

// cursorTest is cursorSafe for a form whose value is only tested for
// truth, where (seq name) is also allowed.
func (c *Compiler) cursorTest(f *syntax.Form, name binding) bool {
	if len(f.Items) == 2 && c.callsBuiltin(f, "seq") && name.is(f.Items[1]) {
		return true
	}
	return c.cursorSafe(f, name)
}

// cursorArg is a recur argument (rest xs) or (next xs) at the position
// of cursor binding xs: slot holds xs, own the header this loop
// activation made (nil on entry).
type cursorArg struct {
	slot, own int
	pos       core.Pos
}

// cursorRecurArg returns the cursor plan for recur argument i, or nil.
func (c *Compiler) cursorRecurArg(i int, arg *syntax.Form) *cursorArg {
	rt := c.sc.recur
	if rt == nil || i >= len(rt.cursors) || rt.cursors[i] == nil || i >= 64 {
		return nil
	}
	cu := rt.cursors[i]
	if !c.cursorAdvance(arg, cu.name) {
		return nil
	}
	return &cursorArg{slot: cu.slot, own: cu.own, pos: arg.Pos}
}
