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

// cursorNames are the names whose local rebinding inside the loop would
// change what a cursor use means.
var cursorNames = []string{"first", "second", "last", "rest", "next", "empty?", "count", "nth", "seq"}

// loopCursor reports whether loop binding name may be advanced in place:
// body (the loop's body forms) only uses it as the first argument of a
// cursorReaders builtin, or as (seq name) in a test position, and none of
// those names is a local.
func (c *Compiler) loopCursor(name string, body []*syntax.Form) bool {
	if name == "&" {
		return false
	}
	for _, n := range append(cursorNames, name) {
		if n == name {
			continue
		}
		if _, _, local := c.sc.lookup(n); local {
			return false
		}
	}
	for _, f := range body {
		if !cursorSafe(f, name) {
			return false
		}
	}
	return true
}

// cursorSafe checks one form (see loopCursor). It is conservative: any
// form it does not know that mentions name fails.
func cursorSafe(f *syntax.Form, name string) bool {
	if !formUses(f, name) {
		return true
	}
	switch f.Kind {
	case syntax.FVec, syntax.FMap, syntax.FSet:
		return allCursorSafe(f.Items, name) // items are evaluated at once
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
			return allCursorSafe(it[1:], name) // (:k (first xs))
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
		return allCursorSafe(it[1:], name) // a namespaced builtin call
	}
	h := head.Name
	if h == name {
		return false
	}
	if cursorReaders[h] && len(it) >= 2 && it[1].IsSym(name) {
		return allCursorSafe(it[2:], name)
	}
	if testFirst[h] {
		if len(it) < 2 {
			return false
		}
		return cursorTest(it[1], name) && allCursorSafe(it[2:], name)
	}
	switch h {
	case "cond":
		for i := 1; i < len(it); i++ {
			if i%2 == 1 && !cursorTest(it[i], name) {
				return false
			}
			if i%2 == 0 && !cursorSafe(it[i], name) {
				return false
			}
		}
		return true
	case "do", "and", "or", "recur":
		return allCursorSafe(it[1:], name)
	case "let":
		if len(it) < 2 || it[1].Kind != syntax.FVec || len(it[1].Items)%2 != 0 {
			return false
		}
		bs := it[1].Items
		for i := 0; i < len(bs); i += 2 {
			if bs[i].Kind != syntax.FSym || bs[i].Ns != "" || rebindsCursor(bs[i], name) {
				return false
			}
			if !cursorSafe(bs[i+1], name) {
				return false
			}
		}
		return allCursorSafe(it[2:], name)
	}
	if IsSpecialForm(h) {
		return false // fn, for, loop, threading ...: may defer or rebind
	}
	return allCursorSafe(it[1:], name) // a function call: args are evaluated first
}

// advancesByRest reports whether some form in fs is (rest name) or
// (next name): a cheap test before the full loopCursor analysis.
func advancesByRest(fs []*syntax.Form, name string) bool {
	for _, f := range fs {
		if f.Kind == syntax.FList && len(f.Items) == 2 && f.Items[1].IsSym(name) &&
			(f.Items[0].IsSym("rest") || f.Items[0].IsSym("next")) {
			return true
		}
		if advancesByRest(f.Items, name) {
			return true
		}
	}
	return false
}

func allCursorSafe(fs []*syntax.Form, name string) bool {
	for _, f := range fs {
		if !cursorSafe(f, name) {
			return false
		}
	}
	return true
}

// cursorTest is cursorSafe for a form whose value is only tested for
// truth, where (seq name) is also allowed.
func cursorTest(f *syntax.Form, name string) bool {
	if f.Kind == syntax.FList && len(f.Items) == 2 && f.Items[0].IsSym("seq") && f.Items[1].IsSym(name) {
		return true
	}
	return cursorSafe(f, name)
}

func rebindsCursor(sym *syntax.Form, name string) bool {
	if sym.Name == name {
		return true
	}
	for _, n := range cursorNames {
		if sym.Name == n {
			return true
		}
	}
	return false
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
	if arg.Kind != syntax.FList || len(arg.Items) != 2 || !arg.Items[1].IsSym(cu.name) {
		return nil
	}
	if !arg.Items[0].IsSym("rest") && !arg.Items[0].IsSym("next") {
		return nil
	}
	return &cursorArg{slot: cu.slot, own: cu.own, pos: arg.Pos}
}
