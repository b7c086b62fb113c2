package lisp

import (
	"fmt"
	"strconv"
	"strings"
)

type specialFn func(c *compiler, f *form, tail bool) node

// unshadowable are the forms that are special forms in Clojure too (the
// others are macros there): a local of the same name does not shadow them
// in call position, so (let [if inc] (if true 1 2)) is 1.
var unshadowable = map[string]bool{"if": true, "do": true, "quote": true, "def": true, "recur": true}

// specialFormNames lists the special forms' names (for hints).
var specialFormNames = func() []string {
	names := make([]string, len(specialForms))
	for i, f := range specialForms {
		names[i] = f.name
	}
	return names
}()

func isSpecialForm(name string) bool { return specialForm(name) != nil }

func specialForm(name string) specialFn {
	switch name {
	case "do":
		return sfDo
	case "if":
		return sfIf
	case "if-not":
		return sfIfNot
	case "when":
		return sfWhen
	case "when-not":
		return sfWhenNot
	case "cond":
		return sfCond
	case "case":
		return sfCase
	case "condp":
		return sfCondp
	case "if-let":
		return sfIfLet
	case "when-let":
		return sfWhenLet
	case "if-some":
		return sfIfSome
	case "when-some":
		return sfWhenSome
	case "when-first":
		return sfWhenFirst
	case "let":
		return sfLet
	case "letfn":
		return sfLetfn
	case "fn":
		return sfFn
	case "defn", "defn-":
		return sfDefn
	case "def":
		return sfDef
	case "defonce":
		return sfDefonce
	case "loop":
		return sfLoop
	case "recur":
		return sfRecur
	case "and":
		return sfAnd
	case "or":
		return sfOr
	case "->", "->>", "some->", "some->>", "as->", "cond->", "cond->>":
		return sfThread
	case "for":
		return sfFor
	case "doseq":
		return sfDoseq
	case "quote":
		return sfQuote
	case "comment":
		return func(*compiler, *form, bool) node { return constNode(nil) }
	case "where":
		return sfWhere
	case "call":
		return sfCall
	}
	return nil
}

// form constructors for macro-like rewrites.
func mkSym(name string, pos Pos) *form { return &form{kind: fSym, name: name, pos: pos} }
func mkList(pos Pos, items ...*form) *form {
	return &form{kind: fList, pos: pos, items: items}
}
func mkVec(pos Pos, items ...*form) *form { return &form{kind: fVec, pos: pos, items: items} }

func (c *compiler) argc(f *form, name string, min, max int) {
	n := len(f.items) - 1
	if n < min || (max >= 0 && n > max) {
		var want string
		switch {
		case max < 0:
			want = fmt.Sprintf("%d or more args", min)
		case min == max:
			want = argsText(min)
		default:
			want = fmt.Sprintf("%d or %d args", min, max)
		}
		c.fail(KindArity, f.pos, "", "%s expects %s, got %d", name, want, n)
	}
}

func sfDo(c *compiler, f *form, tail bool) node { return c.compileBody(f.items[1:], tail) }

func sfIf(c *compiler, f *form, tail bool) node {
	test, then, els := c.ifParts(f, "if", tail)
	return ifNode(test, then, els)
}

// ifParts compiles the test and branches of (name test then else?); a
// missing else is nil.
func (c *compiler) ifParts(f *form, name string, tail bool) (test, then, els node) {
	c.argc(f, name, 2, 3)
	test = c.compile(f.items[1], false)
	then = c.compile(f.items[2], tail)
	els = constNode(nil)
	if len(f.items) == 4 {
		els = c.compile(f.items[3], tail)
	}
	return test, then, els
}

func ifNode(test, then, els node) node {
	return func(fr *frame) Value {
		if Truthy(test(fr)) {
			return then(fr)
		}
		return els(fr)
	}
}

func sfIfNot(c *compiler, f *form, tail bool) node {
	test, then, els := c.ifParts(f, "if-not", tail)
	return ifNode(test, els, then)
}

func sfWhen(c *compiler, f *form, tail bool) node {
	c.argc(f, "when", 1, -1)
	return ifNode(c.compile(f.items[1], false), c.compileBody(f.items[2:], tail), constNode(nil))
}

func sfWhenNot(c *compiler, f *form, tail bool) node {
	c.argc(f, "when-not", 1, -1)
	return ifNode(c.compile(f.items[1], false), constNode(nil), c.compileBody(f.items[2:], tail))
}

