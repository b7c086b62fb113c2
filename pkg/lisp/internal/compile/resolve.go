package compile

import (
	"strconv"
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// The resolver. Before a top-level form is compiled, resolve walks it once
// and records in every symbol's Res what the symbol names at its position:
// the head of a special form (which one), a local (which binder), a
// binding occurrence, a global def'd in the program, a builtin, or nothing
// known. It follows the scopes the compiler builds: let, loop, fn (its
// name, each arity's parameters with & rest, :pre/:post with %), defn,
// letfn, for/doseq (with :let), if-let and its kin, as->, #(...) with its
// % parameters, and destructuring of vectors and maps (:keys, :strs, :syms,
// :as, :or). A local shadows a builtin and a special form, except the five
// that Clojure does not let a local shadow (unshadowable).
//
// The optimisation passes look ahead into forms they have not compiled
// yet; they ask headSpecial and headBuiltin (and isBuiltinSym) what a
// form's head is there, and binding.is whether a symbol names a given
// binding, not the symbol's spelling. The compiler dispatches each head
// and finds each local by the same answers (compileList, scope.lookup).
// The symbols the compiler makes carry a resolution too (mkSpecial,
// mkBuiltin, madeBinder). A symbol with none (Res 0; checkResolved fails
// on one) is taken by its spelling: a local of the scope being compiled
// with that name, else what the name is outside.

// Resolve resolves top-level form f (the compiler does it before it
// compiles f): it fills the Res of every symbol in f.
func (c *Compiler) Resolve(f *syntax.Form) {
	r := &c.res
	r.c = c
	if r.names == nil {
		r.names = r.buf[:0]
	}
	r.names = r.names[:0]
	r.form(f)
}

func (r *resolver) lookup(name string) (uint32, bool) {
	for i := len(r.names) - 1; i >= 0; i-- {
		if r.names[i].name == name {
			return r.names[i].id, true
		}
	}
	return 0, false
}

// declare makes name a local with a new binder number.
func (r *resolver) declare(name string) uint32 {
	r.next++
	r.names = append(r.names, resName{name, r.next})
	return r.next
}

func (r *resolver) forms(fs []*syntax.Form) {
	for _, f := range fs {
		r.form(f)
	}
}

func (r *resolver) form(f *syntax.Form) {
	switch f.Kind {
	case syntax.FSym:
		r.sym(f)
	case syntax.FVec, syntax.FMap, syntax.FSet:
		r.forms(f.Items)
	case syntax.FFnLit:
		saved := len(r.names)
		base := r.next + 1
		f.Res = mkRes(resBinder, base) // FnLitAsFn's parameters
		r.next += uint32(len(percentNames))
		for i, n := range percentNames {
			r.names = append(r.names, resName{n, base + uint32(i)})
		}
		r.names = append(r.names, resName{"%", base + 1}) // % is %1
		if len(f.Items) == 1 && f.Items[0].Kind != syntax.FSym && f.Items[0].Kind != syntax.FList {
			r.form(f.Items[0]) // #([% %2]): the body is the one form
		} else {
			r.list(f) // #(f a b) is the call (f a b)
		}
		r.names = r.names[:saved]
	case syntax.FList:
		r.list(f)
	}
}

// sym resolves a symbol in value (or call head) position.
func (r *resolver) sym(f *syntax.Form) {
	switch {
	case f.Ns != "":
		f.Res = mkRes(resOther, 0)
	default:
		if id, ok := r.lookup(f.Name); ok {
			f.Res = mkRes(resLocal, id)
		} else if sp := specialIDs[f.Name]; sp != 0 {
			f.Res = mkRes(resSpecial, uint32(sp))
		} else if _, ok := r.c.Builtins[f.Name]; ok {
			f.Res = mkRes(resBuiltin, 0)
		} else if r.c.MemNames[f.Name] {
			f.Res = mkRes(resGlobal, 0)
		} else {
			f.Res = mkRes(resOther, 0)
		}
	}
}

// bind resolves binding pattern p, declaring its names.
func (r *resolver) bind(p *syntax.Form) {
	switch p.Kind {
	case syntax.FSym:
		if p.Ns == "" && p.Name != "&" {
			p.Res = mkRes(resBinder, r.declare(p.Name))
		}
	case syntax.FVec:
		for i := 0; i < len(p.Items); i++ {
			it := p.Items[i]
			if it.IsSym("&") {
				continue
			}
			if kw, ok := it.Val.(*core.Keyword); ok && it.Kind == syntax.FLit && kw.Name == "as" {
				continue
			}
			r.bind(it)
		}
	case syntax.FMap:
		r.mapPattern(p)
	}
}

// mapPattern resolves a map pattern: each target's :or default is
// resolved before the target is declared, as the compiler compiles it.
func (r *resolver) mapPattern(p *syntax.Form) {
	var or *syntax.Form
	for i := 0; i+1 < len(p.Items); i += 2 {
		if keywordName(p.Items[i]) == "or" && p.Items[i+1].Kind == syntax.FMap {
			or = p.Items[i+1]
		}
	}
	dflt := func(name string) {
		if or == nil {
			return
		}
		for j := 0; j+1 < len(or.Items); j += 2 {
			if or.Items[j].Kind == syntax.FSym && or.Items[j].Name == name {
				r.form(or.Items[j+1])
			}
		}
	}
	for i := 0; i+1 < len(p.Items); i += 2 {
		k, v := p.Items[i], p.Items[i+1]
		kind := keywordName(k)
		if j := strings.LastIndexByte(kind, '/'); j > 0 && kind[j+1:] == "keys" {
			kind = "keys"
		}
		switch kind {
		case "keys", "strs", "syms":
			if v.Kind != syntax.FVec {
				continue
			}
			for _, s := range v.Items {
				name := s.Name
				if s.Kind == syntax.FLit {
					name = keywordName(s)
				}
				if j := strings.LastIndexByte(name, '/'); j > 0 && j < len(name)-1 {
					name = name[j+1:]
				}
				if name == "" {
					continue
				}
				dflt(name)
				s.Res = mkRes(resBinder, r.declare(name)) // a keyword too: the compiler binds a symbol it makes
			}
		case "or":
		case "as":
			r.bind(v)
		case "":
			if k.Kind == syntax.FSym {
				dflt(k.Name)
			}
			r.bind(k) // the target; v is the key, data
		}
	}
}

// keywordName returns the name of keyword literal f, or "".
func keywordName(f *syntax.Form) string {
	if kw, ok := f.Val.(*core.Keyword); ok && f.Kind == syntax.FLit {
		return kw.Name
	}
	return ""
}

func (r *resolver) list(f *syntax.Form) {
	if len(f.Items) == 0 {
		return
	}
	head := f.Items[0]
	if head.Kind == syntax.FSym && head.Ns == "" {
		if sp := specialIDs[head.Name]; sp != 0 {
			if _, local := r.lookup(head.Name); !local || unshadowable(sp) {
				head.Res = mkRes(resSpecial, uint32(sp))
				r.special(sp, f)
				return
			}
		}
	}
	r.forms(f.Items)
}

// special resolves the parts of special form f (its head resolved).
func (r *resolver) special(sp specialID, f *syntax.Form) {
	it := f.Items
	saved := len(r.names)
	defer func() { r.names = r.names[:saved] }()
	bindings := func() []*syntax.Form {
		if len(it) < 2 || it[1].Kind != syntax.FVec {
			return nil
		}
		return it[1].Items
	}
	switch sp {
	case spLet, spLoop:
		b := bindings()
		for i := 0; i+1 < len(b); i += 2 {
			r.form(b[i+1])
			r.bind(b[i])
		}
		r.forms(it[min(2, len(it)):])
		return
	case spIfLet, spIfSome, spWhenLet, spWhenSome, spWhenFrst:
		b := bindings()
		if len(b) != 2 {
			break
		}
		r.form(b[1])
		r.bind(b[0])
		if sp == spIfLet || sp == spIfSome {
			if len(it) > 2 {
				r.form(it[2])
			}
			r.names = r.names[:saved] // else runs without the binding
			r.forms(it[min(3, len(it)):])
			return
		}
		r.forms(it[2:])
		return
	case spFn:
		rest := it[1:]
		if len(rest) > 0 && rest[0].Kind == syntax.FSym && rest[0].Ns == "" {
			r.bind(rest[0]) // the fn's own name
			rest = rest[1:]
		}
		r.arities(rest)
		return
	case spDefn, spDefnP:
		if len(it) < 2 || it[1].Kind != syntax.FSym {
			break
		}
		it[1].Res = mkRes(resGlobal, 0)
		f.Res = mkRes(resBinder, r.declare(it[1].Name)) // the body calls itself by its name
		rest := it[2:]
		if len(rest) > 0 && rest[0].Kind == syntax.FLit {
			if _, ok := rest[0].Val.(string); ok {
				rest = rest[1:]
			}
		}
		if len(rest) > 0 && rest[0].Kind == syntax.FMap {
			rest = rest[1:]
		}
		r.arities(rest)
		return
	case spDef, spDefonce:
		if len(it) >= 2 && it[1].Kind == syntax.FSym {
			it[1].Res = mkRes(resGlobal, 0)
			r.forms(it[2:])
			return
		}
	case spLetfn:
		b := bindings()
		for _, s := range b {
			if s.Kind == syntax.FList && len(s.Items) >= 1 {
				r.bind(s.Items[0])
			}
		}
		for _, s := range b {
			if s.Kind == syntax.FList && len(s.Items) >= 1 {
				r.arities(s.Items[1:])
			}
		}
		r.forms(it[min(2, len(it)):])
		return
	case spFor, spDoseq:
		b := bindings()
		for i := 0; i+1 < len(b); i += 2 {
			switch keywordName(b[i]) {
			case "let":
				if b[i+1].Kind == syntax.FVec {
					lb := b[i+1].Items
					for j := 0; j+1 < len(lb); j += 2 {
						r.form(lb[j+1])
						r.bind(lb[j])
					}
				}
			case "":
				r.form(b[i+1])
				r.bind(b[i])
			default: // :when, :while
				r.form(b[i+1])
			}
		}
		r.forms(it[min(2, len(it)):])
		return
	case spAs:
		if len(it) < 3 || it[2].Kind != syntax.FSym {
			break
		}
		r.form(it[1])
		r.bind(it[2])
		r.forms(it[3:])
		return
	case spCase:
		if len(it) < 2 {
			return
		}
		r.form(it[1])
		cl := it[2:]
		for i := 1; i < len(cl); i += 2 {
			r.form(cl[i]) // the test constants are data
		}
		if len(cl)%2 == 1 {
			r.form(cl[len(cl)-1])
		}
		return
	case spThread, spThreadL, spSomeThread, spSomeThreadL, spCondThread, spCondThreadL:
		if len(it) < 2 {
			return
		}
		r.form(it[1])
		last := sp == spThreadL || sp == spSomeThreadL || sp == spCondThreadL
		cond := sp == spCondThread || sp == spCondThreadL
		for i, st := range it[2:] {
			if cond && i%2 == 0 {
				r.form(st) // a cond-> test
				continue
			}
			r.threadStep(st, last)
		}
		return
	case spQuote, spComment:
		return
	case spWhere:
		for i, x := range it[1:] {
			if i != 1 || x.Kind != syntax.FSym { // (where field op value): op is data
				r.form(x)
			}
		}
		return
	}
	r.forms(it[1:])
}

// threadStep resolves a step of a threading form. A step that is a
// special form gets the threaded value among its parts, which moves them
// ((-> x (as-> v ...)) is (as-> x v ...)): it is resolved as the compiler
// will see it, with a nil literal for the value (resolved before, where
// it is written). Any other step is resolved as it stands.
func (r *resolver) threadStep(st *syntax.Form, last bool) {
	if st.Kind != syntax.FList || len(st.Items) == 0 || st.Items[0].Kind != syntax.FSym || st.Items[0].Ns != "" {
		r.form(st)
		return
	}
	sp := specialIDs[st.Items[0].Name]
	if _, local := r.lookup(st.Items[0].Name); sp == 0 || local && !unshadowable(sp) {
		r.form(st)
		return
	}
	r.list(threadStep(st, &syntax.Form{Kind: syntax.FLit, Pos: st.Pos}, last))
}

// arities resolves a fn's arities: [params] body... or ([params] body...)...
func (r *resolver) arities(rest []*syntax.Form) {
	if len(rest) > 0 && rest[0].Kind == syntax.FVec {
		r.arity(rest[0], rest[1:])
		return
	}
	for _, a := range rest {
		if a.Kind == syntax.FList && len(a.Items) > 0 && a.Items[0].Kind == syntax.FVec {
			r.arity(a.Items[0], a.Items[1:])
		} else {
			r.form(a)
		}
	}
}

func (r *resolver) arity(params *syntax.Form, body []*syntax.Form) {
	saved := len(r.names)
	r.bind(params)
	if len(body) >= 2 && body[0].Kind == syntax.FMap {
		// :pre and :post conditions; % is the result in :post
		m := body[0].Items
		r.forms(body[1:])
		for i := 0; i+1 < len(m); i += 2 {
			r.form(m[i]) // a map without :pre or :post is a value, keys too
			if keywordName(m[i]) == "post" {
				inner := len(r.names)
				body[0].Res = mkRes(resBinder, r.declare("%"))
				r.form(m[i+1])
				r.names = r.names[:inner]
			} else {
				r.form(m[i+1])
			}
		}
	} else {
		r.forms(body)
	}
	r.names = r.names[:saved]
}

// headSpecial returns the special form f is (f a list), or 0.
func (c *Compiler) headSpecial(f *syntax.Form) specialID {
	if f.Kind != syntax.FList || len(f.Items) == 0 {
		return 0
	}
	return c.symSpecial(f.Items[0])
}

// symSpecial returns the special form head names at its position, or 0.
func (c *Compiler) symSpecial(head *syntax.Form) specialID {
	if head.Kind != syntax.FSym || head.Ns != "" {
		return 0
	}
	switch k, id := resOf(head); k {
	case resSpecial:
		return specialID(id)
	case resNone:
		sp := specialIDs[head.Name]
		if sp != 0 && (unshadowable(sp) || !c.bound(head.Name)) {
			return sp
		}
	}
	return 0
}

// mentions reports whether some symbol in f is one for which is returns
// true.
func mentions(f *syntax.Form, is func(*syntax.Form) bool) bool {
	if f.Kind == syntax.FSym {
		return is(f)
	}
	for _, it := range f.Items {
		if mentions(it, is) {
			return true
		}
	}
	return false
}

// mentionsRecur reports whether f holds a recur (of any loop or fn).
func (c *Compiler) mentionsRecur(f *syntax.Form) bool {
	return mentions(f, func(s *syntax.Form) bool { return c.symSpecial(s) == spRecur })
}

// headBuiltin returns the name of the builtin f calls (f a list whose head
// is an unqualified symbol naming a builtin at its position), or "".
func (c *Compiler) headBuiltin(f *syntax.Form) string {
	if f.Kind != syntax.FList || len(f.Items) == 0 || !c.isBuiltin(f.Items[0]) {
		return ""
	}
	return f.Items[0].Name
}

// isBuiltinSym reports whether sym is builtin name at its position.
func (c *Compiler) isBuiltinSym(sym *syntax.Form, name string) bool {
	return sym.Kind == syntax.FSym && sym.Ns == "" && sym.Name == name && c.isBuiltin(sym)
}

// callsBuiltin reports whether f is a call of builtin name.
func (c *Compiler) callsBuiltin(f *syntax.Form, name string) bool {
	return f.Kind == syntax.FList && len(f.Items) > 0 && c.isBuiltinSym(f.Items[0], name)
}

// isLocal reports whether sym names a local at its position.
func (c *Compiler) isLocal(sym *syntax.Form) bool {
	switch k, _ := resOf(sym); k {
	case resLocal, resBinder:
		return true
	case resNone:
		return sym.Kind == syntax.FSym && sym.Ns == "" && c.bound(sym.Name)
	}
	return false
}

// ResolvedAs describes what symbol f names at its position, as Resolve
// recorded it: "special", "local#N" (N its binder's number), "binder#N",
// "global", "builtin", "other", or "" when f was not resolved.
func ResolvedAs(f *syntax.Form) string {
	k, id := resOf(f)
	switch k {
	case resSpecial:
		return "special"
	case resLocal:
		return "local#" + strconv.Itoa(int(id))
	case resBinder:
		return "binder#" + strconv.Itoa(int(id))
	case resGlobal:
		return "global"
	case resBuiltin:
		return "builtin"
	case resOther:
		return "other"
	}
	return ""
}

// mkSpecial returns the head of special form name for a form the
// compiler makes (the let of an as->): a local of that name, which the
// program may have, does not shadow it.
func mkSpecial(name string, pos core.Pos) *syntax.Form {
	f := mkSym(name, pos)
	f.Res = mkRes(resSpecial, uint32(specialNamed(name))) | resMade
	return f
}

// madeBinder returns the binding symbol of a local the compiler makes
// (name one no program can write), with a new binder number from the
// resolver's count: the symbol also serves as each use of the local.
func (c *Compiler) madeBinder(name string, pos core.Pos) *syntax.Form {
	c.res.next++
	f := mkSym(name, pos)
	f.Res = mkRes(resBinder, c.res.next)
	return f
}

// mkBuiltin is mkSpecial for builtin name.
func mkBuiltin(name string, pos core.Pos) *syntax.Form {
	f := mkSym(name, pos)
	f.Res = mkRes(resBuiltin, 0) | resMade
	return f
}
