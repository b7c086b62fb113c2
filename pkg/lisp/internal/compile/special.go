package compile

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

type specialFn func(c *Compiler, f *syntax.Form, tail bool) core.Node

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
		return func(*Compiler, *syntax.Form, bool) core.Node { return constNode(nil) }
	case "where":
		return sfWhere
	case "call":
		return sfCall
	}
	return nil
}

func (c *Compiler) argc(f *syntax.Form, name string, min, max int) {
	n := len(f.Items) - 1
	if n < min || (max >= 0 && n > max) {
		var want string
		switch {
		case max < 0:
			want = fmt.Sprintf("%d or more args", min)
		case min == max:
			want = core.ArgsText(min)
		default:
			want = fmt.Sprintf("%d or %d args", min, max)
		}
		c.fail(core.KindArity, f.Pos, "", "%s expects %s, got %d", name, want, n)
	}
}

func sfDo(c *Compiler, f *syntax.Form, tail bool) core.Node { return c.compileBody(f.Items[1:], tail) }

func sfIf(c *Compiler, f *syntax.Form, tail bool) core.Node {
	test, then, els := c.ifParts(f, "if", tail)
	return ifNode(test, then, els)
}

// ifParts compiles the test and branches of (name test then else?); a
// missing else is nil.
func (c *Compiler) ifParts(f *syntax.Form, name string, tail bool) (test, then, els core.Node) {
	c.argc(f, name, 2, 3)
	test = c.compile(f.Items[1], false)
	then = c.compile(f.Items[2], tail)
	els = constNode(nil)
	if len(f.Items) == 4 {
		els = c.compile(f.Items[3], tail)
	}
	return test, then, els
}

func ifNode(test, then, els core.Node) core.Node {
	return func(fr *core.Frame) core.Value {
		if core.Truthy(test(fr)) {
			return then(fr)
		}
		return els(fr)
	}
}

func sfIfNot(c *Compiler, f *syntax.Form, tail bool) core.Node {
	test, then, els := c.ifParts(f, "if-not", tail)
	return ifNode(test, els, then)
}

func sfWhen(c *Compiler, f *syntax.Form, tail bool) core.Node {
	c.argc(f, "when", 1, -1)
	return ifNode(c.compile(f.Items[1], false), c.compileBody(f.Items[2:], tail), constNode(nil))
}

func sfWhenNot(c *Compiler, f *syntax.Form, tail bool) core.Node {
	c.argc(f, "when-not", 1, -1)
	return ifNode(c.compile(f.Items[1], false), constNode(nil), c.compileBody(f.Items[2:], tail))
}

func sfCond(c *Compiler, f *syntax.Form, tail bool) core.Node {
	cl := f.Items[1:]
	if len(cl)%2 != 0 {
		c.fail(core.KindAnalysis, f.Pos, "cond takes test/expression pairs; use :else for the default", "cond requires an even number of forms")
	}
	tests := make([]core.Node, 0, len(cl)/2)
	exprs := make([]core.Node, 0, len(cl)/2)
	for i := 0; i < len(cl); i += 2 {
		tests = append(tests, c.compile(cl[i], false))
		exprs = append(exprs, c.compile(cl[i+1], tail))
	}
	return func(fr *core.Frame) core.Value {
		for i, t := range tests {
			if core.Truthy(t(fr)) {
				return exprs[i](fr)
			}
		}
		return nil
	}
}

func sfCase(c *Compiler, f *syntax.Form, tail bool) core.Node {
	c.argc(f, "case", 1, -1)
	expr := c.compile(f.Items[1], false)
	cl := f.Items[2:]
	var dflt core.Node
	if len(cl)%2 == 1 {
		dflt = c.compile(cl[len(cl)-1], tail)
		cl = cl[:len(cl)-1]
	}
	type clause struct {
		consts []core.Value
		body   core.Node
	}
	var clauses []clause
	var seen []core.Value
	add := func(consts []core.Value, f *syntax.Form) []core.Value {
		k := c.caseConst(f)
		for _, s := range seen {
			if core.Equal(s, k) {
				c.fail(core.KindAnalysis, f.Pos, "", "case: duplicate test constant: %s", core.ErrorPreview(k))
			}
		}
		seen = append(seen, k)
		return append(consts, k)
	}
	for i := 0; i < len(cl); i += 2 {
		var consts []core.Value
		t := cl[i]
		if t.Kind == syntax.FList {
			for _, it := range t.Items {
				consts = add(consts, it)
			}
		} else {
			consts = add(consts, t)
		}
		clauses = append(clauses, clause{consts, c.compile(cl[i+1], tail)})
	}
	pos := f.Pos
	return func(fr *core.Frame) core.Value {
		v := expr(fr)
		for _, cl := range clauses {
			for _, k := range cl.consts {
				if core.Equal(k, v) {
					return cl.body(fr)
				}
			}
		}
		if dflt != nil {
			return dflt(fr)
		}
		panic(&core.Error{Kind: core.KindValue, Pos: pos, Msg: "case: no matching clause: " + core.ErrorPreview(v), Hint: "add a default expression as the last form of case"})
	}
}