func sfCond(c *compiler, f *form, tail bool) node {
	cl := f.items[1:]
	if len(cl)%2 != 0 {
		c.fail(KindAnalysis, f.pos, "cond takes test/expression pairs; use :else for the default", "cond requires an even number of forms")
	}
	tests := make([]node, 0, len(cl)/2)
	exprs := make([]node, 0, len(cl)/2)
	for i := 0; i < len(cl); i += 2 {
		tests = append(tests, c.compile(cl[i], false))
		exprs = append(exprs, c.compile(cl[i+1], tail))
	}
	return func(fr *frame) Value {
		for i, t := range tests {
			if Truthy(t(fr)) {
				return exprs[i](fr)
			}
		}
		return nil
	}
}

func sfCase(c *compiler, f *form, tail bool) node {
	c.argc(f, "case", 1, -1)
	expr := c.compile(f.items[1], false)
	cl := f.items[2:]
	var dflt node
	if len(cl)%2 == 1 {
		dflt = c.compile(cl[len(cl)-1], tail)
		cl = cl[:len(cl)-1]
	}
	type clause struct {
		consts []Value
		body   node
	}
	var clauses []clause
	var seen []Value
	add := func(consts []Value, f *form) []Value {
		k := c.caseConst(f)
		for _, s := range seen {
			if Equal(s, k) {
				c.fail(KindAnalysis, f.pos, "", "case: duplicate test constant: %s", preview(k))
			}
		}
		seen = append(seen, k)
		return append(consts, k)
	}
	for i := 0; i < len(cl); i += 2 {
		var consts []Value
		t := cl[i]
		if t.kind == fList {
			for _, it := range t.items {
				consts = add(consts, it)
			}
		} else {
			consts = add(consts, t)
		}
		clauses = append(clauses, clause{consts, c.compile(cl[i+1], tail)})
	}
	pos := f.pos
	return func(fr *frame) Value {
		v := expr(fr)
		for _, cl := range clauses {
			for _, k := range cl.consts {
				if Equal(k, v) {
					return cl.body(fr)
				}
			}
		}
		if dflt != nil {
			return dflt(fr)
		}
		panic(&Error{Kind: KindValue, Pos: pos, Msg: "case: no matching clause: " + preview(v), Hint: "add a default expression as the last form of case"})
	}
}

func (c *compiler) caseConst(f *form) Value {
	if f.kind == fSym {
		return f.symText()
	}
	v, ok := formData(f, true)
	if !ok {
		c.fail(KindAnalysis, f.pos, "", "case test must be a constant")
	}
	return v
}

func sfCondp(c *compiler, f *form, tail bool) node {
	c.argc(f, "condp", 2, -1)
	pred := c.compile(f.items[1], false)
	expr := c.compile(f.items[2], false)
	cl := f.items[3:]
	var dflt node
	var tests, bodies []node
	var arrow []bool // clause i is "test :>> result-fn"
	for i := 0; i < len(cl); {
		if i == len(cl)-1 { // a lone last form is the default
			dflt = c.compile(cl[i], tail)
			break
		}
		tests = append(tests, c.compile(cl[i], false))
		if k, ok := cl[i+1].val.(*Keyword); ok && cl[i+1].kind == fLit && k.Name == ">>" {
			if i+2 >= len(cl) {
				c.fail(KindAnalysis, cl[i+1].pos, "", "condp: :>> needs a function after it")
			}
			arrow = append(arrow, true)
			bodies = append(bodies, c.compile(cl[i+2], false))
			i += 3
			continue
		}
		arrow = append(arrow, false)
		bodies = append(bodies, c.compile(cl[i+1], tail))
		i += 2
	}
	pos := f.pos
	return func(fr *frame) Value {
		p := pred(fr)
		v := expr(fr)
		for i, t := range tests {
			if r := fr.th.Call2(p, t(fr), v); Truthy(r) {
				if arrow[i] {
					return fr.th.Call1(bodies[i](fr), r)
				}
				return bodies[i](fr)
			}
		}
		if dflt != nil {
			return dflt(fr)
		}
		panic(&Error{Kind: KindValue, Pos: pos, Msg: "condp: no matching clause: " + preview(v)})
	}
}

// bindingPairs checks a binding vector and returns its forms.
func (c *compiler) bindingPairs(f *form, name string) []*form {
	if len(f.items) < 2 || f.items[1].kind != fVec {
		c.fail(KindAnalysis, f.pos, fmt.Sprintf("write (%s [name value ...] body)", name), "%s requires a binding vector", name)
	}
	b := f.items[1].items
	if len(b)%2 != 0 {
		c.fail(KindAnalysis, f.items[1].pos, "", "%s binding vector requires an even number of forms", name)
	}
	return b
}

func (c *compiler) condBind(f *form, name string, tail bool, test func(Value) bool, oneArm bool) node {
	b := c.bindingPairs(f, name)
	if len(b) != 2 {
		c.fail(KindAnalysis, f.items[1].pos, "", "%s requires exactly one binding", name)
	}
	init := c.compile(b[1], false)
	saved := len(c.sc.locals)
	bind := c.compilePattern(b[0])
	var then node
	els := constNode(nil)
	if oneArm {
		then = c.compileBody(f.items[2:], tail)
	} else {
		if len(f.items) < 3 || len(f.items) > 4 {
			c.fail(KindArity, f.pos, "", "%s expects 2 or 3 args, got %d", name, len(f.items)-1)
		}
		then = c.compile(f.items[2], tail)
	}
	c.sc.locals = c.sc.locals[:saved]
	if !oneArm && len(f.items) == 4 {
		els = c.compile(f.items[3], tail)
	}
	return func(fr *frame) Value {
		v := init(fr)
		if test(v) {
			bind(fr, v)
			return then(fr)
		}
		return els(fr)
	}
}

func notNil(v Value) bool { return v != nil }

func sfIfLet(c *compiler, f *form, tail bool) node {
	return c.condBind(f, "if-let", tail, Truthy, false)
}
func sfWhenLet(c *compiler, f *form, tail bool) node {
	return c.condBind(f, "when-let", tail, Truthy, true)
}
func sfIfSome(c *compiler, f *form, tail bool) node {
	return c.condBind(f, "if-some", tail, notNil, false)
}
func sfWhenSome(c *compiler, f *form, tail bool) node {
	return c.condBind(f, "when-some", tail, notNil, true)
}

func sfWhenFirst(c *compiler, f *form, tail bool) node {
	b := c.bindingPairs(f, "when-first")
	if len(b) != 2 {
		c.fail(KindAnalysis, f.items[1].pos, "", "when-first requires exactly one binding")
	}
	coll := c.compile(b[1], false)
	saved := len(c.sc.locals)
	bind := c.compilePattern(b[0])
	body := c.compileBody(f.items[2:], tail)
	c.sc.locals = c.sc.locals[:saved]
	return func(fr *frame) Value {
		var first Value
		found := false
		fr.th.Each(coll(fr), "when-first", 0, func(v Value) bool {
			first, found = v, true
			return false
		})
		if !found {
			return nil
		}
		bind(fr, first)
		return body(fr)
	}
}

func sfLet(c *compiler, f *form, tail bool) node {
	b := c.bindingPairs(f, "let")
	saved := len(c.sc.locals)
	inits := make([]node, 0, len(b)/2)
	binds := make([]binder, 0, len(b)/2)
	for i := 0; i < len(b); i += 2 {
		inits = append(inits, c.compile(b[i+1], false))
		binds = append(binds, c.compilePattern(b[i]))
	}
	body := c.compileBody(f.items[2:], tail)
	c.sc.locals = c.sc.locals[:saved]
	if len(inits) == 1 {
		i0, b0 := inits[0], binds[0]
		return func(fr *frame) Value {
			b0(fr, i0(fr))
			return body(fr)
		}
	}
	return func(fr *frame) Value {
		for i, in := range inits {
			binds[i](fr, in(fr))
		}
		return body(fr)
	}
}

// fnSpec is one arity as written: params vector and body.
type fnSpec struct {
	params *form
	body   []*form
}

func (c *compiler) parseFn(f *form, name string, rest []*form) []fnSpec {
	if len(rest) == 0 {
		c.fail(KindAnalysis, f.pos, "write (fn [x] body)", "fn requires a parameter vector")
	}
	if rest[0].kind == fVec {
		return []fnSpec{{rest[0], rest[1:]}}
	}
	var specs []fnSpec
	for _, r := range rest {
		if r.kind != fList || len(r.items) == 0 || r.items[0].kind != fVec {
			c.fail(KindAnalysis, r.pos, "write (fn [x] body) or (fn ([x] body) ([x y] body))", "fn requires a parameter vector")
		}
		specs = append(specs, fnSpec{r.items[0], r.items[1:]})
	}
	return specs
}

func sfFn(c *compiler, f *form, _ bool) node {
	rest := f.items[1:]
	name := ""
	if len(rest) > 0 && rest[0].kind == fSym && rest[0].ns == "" {
		name = rest[0].name
		rest = rest[1:]
	}
	return c.compileFn(f, name, name, c.parseFn(f, name, rest))
}