func (c *Compiler) caseConst(f *syntax.Form) core.Value {
	if f.Kind == syntax.FSym {
		return f.SymText()
	}
	v, ok := formData(f, true)
	if !ok {
		c.fail(core.KindAnalysis, f.Pos, "", "case test must be a constant")
	}
	return v
}

func sfCondp(c *Compiler, f *syntax.Form, tail bool) core.Node {
	c.argc(f, "condp", 2, -1)
	pred := c.compile(f.Items[1], false)
	expr := c.compile(f.Items[2], false)
	cl := f.Items[3:]
	var dflt core.Node
	var tests, bodies []core.Node
	var arrow []bool // clause i is "test :>> result-fn"
	for i := 0; i < len(cl); {
		if i == len(cl)-1 { // a lone last form is the default
			dflt = c.compile(cl[i], tail)
			break
		}
		tests = append(tests, c.compile(cl[i], false))
		if k, ok := cl[i+1].Val.(*core.Keyword); ok && cl[i+1].Kind == syntax.FLit && k.Name == ">>" {
			if i+2 >= len(cl) {
				c.fail(core.KindAnalysis, cl[i+1].Pos, "", "condp: :>> needs a function after it")
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
	pos := f.Pos
	return func(fr *core.Frame) core.Value {
		p := pred(fr)
		v := expr(fr)
		for i, t := range tests {
			if r := fr.Th.Call2(p, t(fr), v); core.Truthy(r) {
				if arrow[i] {
					return fr.Th.Call1(bodies[i](fr), r)
				}
				return bodies[i](fr)
			}
		}
		if dflt != nil {
			return dflt(fr)
		}
		panic(&core.Error{Kind: core.KindValue, Pos: pos, Msg: "condp: no matching clause: " + core.ErrorPreview(v)})
	}
}

func (c *Compiler) condBind(f *syntax.Form, name string, tail bool, test func(core.Value) bool, oneArm bool) core.Node {
	b := c.bindingPairs(f, name)
	if len(b) != 2 {
		c.fail(core.KindAnalysis, f.Items[1].Pos, "", "%s requires exactly one binding", name)
	}
	init := c.compile(b[1], false)
	saved := len(c.sc.locals)
	bind := c.compilePattern(b[0])
	var then core.Node
	els := constNode(nil)
	if oneArm {
		then = c.compileBody(f.Items[2:], tail)
	} else {
		if len(f.Items) < 3 || len(f.Items) > 4 {
			c.fail(core.KindArity, f.Pos, "", "%s expects 2 or 3 args, got %d", name, len(f.Items)-1)
		}
		then = c.compile(f.Items[2], tail)
	}
	c.sc.locals = c.sc.locals[:saved]
	if !oneArm && len(f.Items) == 4 {
		els = c.compile(f.Items[3], tail)
	}
	return func(fr *core.Frame) core.Value {
		v := init(fr)
		if test(v) {
			bind(fr, v)
			return then(fr)
		}
		return els(fr)
	}
}

func notNil(v core.Value) bool { return v != nil }

func sfIfLet(c *Compiler, f *syntax.Form, tail bool) core.Node {
	return c.condBind(f, "if-let", tail, core.Truthy, false)
}
func sfWhenLet(c *Compiler, f *syntax.Form, tail bool) core.Node {
	return c.condBind(f, "when-let", tail, core.Truthy, true)
}
func sfIfSome(c *Compiler, f *syntax.Form, tail bool) core.Node {
	return c.condBind(f, "if-some", tail, notNil, false)
}
func sfWhenSome(c *Compiler, f *syntax.Form, tail bool) core.Node {
	return c.condBind(f, "when-some", tail, notNil, true)
}

func sfWhenFirst(c *Compiler, f *syntax.Form, tail bool) core.Node {
	b := c.bindingPairs(f, "when-first")
	if len(b) != 2 {
		c.fail(core.KindAnalysis, f.Items[1].Pos, "", "when-first requires exactly one binding")
	}
	coll := c.compile(b[1], false)
	saved := len(c.sc.locals)
	bind := c.compilePattern(b[0])
	body := c.compileBody(f.Items[2:], tail)
	c.sc.locals = c.sc.locals[:saved]
	return func(fr *core.Frame) core.Value {
		var first core.Value
		found := false
		fr.Th.Each(coll(fr), "when-first", 0, func(v core.Value) bool {
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

func sfLet(c *Compiler, f *syntax.Form, tail bool) core.Node {
	b := c.bindingPairs(f, "let")
	saved := len(c.sc.locals)
	inits := make([]core.Node, 0, len(b)/2)
	binds := make([]core.Binder, 0, len(b)/2)
	for i := 0; i < len(b); i += 2 {
		inits = append(inits, c.compile(b[i+1], false))
		binds = append(binds, c.compilePattern(b[i]))
	}
	body := c.compileBody(f.Items[2:], tail)
	c.sc.locals = c.sc.locals[:saved]
	if len(inits) == 1 {
		i0, b0 := inits[0], binds[0]
		return func(fr *core.Frame) core.Value {
			b0(fr, i0(fr))
			return body(fr)
		}
	}
	return func(fr *core.Frame) core.Value {
		for i, in := range inits {
			binds[i](fr, in(fr))
		}
		return body(fr)
	}
}

// fnSpec is one arity as written: params vector and body.
type fnSpec struct {
	params *syntax.Form
	body   []*syntax.Form
}

func (c *Compiler) parseFn(f *syntax.Form, name string, rest []*syntax.Form) []fnSpec {
	if len(rest) == 0 {
		c.fail(core.KindAnalysis, f.Pos, "write (fn [x] body)", "fn requires a parameter vector")
	}
	if rest[0].Kind == syntax.FVec {
		return []fnSpec{{rest[0], rest[1:]}}
	}
	var specs []fnSpec
	for _, r := range rest {
		if r.Kind != syntax.FList || len(r.Items) == 0 || r.Items[0].Kind != syntax.FVec {
			c.fail(core.KindAnalysis, r.Pos, "write (fn [x] body) or (fn ([x] body) ([x y] body))", "fn requires a parameter vector")
		}
		specs = append(specs, fnSpec{r.Items[0], r.Items[1:]})
	}
	return specs
}

func sfFn(c *Compiler, f *syntax.Form, _ bool) core.Node {
	rest := f.Items[1:]
	name := ""
	var self localKey
	if len(rest) > 0 && rest[0].Kind == syntax.FSym && rest[0].Ns == "" {
		name = rest[0].Name
		self = localKey{name, bindingOf(rest[0]).id}
		rest = rest[1:]
	}
	return c.compileFn(f, name, self, c.parseFn(f, name, rest))
}

// compileFn compiles a function; self (its name "": none) binds the fn
// itself.
func (c *Compiler) compileFn(f *syntax.Form, name string, self localKey, specs []fnSpec) core.Node {
	outer := c.sc
	sc := &scope{parent: outer, self: self}
	c.sc = sc
	proto := &core.FnProto{Name: name}
	seen := map[int]bool{}
	hasVariadic := false
	for si, spec := range specs {
		sc.locals = sc.locals[:0]
		sc.nslots = 0
		ar := &core.Arity{}
		ps := spec.params.Items
		var fixed []*syntax.Form
		var restPat *syntax.Form
		for i := 0; i < len(ps); i++ {
			if ps[i].IsSym("&") {
				if i+2 != len(ps) {
					c.fail(core.KindAnalysis, ps[i].Pos, "", "& must be followed by exactly one parameter")
				}
				restPat = ps[i+1]
				break
			}
			fixed = append(fixed, ps[i])
		}
		ar.Nfixed = len(fixed)
		ar.Variadic = restPat != nil
		if ar.Variadic {
			if hasVariadic {
				c.fail(core.KindAnalysis, spec.params.Pos, "", "fn can have only one variadic arity")
			}
			hasVariadic = true
		} else {
			if seen[ar.Nfixed] {
				c.fail(core.KindAnalysis, spec.params.Pos, "", "fn has two arities with %d params", ar.Nfixed)
			}
			seen[ar.Nfixed] = true
		}
		simple := true
		all := fixed
		if restPat != nil {
			all = append(append([]*syntax.Form{}, fixed...), restPat)
		}
		for _, p := range all {
			if p.Kind != syntax.FSym || p.Ns != "" {
				simple = false
			}
		}
		if si == 0 {
			for _, p := range spec.params.Items {
				proto.ParamNames = append(proto.ParamNames, FormText(p))
			}
		}
		for _, p := range fixed {
			ar.Params = append(ar.Params, c.compilePattern(p))
		}
		if restPat != nil {
			ar.Params = append(ar.Params, c.restPattern(restPat))
		}
		ar.Simple = simple
		n := ar.Nfixed
		if ar.Variadic {
			n++
		}
		sc.recur = &recurTarget{n: n}
		ar.Body = c.compileFnBody(spec.body)
		ar.Nslots = sc.nslots
		proto.Arities = append(proto.Arities, ar)
	}
	// fixed arities first, by count; the variadic one last.
	for i := 1; i < len(proto.Arities); i++ {
		for j := i; j > 0; j-- {
			a, b := proto.Arities[j-1], proto.Arities[j]
			if a.Variadic || (!b.Variadic && b.Nfixed < a.Nfixed) {
				proto.Arities[j-1], proto.Arities[j] = b, a
			}
		}
	}
	c.sc = outer
	c.lastProto = proto
	proto.CapRefs = sc.capRefs
	for _, ar := range proto.Arities {
		if ar.Simple && !ar.Variadic && ar.Nfixed < len(proto.Direct) {
			proto.Direct[ar.Nfixed] = ar
		}
	}
	if len(proto.CapRefs) == 0 {
		clo := &core.Closure{Proto: proto}
		return constNode(clo)
	}
	return func(fr *core.Frame) core.Value { return makeClosure(fr, proto) }
}

// compileFnBody compiles the body of a fn arity. A leading map with :pre
// or :post (when more forms follow) holds conditions, as in Clojure:
// each :pre form must be truthy before the body runs, each :post form
// after it, with % bound to the result; a falsy one is an "Assert
// failed" error naming the condition.
func (c *Compiler) compileFnBody(body []*syntax.Form) core.Node {
	if len(body) < 2 || body[0].Kind != syntax.FMap {
		return c.compileBody(body, true)
	}
	var pre, post []*syntax.Form
	for i := 0; i+1 < len(body[0].Items); i += 2 {
		k, v := body[0].Items[i], body[0].Items[i+1]
		kw, ok := k.Val.(*core.Keyword)
		if k.Kind != syntax.FLit || !ok || (kw.Name != "pre" && kw.Name != "post") {
			continue
		}
		if v.Kind != syntax.FVec {
			c.fail(core.KindAnalysis, v.Pos, "", ":%s must be followed by a vector of conditions", kw.Name)
		}
		if kw.Name == "pre" {
			pre = v.Items
		} else {
			post = v.Items
		}
	}
	if pre == nil && post == nil {
		return c.compileBody(body, true)
	}
	type cond struct {
		test core.Node
		text string
		pos  core.Pos
	}
	conds := func(fs []*syntax.Form) []cond {
		out := make([]cond, len(fs))
		for i, f := range fs {
			out[i] = cond{c.compile(f, false), FormText(f), f.Pos}
		}
		return out
	}
	check := func(fr *core.Frame, cs []cond) {
		for _, cd := range cs {
			if !core.Truthy(cd.test(fr)) {
				panic(&core.Error{Kind: core.KindValue, Pos: cd.pos, Msg: "Assert failed: " + cd.text})
			}
		}
	}
	pres := conds(pre)
	if post == nil {
		rest := c.compileBody(body[1:], true)
		return func(fr *core.Frame) core.Value {
			check(fr, pres)
			return rest(fr)
		}
	}
	rest := c.compileBody(body[1:], false)
	slot := c.sc.declareAs("%", implicitBinder(body[0]))
	posts := conds(post)
	return func(fr *core.Frame) core.Value {
		check(fr, pres)
		v := rest(fr)
		fr.Slots[slot] = v
		check(fr, posts)
		return v
	}
}

func makeClosure(fr *core.Frame, proto *core.FnProto) *core.Closure {
	caps := make([]core.Value, len(proto.CapRefs))
	fillCaps(fr, proto, caps)
	return &core.Closure{Proto: proto, Caps: caps}
}

func fillCaps(fr *core.Frame, proto *core.FnProto, caps []core.Value) {
	for i, r := range proto.CapRefs {
		switch r.Kind {
		case refLocal:
			caps[i] = fr.Slots[r.Idx]
		case refCap:
			caps[i] = fr.Caps[r.Idx]
		default:
			caps[i] = fr.Self
		}
	}
}

func sfLetfn(c *Compiler, f *syntax.Form, tail bool) core.Node {
	if len(f.Items) < 2 || f.Items[1].Kind != syntax.FVec {
		c.fail(core.KindAnalysis, f.Pos, "write (letfn [(f [x] body)] expr)", "letfn requires a vector of function specs")
	}
	saved := len(c.sc.locals)
	specs := f.Items[1].Items
	slots := make([]int, len(specs))
	for i, s := range specs {
		if s.Kind != syntax.FList || len(s.Items) < 2 || s.Items[0].Kind != syntax.FSym {
			c.fail(core.KindAnalysis, s.Pos, "write (letfn [(f [x] body)] expr)", "letfn function spec must be (name [params] body)")
		}
		slots[i] = c.sc.declareSym(s.Items[0])
	}
	makers := make([]core.Node, len(specs))
	for i, s := range specs {
		name := s.Items[0].Name
		makers[i] = c.compileFn(s, name, localKey{}, c.parseFn(s, name, s.Items[1:]))
	}
	body := c.compileBody(f.Items[2:], tail)
	c.sc.locals = c.sc.locals[:saved]
	return func(fr *core.Frame) core.Value {
		for i, m := range makers {
			fr.Slots[slots[i]] = m(fr)
		}
		for _, s := range slots {
			if clo, ok := fr.Slots[s].(*core.Closure); ok && len(clo.Caps) > 0 {
				fillCaps(fr, clo.Proto, clo.Caps)
			}
		}
		return body(fr)
	}
}

func (c *Compiler) defName(f *syntax.Form, what string) string {
	if len(f.Items) < 2 || f.Items[1].Kind != syntax.FSym || f.Items[1].Ns != "" {
		c.fail(core.KindAnalysis, f.Pos, fmt.Sprintf("write (%s name ...)", what), "%s requires a name", what)
	}
	name := f.Items[1].Name
	if _, ok := c.Builtins[name]; ok || IsSpecialForm(name) {
		c.fail(core.KindRedefine, f.Items[1].Pos, "choose another name", "cannot redefine builtin '%s'", name)
	}
	return name
}

func sfDef(c *Compiler, f *syntax.Form, _ bool) core.Node {
	name := c.defName(f, "def")
	rest := f.Items[2:]
	if len(rest) == 2 && rest[0].Kind == syntax.FLit {
		if _, ok := rest[0].Val.(string); ok {
			rest = rest[1:]
		}
	}
	if len(rest) > 1 {
		c.fail(core.KindArity, f.Pos, "", "def expects a name and a value, got %d forms", len(f.Items)-1)
	}
	init := constNode(nil)
	if len(rest) == 1 {
		init = c.compile(rest[0], false)
	}
	v := &core.Var{Name: name}
	return func(fr *core.Frame) core.Value {
		val := init(fr)
		fr.Th.SetMem(name, val)
		return v
	}
}

func sfDefonce(c *Compiler, f *syntax.Form, _ bool) core.Node {
	name := c.defName(f, "defonce")
	c.argc(f, "defonce", 2, 2)
	init := c.compile(f.Items[2], false)
	v := &core.Var{Name: name}
	return func(fr *core.Frame) core.Value {
		if _, ok := fr.Th.Mem[name]; !ok {
			fr.Th.SetMem(name, init(fr))
		}
		return v
	}
}

func sfDefn(c *Compiler, f *syntax.Form, _ bool) core.Node {
	name := c.defName(f, "defn")
	rest := f.Items[2:]
	if len(rest) > 0 && rest[0].Kind == syntax.FLit {
		if _, ok := rest[0].Val.(string); ok {
			rest = rest[1:]
		}
	}
	if len(rest) > 0 && rest[0].Kind == syntax.FMap {
		rest = rest[1:]
	}
	mk := c.compileFn(f, name, localKey{name, implicitBinder(f)}, c.parseFn(f, name, rest))
	v := &core.Var{Name: name}
	return func(fr *core.Frame) core.Value {
		fr.Th.SetMem(name, mk(fr))
		return v
	}
}

func sfAnd(c *Compiler, f *syntax.Form, tail bool) core.Node {
	return shortCircuit(c, f, tail, false, true)
}

// sfOr: a bare unqualified symbol in an or that names nothing is nil
// (compileSym's inOr), so (or x default) works before x is defined.
func sfOr(c *Compiler, f *syntax.Form, tail bool) core.Node {
	return shortCircuit(c, f, tail, true, nil)
}

// shortCircuit compiles and (stopOn false) and or (stopOn true): the
// first part whose truthiness is stopOn is the value, else the last part;
// with no parts, empty.
func shortCircuit(c *Compiler, f *syntax.Form, tail, stopOn bool, empty core.Value) core.Node {
	if len(f.Items) == 1 {
		return constNode(empty)
	}
	parts := make([]core.Node, len(f.Items)-1)
	for i, it := range f.Items[1:] {
		if stopOn && it.Kind == syntax.FSym && it.Ns == "" {
			parts[i] = c.compileSym(it, true)
			continue
		}
		parts[i] = c.compile(it, tail && i == len(f.Items)-2)
	}
	return func(fr *core.Frame) core.Value {
		var v core.Value
		for _, p := range parts {
			v = p(fr)
			if core.Truthy(v) == stopOn {
				return v
			}
		}
		return v
	}
}

// gensym returns a local the compiler makes for an expansion: a name no
// program can write, with a binder number of its own (madeBinder). The
// one symbol is its binding occurrence and every use of it.
func (c *Compiler) gensym(pos core.Pos) *syntax.Form {
	c.gensymN++
	return c.madeBinder(" g"+strconv.Itoa(c.gensymN), pos)
}

func sfThread(c *Compiler, f *syntax.Form, tail bool) core.Node {
	op := f.Items[0].Name
	c.argc(f, op, 1, -1)
	x := f.Items[1]
	steps := f.Items[2:]
	pos := f.Pos
	switch op {
	case "->", "->>":
		for _, s := range steps {
			x = threadStep(s, x, op == "->>")
		}
		return c.compile(x, tail)
	case "some->", "some->>":
		// (let [g x] (if (nil? g) nil (some-> (step g) ...)))
		var build func(x *syntax.Form, steps []*syntax.Form) *syntax.Form
		build = func(x *syntax.Form, steps []*syntax.Form) *syntax.Form {
			if len(steps) == 0 {
				return x
			}
			g := c.gensym(pos)
			next := threadStep(steps[0], g, op == "some->>")
			return mkList(pos, mkSpecial("let", pos), mkVec(pos, g, x),
				mkList(pos, mkSpecial("if", pos), mkList(pos, mkBuiltin("=", pos), &syntax.Form{Kind: syntax.FLit, Pos: pos}, g), &syntax.Form{Kind: syntax.FLit, Pos: pos},
					build(next, steps[1:])))
		}
		return c.compile(build(x, steps), tail)
	case "as->":
		if len(steps) < 1 || steps[0].Kind != syntax.FSym {
			c.fail(core.KindAnalysis, pos, "write (as-> x name forms...)", "as-> requires a name")
		}
		name := steps[0]
		bind := []*syntax.Form{name, x}
		for _, s := range steps[1:] {
			bind = append(bind, name, s)
		}
		return c.compile(mkList(pos, mkSpecial("let", pos), mkVec(pos, bind...), name), tail)
	default: // cond->, cond->>
		if len(steps)%2 != 0 {
			c.fail(core.KindAnalysis, pos, "", "%s requires test/form pairs", op)
		}
		g := c.gensym(pos)
		bind := []*syntax.Form{g, x}
		for i := 0; i < len(steps); i += 2 {
			step := threadStep(steps[i+1], g, op == "cond->>")
			bind = append(bind, g, mkList(pos, mkSpecial("if", pos), steps[i], step, g))
		}
		return c.compile(mkList(pos, mkSpecial("let", pos), mkVec(pos, bind...), g), tail)
	}
}

type forMod struct {
	kind  int // 0 let, 1 when, 2 while
	inits []core.Node
	binds []core.Binder
	test  core.Node
}

type forLevel struct {
	coll core.Node
	bind core.Binder
	mods []forMod
}

func (c *Compiler) compileForBindings(f *syntax.Form, name string) []forLevel {
	if len(f.Items) < 2 || f.Items[1].Kind != syntax.FVec {
		c.fail(core.KindAnalysis, f.Pos, fmt.Sprintf("write (%s [x coll] body)", name), "%s requires a binding vector", name)
	}
	b := f.Items[1].Items
	var levels []forLevel
	for i := 0; i < len(b); i += 2 {
		if i+1 >= len(b) {
			c.fail(core.KindAnalysis, b[i].Pos, "", "%s binding vector requires an even number of forms", name)
		}
		if b[i].Kind == syntax.FLit {
			kw, ok := b[i].Val.(*core.Keyword)
			if !ok || len(levels) == 0 {
				c.fail(core.KindAnalysis, b[i].Pos, "", "invalid %s binding", name)
			}
			lv := &levels[len(levels)-1]
			switch kw.Name {
			case "let":
				if b[i+1].Kind != syntax.FVec || len(b[i+1].Items)%2 != 0 {
					c.fail(core.KindAnalysis, b[i+1].Pos, "", ":let requires a binding vector")
				}
				m := forMod{kind: 0}
				lb := b[i+1].Items
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
				c.fail(core.KindAnalysis, b[i].Pos, "use :let, :when or :while", "invalid %s modifier :%s", name, kw.Name)
			}
			continue
		}
		coll := c.compile(b[i+1], false)
		levels = append(levels, forLevel{coll: coll, bind: c.compilePattern(b[i])})
	}
	if len(levels) == 0 {
		c.fail(core.KindAnalysis, f.Pos, "", "%s requires at least one binding", name)
	}
	return levels
}

func runFor(fr *core.Frame, levels []forLevel, i int, name string, emit func()) {
	th := fr.Th
	lv := &levels[i]
	th.Each(lv.coll(fr), name, 0, func(v core.Value) bool {
		th.Tick()
		lv.bind(fr, v)
		for _, m := range lv.mods {
			switch m.kind {
			case 0:
				for j, in := range m.inits {
					m.binds[j](fr, in(fr))
				}
			case 1:
				if !core.Truthy(m.test(fr)) {
					return true
				}
			case 2:
				if !core.Truthy(m.test(fr)) {
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
func (c *Compiler) forParts(f *syntax.Form, name string) ([]forLevel, core.Node) {
	saved := len(c.sc.locals)
	savedRecur := c.sc.recur
	c.sc.recur = nil
	levels := c.compileForBindings(f, name)
	body := c.compileBody(f.Items[2:], false)
	c.sc.locals = c.sc.locals[:saved]
	c.sc.recur = savedRecur
	return levels, body
}

func sfFor(c *Compiler, f *syntax.Form, _ bool) core.Node {
	levels, body := c.forParts(f, "for")
	return func(fr *core.Frame) core.Value {
		var out []core.Value
		runFor(fr, levels, 0, "for", func() {
			fr.Th.AllocSlots(1)
			out = append(out, body(fr))
		})
		if len(out) == 0 {
			return core.EmptyVector
		}
		return &core.Vector{Slots: out}
	}
}

func sfDoseq(c *Compiler, f *syntax.Form, _ bool) core.Node {
	levels, body := c.forParts(f, "doseq")
	return func(fr *core.Frame) core.Value {
		runFor(fr, levels, 0, "doseq", func() { body(fr) })
		return nil
	}
}

func sfQuote(c *Compiler, f *syntax.Form, _ bool) core.Node {
	c.argc(f, "quote", 1, 1)
	v, ok := formData(f.Items[1], true)
	if !ok {
		c.fail(core.KindAnalysis, f.Items[1].Pos, "quote works on data only; use a keyword (:x) or a string (\"x\") instead of a quoted symbol",
			"quoting a symbol is not supported")
	}
	return constNode(v)
}

func sfCall(c *Compiler, f *syntax.Form, _ bool) core.Node {
	c.argc(f, "call", 1, 2)
	if n := f.Items[1]; n.Kind == syntax.FLit {
		name, ok := n.Val.(string)
		if !ok {
			c.fail(core.KindType, n.Pos, "", "call: expected a tool name string, got %s", core.ErrorPreview(n.Val))
		}
		c.checkTool(name, n.Pos)
	}
	nameNode := c.compile(f.Items[1], false)
	var arg core.Node
	if len(f.Items) == 3 {
		arg = c.compile(f.Items[2], false)
	}
	pos := f.Pos
	return func(fr *core.Frame) core.Value {
		th := fr.Th
		nv := nameNode(fr)
		name, ok := nv.(string)
		if !ok {
			th.CallPos = pos
			th.TypeError("call", "a tool name string", nv, 1)
		}
		var a core.Value
		if arg != nil {
			a = arg(fr)
		}
		th.CallPos = pos
		switch name {
		case "return":
			panic(&core.ReturnSignal{Ret: true, Val: a})
		case "fail":
			panic(&core.ReturnSignal{Val: a})
		}
		resolved, ok := th.Host.ResolveTool(name)
		if !ok {
			th.Raise(core.KindUnknownTool, "%s", th.Host.UnknownTool(name))
		}
		if arg == nil {
			return th.Host.CallTool(th, resolved, nil)
		}
		return th.Host.CallToolArgs(th, resolved, []core.Value{a})
	}
}

// sfWhere compiles (where field) and (where field op value) to a predicate.
func sfWhere(c *Compiler, f *syntax.Form, _ bool) core.Node {
	n := len(f.Items) - 1
	if n != 1 && n != 3 {
		c.fail(core.KindArity, f.Pos, "write (where :field) or (where :field > 10)", "where expects 1 or 3 args, got %d", n)
	}
	field := c.compile(f.Items[1], false)
	if n == 1 {
		return func(fr *core.Frame) core.Value {
			fv := field(fr)
			return &core.Builtin{Name: "where", MinArgs: 1, MaxArgs: 1, Fn: func(th *core.Thread, args []core.Value) core.Value {
				return core.Truthy(core.GetPath(args[0], fv))
			}}
		}
	}
	opf := f.Items[2]
	var op string
	switch {
	case opf.Kind == syntax.FSym && opf.Ns == "":
		op = opf.Name
	case opf.Kind == syntax.FLit:
		if k, ok := opf.Val.(*core.Keyword); ok {
			op = k.Name
		} else if s, ok := opf.Val.(string); ok {
			op = s
		}
	}
	switch op {
	case "=", "not=", ">", "<", ">=", "<=", "includes", "in":
	default:
		c.fail(core.KindAnalysis, opf.Pos, "", "where: unknown operator %s; use one of = not= > < >= <= includes in", FormText(opf))
	}
	val := c.compile(f.Items[3], false)
	return func(fr *core.Frame) core.Value {
		fv, want := field(fr), val(fr)
		return &core.Builtin{Name: "where", MinArgs: 1, MaxArgs: 1, Fn: func(th *core.Thread, args []core.Value) core.Value {
			return whereTest(core.GetPath(args[0], fv), op, want)
		}}
	}
}

func kwAsString(v core.Value) core.Value {
	if k, ok := v.(*core.Keyword); ok {
		return k.Name
	}
	return v
}

func whereTest(got core.Value, op string, want core.Value) bool {
	switch op {
	case "=":
		return core.Equal(kwAsString(got), kwAsString(want))
	case "not=":
		return !core.Equal(kwAsString(got), kwAsString(want))
	case "in":
		g := kwAsString(got)
		switch c := want.(type) {
		case *core.Vector:
			for _, it := range c.Items() {
				if core.Equal(g, kwAsString(it)) {
					return true
				}
			}
		case *core.Set:
			for _, it := range c.Items() {
				if core.Equal(g, kwAsString(it)) {
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
		case *core.Vector:
			for _, it := range g.Items() {
				if core.Equal(kwAsString(it), kwAsString(want)) {
					return true
				}
			}
		case *core.Set:
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
			c = core.NumCmp(got, want)
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

// compileFnLit compiles #(...).
func (c *Compiler) compileFnLit(f *syntax.Form) core.Node {
	fn := FnLitAsFn(f)
	return c.compileFn(f, "", localKey{}, []fnSpec{{params: fn.Items[1], body: fn.Items[2:]}})
}

// FnLitAsFn returns the (fn [%1 %2 ...] body) form that #(...) stands
// for. Its parameters are the binding occurrences the resolver gave #(...)
// (percentNames: %& first, then %1 ...), % is %1.
func FnLitAsFn(f *syntax.Form) *syntax.Form {
	info := &fnLitInfo{}
	scanPercent(f.Items, info)
	base := implicitBinder(f)
	param := func(name string, i int) *syntax.Form {
		p := mkSym(name, f.Pos)
		if base != 0 {
			p.Res = mkRes(resBinder, base+uint32(i))
		}
		return p
	}
	params := make([]*syntax.Form, 0, info.maxN+2)
	for i := 1; i <= info.maxN; i++ {
		params = append(params, param("%"+fmt.Sprint(i), i))
	}
	if info.rest {
		params = append(params, mkSym("&", f.Pos), param("%&", 0))
	}
	var body *syntax.Form
	if len(f.Items) == 1 && f.Items[0].Kind != syntax.FSym && f.Items[0].Kind != syntax.FList {
		body = f.Items[0]
	} else {
		body = &syntax.Form{Kind: syntax.FList, Pos: f.Pos, Items: f.Items}
	}
	body = renamePercent(body)
	return &syntax.Form{Kind: syntax.FList, Pos: f.Pos, Items: []*syntax.Form{mkSpecial("fn", f.Pos), mkVec(f.Pos, params...), body}}
}

func scanPercent(fs []*syntax.Form, info *fnLitInfo) {
	for _, f := range fs {
		if f.Kind == syntax.FSym && f.Ns == "" && len(f.Name) > 0 && f.Name[0] == '%' {
			switch {
			case f.Name == "%":
				info.maxN = max(info.maxN, 1)
			case f.Name == "%&":
				info.rest = true
			default:
				var n int
				if _, err := fmt.Sscanf(f.Name[1:], "%d", &n); err == nil && n > 0 && n <= 20 {
					info.maxN = max(info.maxN, n)
				}
			}
		}
		scanPercent(f.Items, info)
	}
}

func renamePercent(f *syntax.Form) *syntax.Form {
	if f.Kind == syntax.FSym && f.Ns == "" && f.Name == "%" {
		s := mkSym("%1", f.Pos)
		s.Res = f.Res // the same binding: % is %1
		return s
	}
	if len(f.Items) == 0 {
		return f
	}
	cp := *f
	cp.Items = make([]*syntax.Form, len(f.Items))
	for i, it := range f.Items {
		cp.Items[i] = renamePercent(it)
	}
	return &cp
}