// compileFn compiles a function; selfName (may be "") binds the fn itself.
func (c *compiler) compileFn(f *form, name, selfName string, specs []fnSpec) node {
	outer := c.sc
	sc := &scope{parent: outer, selfName: selfName}
	c.sc = sc
	proto := &fnProto{name: name}
	seen := map[int]bool{}
	hasVariadic := false
	for si, spec := range specs {
		sc.locals = sc.locals[:0]
		sc.nslots = 0
		ar := &arity{}
		ps := spec.params.items
		var fixed []*form
		var restPat *form
		for i := 0; i < len(ps); i++ {
			if ps[i].isSym("&") {
				if i+2 != len(ps) {
					c.fail(KindAnalysis, ps[i].pos, "", "& must be followed by exactly one parameter")
				}
				restPat = ps[i+1]
				break
			}
			fixed = append(fixed, ps[i])
		}
		ar.nfixed = len(fixed)
		ar.variadic = restPat != nil
		if ar.variadic {
			if hasVariadic {
				c.fail(KindAnalysis, spec.params.pos, "", "fn can have only one variadic arity")
			}
			hasVariadic = true
		} else {
			if seen[ar.nfixed] {
				c.fail(KindAnalysis, spec.params.pos, "", "fn has two arities with %d params", ar.nfixed)
			}
			seen[ar.nfixed] = true
		}
		simple := true
		all := fixed
		if restPat != nil {
			all = append(append([]*form{}, fixed...), restPat)
		}
		for _, p := range all {
			if p.kind != fSym || p.ns != "" {
				simple = false
			}
		}
		if si == 0 {
			for _, p := range spec.params.items {
				proto.paramNames = append(proto.paramNames, formText(p))
			}
		}
		for _, p := range fixed {
			ar.params = append(ar.params, c.compilePattern(p))
		}
		if restPat != nil {
			ar.params = append(ar.params, c.restPattern(restPat))
		}
		ar.simple = simple
		n := ar.nfixed
		if ar.variadic {
			n++
		}
		sc.recur = &recurTarget{n: n}
		ar.body = c.compileFnBody(spec.body)
		ar.nslots = sc.nslots
		proto.arities = append(proto.arities, ar)
	}
	// fixed arities first, by count; the variadic one last.
	for i := 1; i < len(proto.arities); i++ {
		for j := i; j > 0; j-- {
			a, b := proto.arities[j-1], proto.arities[j]
			if a.variadic || (!b.variadic && b.nfixed < a.nfixed) {
				proto.arities[j-1], proto.arities[j] = b, a
			}
		}
	}
	c.sc = outer
	c.lastProto = proto
	proto.capRefs = sc.capRefs
	for _, ar := range proto.arities {
		if ar.simple && !ar.variadic && ar.nfixed < len(proto.direct) {
			proto.direct[ar.nfixed] = ar
		}
	}
	if len(proto.capRefs) == 0 {
		clo := &Closure{proto: proto}
		return constNode(clo)
	}
	return func(fr *frame) Value { return makeClosure(fr, proto) }
}

// compileFnBody compiles the body of a fn arity. A leading map with :pre
// or :post (when more forms follow) holds conditions, as in Clojure:
// each :pre form must be truthy before the body runs, each :post form
// after it, with % bound to the result; a falsy one is an "Assert
// failed" error naming the condition.
func (c *compiler) compileFnBody(body []*form) node {
	if len(body) < 2 || body[0].kind != fMap {
		return c.compileBody(body, true)
	}
	var pre, post []*form
	for i := 0; i+1 < len(body[0].items); i += 2 {
		k, v := body[0].items[i], body[0].items[i+1]
		kw, ok := k.val.(*Keyword)
		if k.kind != fLit || !ok || (kw.Name != "pre" && kw.Name != "post") {
			continue
		}
		if v.kind != fVec {
			c.fail(KindAnalysis, v.pos, "", ":%s must be followed by a vector of conditions", kw.Name)
		}
		if kw.Name == "pre" {
			pre = v.items
		} else {
			post = v.items
		}
	}
	if pre == nil && post == nil {
		return c.compileBody(body, true)
	}
	type cond struct {
		test node
		text string
		pos  Pos
	}
	conds := func(fs []*form) []cond {
		out := make([]cond, len(fs))
		for i, f := range fs {
			out[i] = cond{c.compile(f, false), formText(f), f.pos}
		}
		return out
	}
	check := func(fr *frame, cs []cond) {
		for _, cd := range cs {
			if !Truthy(cd.test(fr)) {
				panic(&Error{Kind: KindValue, Pos: cd.pos, Msg: "Assert failed: " + cd.text})
			}
		}
	}
	pres := conds(pre)
	if post == nil {
		rest := c.compileBody(body[1:], true)
		return func(fr *frame) Value {
			check(fr, pres)
			return rest(fr)
		}
	}
	rest := c.compileBody(body[1:], false)
	slot := c.sc.declare("%")
	posts := conds(post)
	return func(fr *frame) Value {
		check(fr, pres)
		v := rest(fr)
		fr.slots[slot] = v
		check(fr, posts)
		return v
	}
}

func makeClosure(fr *frame, proto *fnProto) *Closure {
	caps := make([]Value, len(proto.capRefs))
	fillCaps(fr, proto, caps)
	return &Closure{proto: proto, caps: caps}
}

func fillCaps(fr *frame, proto *fnProto, caps []Value) {
	for i, r := range proto.capRefs {
		switch r.kind {
		case refLocal:
			caps[i] = fr.slots[r.idx]
		case refCap:
			caps[i] = fr.caps[r.idx]
		default:
			caps[i] = fr.self
		}
	}
}

// formText renders a form back to source (for #fn[x y] printing).
func formText(f *form) string {
	switch f.kind {
	case fSym:
		return f.symText()
	case fLit:
		return PrStr(f.val)
	case fVec, fList, fMap, fSet:
		parts := make([]string, len(f.items))
		for i, it := range f.items {
			parts[i] = formText(it)
		}
		s := strings.Join(parts, " ")
		switch f.kind {
		case fVec:
			return "[" + s + "]"
		case fList:
			return "(" + s + ")"
		case fMap:
			return "{" + s + "}"
		}
		return "#{" + s + "}"
	case fFnLit:
		parts := make([]string, len(f.items))
		for i, it := range f.items {
			parts[i] = formText(it)
		}
		return "#(" + strings.Join(parts, " ") + ")"
	case fRegex:
		src := strings.ReplaceAll(f.val.(string), `\`, `\\`)
		return "#\"" + strings.ReplaceAll(src, `"`, `\"`) + "\""
	}
	return "?"
}

func sfLetfn(c *compiler, f *form, tail bool) node {
	if len(f.items) < 2 || f.items[1].kind != fVec {
		c.fail(KindAnalysis, f.pos, "write (letfn [(f [x] body)] expr)", "letfn requires a vector of function specs")
	}
	saved := len(c.sc.locals)
	specs := f.items[1].items
	slots := make([]int, len(specs))
	for i, s := range specs {
		if s.kind != fList || len(s.items) < 2 || s.items[0].kind != fSym {
			c.fail(KindAnalysis, s.pos, "write (letfn [(f [x] body)] expr)", "letfn function spec must be (name [params] body)")
		}
		slots[i] = c.sc.declare(s.items[0].name)
	}
	makers := make([]node, len(specs))
	for i, s := range specs {
		name := s.items[0].name
		makers[i] = c.compileFn(s, name, "", c.parseFn(s, name, s.items[1:]))
	}
	body := c.compileBody(f.items[2:], tail)
	c.sc.locals = c.sc.locals[:saved]
	return func(fr *frame) Value {
		for i, m := range makers {
			fr.slots[slots[i]] = m(fr)
		}
		for _, s := range slots {
			if clo, ok := fr.slots[s].(*Closure); ok && len(clo.caps) > 0 {
				fillCaps(fr, clo.proto, clo.caps)
			}
		}
		return body(fr)
	}
}

func (c *compiler) defName(f *form, what string) string {
	if len(f.items) < 2 || f.items[1].kind != fSym || f.items[1].ns != "" {
		c.fail(KindAnalysis, f.pos, fmt.Sprintf("write (%s name ...)", what), "%s requires a name", what)
	}
	name := f.items[1].name
	if _, ok := c.builtins[name]; ok || isSpecialForm(name) {
		c.fail(KindRedefine, f.items[1].pos, "choose another name", "cannot redefine builtin '%s'", name)
	}
	return name
}

func sfDef(c *compiler, f *form, _ bool) node {
	name := c.defName(f, "def")
	rest := f.items[2:]
	if len(rest) == 2 && rest[0].kind == fLit {
		if _, ok := rest[0].val.(string); ok {
			rest = rest[1:]
		}
	}
	if len(rest) > 1 {
		c.fail(KindArity, f.pos, "", "def expects a name and a value, got %d forms", len(f.items)-1)
	}
	init := constNode(nil)
	if len(rest) == 1 {
		init = c.compile(rest[0], false)
	}
	v := &Var{Name: name}
	return func(fr *frame) Value {
		val := init(fr)
		fr.th.setMem(name, val)
		return v
	}
}

func sfDefonce(c *compiler, f *form, _ bool) node {
	name := c.defName(f, "defonce")
	c.argc(f, "defonce", 2, 2)
	init := c.compile(f.items[2], false)
	v := &Var{Name: name}
	return func(fr *frame) Value {
		if _, ok := fr.th.mem[name]; !ok {
			fr.th.setMem(name, init(fr))
		}
		return v
	}
}

func sfDefn(c *compiler, f *form, _ bool) node {
	name := c.defName(f, "defn")
	rest := f.items[2:]
	if len(rest) > 0 && rest[0].kind == fLit {
		if _, ok := rest[0].val.(string); ok {
			rest = rest[1:]
		}
	}
	if len(rest) > 0 && rest[0].kind == fMap {
		rest = rest[1:]
	}
	mk := c.compileFn(f, name, name, c.parseFn(f, name, rest))
	v := &Var{Name: name}
	return func(fr *frame) Value {
		fr.th.setMem(name, mk(fr))
		return v
	}
}

func sfAnd(c *compiler, f *form, tail bool) node {
	return shortCircuit(c, f, tail, false, true)
}

// sfOr: a bare unqualified symbol in an or that names nothing is nil
// (compileSym's inOr), so (or x default) works before x is defined.
func sfOr(c *compiler, f *form, tail bool) node {
	return shortCircuit(c, f, tail, true, nil)
}

// shortCircuit compiles and (stopOn false) and or (stopOn true): the
// first part whose truthiness is stopOn is the value, else the last part;
// with no parts, empty.
func shortCircuit(c *compiler, f *form, tail, stopOn bool, empty Value) node {
	if len(f.items) == 1 {
		return constNode(empty)
	}
	parts := make([]node, len(f.items)-1)
	for i, it := range f.items[1:] {
		if stopOn && it.kind == fSym && it.ns == "" {
			parts[i] = c.compileSym(it, true)
			continue
		}
		parts[i] = c.compile(it, tail && i == len(f.items)-2)
	}
	return func(fr *frame) Value {
		var v Value
		for _, p := range parts {
			v = p(fr)
			if Truthy(v) == stopOn {
				return v
			}
		}
		return v
	}
}

func (c *compiler) gensymName() string {
	c.gensym++
	return " g" + strconv.Itoa(c.gensym)
}

// threadStep inserts x into step as first (or last) argument.
func threadStep(step, x *form, last bool) *form {
	if step.kind == fList && len(step.items) > 0 {
		items := make([]*form, 0, len(step.items)+1)
		if last {
			items = append(append(items, step.items...), x)
		} else {
			items = append(append(append(items, step.items[0]), x), step.items[1:]...)
		}
		return &form{kind: fList, pos: step.pos, items: items}
	}
	return mkList(step.pos, step, x)
}

func sfThread(c *compiler, f *form, tail bool) node {
	op := f.items[0].name
	c.argc(f, op, 1, -1)
	x := f.items[1]
	steps := f.items[2:]
	pos := f.pos
	switch op {
	case "->", "->>":
		for _, s := range steps {
			x = threadStep(s, x, op == "->>")
		}
		return c.compile(x, tail)
	case "some->", "some->>":
		// (let [g x] (if (nil? g) nil (some-> (step g) ...)))
		var build func(x *form, steps []*form) *form
		build = func(x *form, steps []*form) *form {
			if len(steps) == 0 {
				return x
			}
			g := c.gensymName()
			next := threadStep(steps[0], mkSym(g, pos), op == "some->>")
			return mkList(pos, mkSym("let", pos), mkVec(pos, mkSym(g, pos), x),
				mkList(pos, mkSym("if", pos), mkList(pos, mkSym("=", pos), &form{kind: fLit, pos: pos}, mkSym(g, pos)), &form{kind: fLit, pos: pos},
					build(next, steps[1:])))
		}
		return c.compile(build(x, steps), tail)
	case "as->":
		if len(steps) < 1 || steps[0].kind != fSym {
			c.fail(KindAnalysis, pos, "write (as-> x name forms...)", "as-> requires a name")
		}
		name := steps[0]
		bind := []*form{name, x}
		for _, s := range steps[1:] {
			bind = append(bind, name, s)
		}
		return c.compile(mkList(pos, mkSym("let", pos), mkVec(pos, bind...), name), tail)
	default: // cond->, cond->>
		if len(steps)%2 != 0 {
			c.fail(KindAnalysis, pos, "", "%s requires test/form pairs", op)
		}
		g := mkSym(c.gensymName(), pos)
		bind := []*form{g, x}
		for i := 0; i < len(steps); i += 2 {
			step := threadStep(steps[i+1], g, op == "cond->>")
			bind = append(bind, g, mkList(pos, mkSym("if", pos), steps[i], step, g))
		}
		return c.compile(mkList(pos, mkSym("let", pos), mkVec(pos, bind...), g), tail)
	}
}

type forMod struct {
	kind  int // 0 let, 1 when, 2 while
	inits []node
	binds []binder
	test  node
}

type forLevel struct {
	coll node
	bind binder
	mods []forMod
}

func (c *compiler) compileForBindings(f *form, name string) []forLevel {
	if len(f.items) < 2 || f.items[1].kind != fVec {
		c.fail(KindAnalysis, f.pos, fmt.Sprintf("write (%s [x coll] body)", name), "%s requires a binding vector", name)
	}
	b := f.items[1].items
	var levels []forLevel
	for i := 0; i < len(b); i += 2 {
		if i+1 >= len(b) {
			c.fail(KindAnalysis, b[i].pos, "", "%s binding vector requires an even number of forms", name)
		}
		if b[i].kind == fLit {
			kw, ok := b[i].val.(*Keyword)
			if !ok || len(levels) == 0 {
				c.fail(KindAnalysis, b[i].pos, "", "invalid %s binding", name)
			}
			lv := &levels[len(levels)-1]
			switch kw.Name {
			case "let":
				if b[i+1].kind != fVec || len(b[i+1].items)%2 != 0 {
					c.fail(KindAnalysis, b[i+1].pos, "", ":let requires a binding vector")
				}
				m := forMod{kind: 0}
				lb := b[i+1].items
				for j := 0; j < len(lb); j += 2 {
					m.inits = append(m.inits, c.compile(lb[j+1], false))
					m.binds = append(m.binds, c.compilePattern(lb[j]))
				}
				lv.mods = append(lv.mods, m)
			case "when":
				lv.mods = append(lv.mods, forMod{kind: 1, test: c.compile(b[i+1], false)})
			case "while":
				lv.mods = append(lv.mods, forMod{kind: 2, test: c.compile(b[i+1], false)})
			default:
				c.fail(KindAnalysis, b[i].pos, "use :let, :when or :while", "invalid %s modifier :%s", name, kw.Name)
			}
			continue
		}
		coll := c.compile(b[i+1], false)
		levels = append(levels, forLevel{coll: coll, bind: c.compilePattern(b[i])})
	}
	if len(levels) == 0 {
		c.fail(KindAnalysis, f.pos, "", "%s requires at least one binding", name)
	}
	return levels
}

func runFor(fr *frame, levels []forLevel, i int, name string, emit func()) {
	th := fr.th
	lv := &levels[i]
	th.Each(lv.coll(fr), name, 0, func(v Value) bool {
		th.tick()
		lv.bind(fr, v)
		for _, m := range lv.mods {
			switch m.kind {
			case 0:
				for j, in := range m.inits {
					m.binds[j](fr, in(fr))
				}
			case 1:
				if !Truthy(m.test(fr)) {
					return true
				}
			case 2:
				if !Truthy(m.test(fr)) {
					return false
				}
			}
		}
		if i+1 == len(levels) {
			emit()
		} else {
			runFor(fr, levels, i+1, name, emit)
		}
		return true
	})
}

// forParts compiles the bindings and body of a for or doseq. The body is
// a scope of its own: a recur in it cannot target an enclosing loop.
func (c *compiler) forParts(f *form, name string) ([]forLevel, node) {
	saved := len(c.sc.locals)
	savedRecur := c.sc.recur
	c.sc.recur = nil
	levels := c.compileForBindings(f, name)
	body := c.compileBody(f.items[2:], false)
	c.sc.locals = c.sc.locals[:saved]
	c.sc.recur = savedRecur
	return levels, body
}

func sfFor(c *compiler, f *form, _ bool) node {
	levels, body := c.forParts(f, "for")
	return func(fr *frame) Value {
		var out []Value
		runFor(fr, levels, 0, "for", func() {
			fr.th.allocSlots(1)
			out = append(out, body(fr))
		})
		if len(out) == 0 {
			return emptyVector
		}
		return &Vector{slots: out}
	}
}

func sfDoseq(c *compiler, f *form, _ bool) node {
	levels, body := c.forParts(f, "doseq")
	return func(fr *frame) Value {
		runFor(fr, levels, 0, "doseq", func() { body(fr) })
		return nil
	}
}

func sfQuote(c *compiler, f *form, _ bool) node {
	c.argc(f, "quote", 1, 1)
	v, ok := formData(f.items[1], true)
	if !ok {
		c.fail(KindAnalysis, f.items[1].pos, "quote works on data only; use a keyword (:x) or a string (\"x\") instead of a quoted symbol",
			"quoting a symbol is not supported")
	}
	return constNode(v)
}

func sfCall(c *compiler, f *form, _ bool) node {
	c.argc(f, "call", 1, 2)
	if n := f.items[1]; n.kind == fLit {
		name, ok := n.val.(string)
		if !ok {
			c.fail(KindType, n.pos, "", "call: expected a tool name string, got %s", preview(n.val))
		}
		c.checkTool(name, n.pos)
	}
	nameNode := c.compile(f.items[1], false)
	var arg node
	if len(f.items) == 3 {
		arg = c.compile(f.items[2], false)
	}
	pos := f.pos
	return func(fr *frame) Value {
		th := fr.th
		nv := nameNode(fr)
		name, ok := nv.(string)
		if !ok {
			th.pos = pos
			th.TypeError("call", "a tool name string", nv, 1)
		}
		var a Value
		if arg != nil {
			a = arg(fr)
		}
		th.pos = pos
		switch name {
		case "return":
			panic(&signal{ret: true, val: a})
		case "fail":
			panic(&signal{val: a})
		}
		resolved, ok := th.host.resolveTool(name)
		if !ok {
			th.Raise(KindUnknownTool, "%s", th.host.unknownTool(name))
		}
		if arg == nil {
			return th.host.callTool(th, resolved, nil)
		}
		return th.host.callToolArgs(th, resolved, []Value{a})
	}
}

// sfWhere compiles (where field) and (where field op value) to a predicate.
func sfWhere(c *compiler, f *form, _ bool) node {
	n := len(f.items) - 1
	if n != 1 && n != 3 {
		c.fail(KindArity, f.pos, "write (where :field) or (where :field > 10)", "where expects 1 or 3 args, got %d", n)
	}
	field := c.compile(f.items[1], false)
	if n == 1 {
		return func(fr *frame) Value {
			fv := field(fr)
			return &Builtin{Name: "where", MinArgs: 1, MaxArgs: 1, Fn: func(th *Thread, args []Value) Value {
				return Truthy(getPath(args[0], fv))
			}}
		}
	}
	opf := f.items[2]
	var op string
	switch {
	case opf.kind == fSym && opf.ns == "":
		op = opf.name
	case opf.kind == fLit:
		if k, ok := opf.val.(*Keyword); ok {
			op = k.Name
		} else if s, ok := opf.val.(string); ok {
			op = s
		}
	}
	switch op {
	case "=", "not=", ">", "<", ">=", "<=", "includes", "in":
	default:
		c.fail(KindAnalysis, opf.pos, "", "where: unknown operator %s; use one of = not= > < >= <= includes in", formText(opf))
	}
	val := c.compile(f.items[3], false)
	return func(fr *frame) Value {
		fv, want := field(fr), val(fr)
		return &Builtin{Name: "where", MinArgs: 1, MaxArgs: 1, Fn: func(th *Thread, args []Value) Value {
			return whereTest(getPath(args[0], fv), op, want)
		}}
	}
}

func kwAsString(v Value) Value {
	if k, ok := v.(*Keyword); ok {
		return k.Name
	}
	return v
}

func whereTest(got Value, op string, want Value) bool {
	switch op {
	case "=":
		return Equal(kwAsString(got), kwAsString(want))
	case "not=":
		return !Equal(kwAsString(got), kwAsString(want))
	case "in":
		g := kwAsString(got)
		switch c := want.(type) {
		case *Vector:
			for _, it := range c.Items() {
				if Equal(g, kwAsString(it)) {
					return true
				}
			}
		case *Set:
			for _, it := range c.Items() {
				if Equal(g, kwAsString(it)) {
					return true
				}
			}
		}
		return false
	case "includes":
		switch g := got.(type) {
		case string:
			s, ok := kwAsString(want).(string)
			return ok && strings.Contains(g, s)
		case *Vector:
			for _, it := range g.Items() {
				if Equal(kwAsString(it), kwAsString(want)) {
					return true
				}
			}
		case *Set:
			return g.Has(want) || g.Has(kwAsString(want))
		}
		return false
	}
	var c int
	switch got.(type) {
	case int64, float64:
		switch want.(type) {
		case int64, float64:
			if x, ok := got.(float64); ok && x != x {
				return false
			}
			c = numCmp(got, want)
		default:
			return false
		}
	case string:
		w, ok := want.(string)
		if !ok {
			return false
		}
		c = strings.Compare(got.(string), w)
	default:
		return false
	}
	switch op {
	case ">":
		return c > 0
	case "<":
		return c < 0
	case ">=":
		return c >= 0
	}
	return c <= 0
}
