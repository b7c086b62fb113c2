package compile

import (
	"fmt"
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// compileProgram compiles top-level forms as one do block.
func (c *Compiler) compileProgram(forms []*syntax.Form) (body core.Node, nslots int) {
	c.top = scope{}
	c.sc = &c.top
	c.collectDefs(forms)
	if len(forms) == 1 {
		c.Resolve(forms[0])
		return c.compile(forms[0], false), c.sc.nslots
	}
	nodes := make([]core.Node, len(forms))
	for i, f := range forms {
		c.Resolve(f)
		nodes[i] = c.compile(f, false)
	}
	if len(nodes) < 2 {
		return seqNode(nodes), c.sc.nslots
	}
	// a top-level form's value is dropped unless it is the last: what it
	// charged and did not keep (def, prints) is given back (retain.go)
	return func(fr *core.Frame) core.Value {
		th := fr.Th
		last := len(nodes) - 1
		for _, n := range nodes[:last] {
			mark := th.Alloc
			n(fr)
			th.Credit(mark, nil)
		}
		return nodes[last](fr)
	}, c.sc.nslots
}

// collectDefs records names def'd anywhere in the program: they count as
// bound for the static check.
func (c *Compiler) collectDefs(forms []*syntax.Form) {
	for _, f := range forms {
		if f == nil {
			continue
		}
		if f.Kind == syntax.FList && len(f.Items) >= 2 && f.Items[0].Kind == syntax.FSym && f.Items[0].Ns == "" {
			switch f.Items[0].Name {
			case "def", "defn", "defn-", "defonce":
				if f.Items[1].Kind == syntax.FSym && f.Items[1].Ns == "" {
					if c.MemNames == nil {
						c.MemNames = map[string]bool{}
					}
					c.MemNames[f.Items[1].Name] = true
				}
			}
		}
		c.collectDefs(f.Items)
	}
}

// compileForm compiles one form by its kind, a list by its head: a special
// form, a tool call, a builtin call (with the passes that take its shape),
// a keyword lookup or a call of a function value. It is the compiler's
// dispatch (Compiler.compile), above every special form and pass.
func (c *Compiler) compileForm(f *syntax.Form, tail bool) core.Node {
	if c.CheckResolve {
		c.checkResolved(f)
	}
	switch f.Kind {
	case syntax.FLit:
		return constNode(f.Val)
	case syntax.FSym:
		return c.compileSym(f, false)
	case syntax.FVec:
		return c.compileVec(f)
	case syntax.FMap:
		return c.compileMap(f)
	case syntax.FSet:
		return c.compileSet(f)
	case syntax.FRegex:
		re, err := core.CompileRegex(f.Val.(string))
		if err != nil {
			c.fail(core.KindRegex, f.Pos, "", "%s", err.Error())
		}
		return constNode(re)
	case syntax.FFnLit:
		return c.compileFnLit(f)
	case syntax.FList:
		return c.compileList(f, tail)
	}
	c.fail(core.KindInternal, f.Pos, "", "unknown form")
	return nil
}

func (c *Compiler) compileVec(f *syntax.Form) core.Node {
	if v, ok := constData(f); ok {
		return constNode(v)
	}
	items := c.compileAll(f.Items)
	pos := f.Pos
	return func(fr *core.Frame) core.Value {
		out := make([]core.Value, len(items))
		for i, n := range items {
			out[i] = n(fr)
		}
		fr.Th.AllocVectorAt(len(out), pos)
		return &core.Vector{Slots: out}
	}
}

func (c *Compiler) compileMap(f *syntax.Form) core.Node {
	if v, ok := constData(f); ok {
		return constNode(v)
	}
	items := c.compileAll(f.Items)
	pos := f.Pos
	return func(fr *core.Frame) core.Value {
		b := core.NewMapBuilder(len(items) / 2)
		for i := 0; i < len(items); i += 2 {
			k := items[i](fr)
			n := b.N
			b.SetExactLast(k, items[i+1](fr))
			if b.N == n {
				// as Clojure: {a 1 b 2} with a = b
				panic(&core.Error{Kind: core.KindValue, Pos: pos, Msg: "map literal: duplicate key: " + core.ErrorPreview(k)})
			}
		}
		fr.Th.AllocSlots(len(items))
		return b.Build()
	}
}

func (c *Compiler) compileSet(f *syntax.Form) core.Node {
	if v, ok := constData(f); ok {
		return constNode(v)
	}
	items := c.compileAll(f.Items)
	pos := f.Pos
	return func(fr *core.Frame) core.Value {
		s := core.EmptySet
		for _, n := range items {
			v := n(fr)
			k := s.Len()
			s = s.Conj(v)
			if s.Len() == k {
				// as Clojure: #{a b} with a = b
				panic(&core.Error{Kind: core.KindValue, Pos: pos, Msg: "set literal: duplicate key: " + core.ErrorPreview(v)})
			}
		}
		fr.Th.AllocSlots(len(items))
		return s
	}
}

// compileList compiles a call or special form.
func (c *Compiler) compileList(f *syntax.Form, tail bool) core.Node {
	if len(f.Items) == 0 {
		return constNode(core.EmptyVector)
	}
	head := f.Items[0]
	if c.symSpecial(head) != 0 {
		if sf := specialForm(head.Name); sf != nil {
			return sf(c, f, tail)
		}
	}
	if head.Kind == syntax.FSym && head.Ns == "tool" {
		return c.compileToolCall(f)
	}
	if head.Kind == syntax.FSym && head.Ns != "" {
		if v, ok := hostConstant(head); ok {
			// (Math/PI) reads the static field, as Clojure's
			// (Classname/field) does
			if len(f.Items) > 1 {
				c.fail(core.KindNotCallable, f.Pos, "", "%s/%s is a constant, not a function: write it without parentheses", head.Ns, head.Name)
			}
			return constNode(v)
		}
	}
	if head.Kind == syntax.FSym && head.Ns == "" && strings.HasPrefix(head.Name, ".") && len(head.Name) > 1 {
		if !c.isLocal(head) {
			b, ok := c.Builtins[head.Name]
			if !ok {
				c.fail(core.KindUnbound, head.Pos, "the only methods are .getTime, .indexOf and .lastIndexOf", "unknown method: %s", head.Name)
			}
			return c.builtinCall(b, f)
		}
	}
	if nd := c.walkFirst(f); nd != nil {
		return nd
	}
	var fnNode core.Node
	if head.Kind == syntax.FSym {
		if head.Ns == "" {
			if c.isBuiltin(head) {
				return c.builtinCall(c.Builtins[head.Name], f)
			}
		} else if _, isNs := NsAliases[head.Ns]; isNs && head.Ns != "memory" && head.Ns != "mem" {
			if b, ok := c.LookupBuiltin(head.Ns, head.Name); ok {
				return c.builtinCall(b, f)
			}
		} else if head.Ns == "memory" || head.Ns == "mem" {
			if b, ok := c.Builtins["memory/"+head.Name]; ok {
				return c.builtinCall(b, f)
			}
		}
	}
	if head.Kind == syntax.FLit {
		if kw, ok := head.Val.(*core.Keyword); ok && (len(f.Items) == 2 || len(f.Items) == 3) {
			// (:k m) and (:k m default): a direct lookup, no call frame
			m := c.compile(f.Items[1], false)
			if len(f.Items) == 2 {
				op := c.operandOf(f.Items[1], m)
				return func(fr *core.Frame) core.Value {
					v := op.Get(fr)
					if h, ok := v.(core.HostMap); ok { // KwGet's first case, without its call
						return core.RecordField(h.Src(), kw)
					}
					return core.KwGet(v, kw)
				}
			}
			d := c.compile(f.Items[2], false)
			return func(fr *core.Frame) core.Value { return core.GetKey(m(fr), kw, d(fr)) }
		}
	}
	switch head.Kind {
	case syntax.FLit:
		switch head.Val.(type) {
		case *core.Keyword, nil:
		default:
			c.fail(core.KindNotCallable, f.Pos, "", "not callable: %s", core.ErrorPreview(head.Val))
		}
	case syntax.FVec:
	}
	fnNode = c.compile(head, false)
	args := c.compileAll(f.Items[1:])
	pos := f.Pos
	n := len(args)
	return func(fr *core.Frame) core.Value {
		th := fr.Th
		fn := fnNode(fr)
		mark := th.Sp
		if c, ok := fn.(*core.Closure); ok && n < len(c.Proto.Direct) && c.Proto.Direct[n] != nil {
			// arguments go straight into the callee's slots
			ar := c.Proto.Direct[n]
			slots := th.Alloca(ar.Nslots)
			for i, an := range args {
				slots[i] = an(fr)
			}
			th.CallPos = pos
			th.Tick()
			var given [4]core.Value // the arguments, for the credit (retain.go)
			copy(given[:], slots[:min(n, 4)])
			amark := th.Alloc
			v := th.RunBody(th.Enter(c, slots), ar)
			th.Sp = mark
			if th.Alloc != amark && n <= 4 {
				th.Credit(amark, given[:n], v)
			}
			return v
		}
		a := th.Alloca(n)
		for i, an := range args {
			a[i] = an(fr)
		}
		th.CallPos = pos
		v := th.CallArgs(fn, a)
		th.Sp = mark
		return v
	}
}

// builtinCall compiles a direct call of a known builtin, checking the
// argument count statically.
func (c *Compiler) builtinCall(b *core.Builtin, f *syntax.Form) core.Node {
	n := len(f.Items) - 1
	if n < b.MinArgs || (b.MaxArgs >= 0 && n > b.MaxArgs) {
		c.fail(core.KindArity, f.Pos, "", "%s expects %s, got %d", b.Name, b.ArityDesc(), n)
	}
	if n == 2 && b.Fn2 != nil {
		if nd, ok := c.countCompare(b, f); ok {
			return nd
		}
	}
	if b.Name == "count" && n == 1 {
		if nd, ok := c.countSplitCall(b, f); ok {
			return nd
		}
	}
	if ((b.Name == "count" || b.Name == "distinct" || b.Name == "set" || b.Name == "frequencies") && n == 1) || (b.Name == "group-by" && n == 2) {
		if nd, ok := c.fusedConsumer(f, b); ok {
			return nd
		}
	}
	if b.Name == "reduce" && (n == 2 || n == 3) {
		if nd, ok := c.fusedReduce(f); ok {
			return nd
		}
	}
	var args []core.Node
	if b.Name == "reduce" && n == 3 {
		args = make([]core.Node, 3)
		args[0] = c.compileReducer(f.Items[1])
		args[1] = c.compile(f.Items[2], false)
		args[2] = c.compile(f.Items[3], false)
	} else {
		// the arguments' nodes are copied into the call's operands or
		// node below: a few are compiled into an array on the stack
		var buf [4]core.Node
		args = buf[:0]
		for _, a := range f.Items[1:] {
			args = append(args, c.compile(a, false))
		}
	}
	if k := streamArg(b.Name, n); k >= 0 && c.streamSource(f.Items[1+k]) {
		args[k] = streamNode(args[k])
	}
	pos := f.Pos
	fn := b.Fn
	if v, ok := c.foldCtor(b, f.Items[1:]); ok {
		// same steps and position as the call it replaces
		return func(fr *core.Frame) core.Value {
			th := fr.Th
			th.CallPos = pos
			th.Tick()
			return v
		}
	}
	if n == 1 && b.Fn1 != nil {
		return fastNode1(b, c.operandOf(f.Items[1], args[0]), pos)
	}
	if n == 2 && b.Fn2 != nil {
		return fastNode2(b, c.operandOf(f.Items[1], args[0]), c.operandOf(f.Items[2], args[1]), pos)
	}
	switch n {
	case 1:
		a0 := c.operandOf(f.Items[1], args[0])
		return func(fr *core.Frame) core.Value {
			th := fr.Th
			mark := th.Sp
			a := th.AllocArgs(1)
			a[0] = a0.Get(fr)
			th.CallPos = pos
			th.Tick()
			v := fn(th, a)
			th.Sp = mark
			return v
		}
	case 2:
		a0, a1 := c.operandOf(f.Items[1], args[0]), c.operandOf(f.Items[2], args[1])
		return func(fr *core.Frame) core.Value {
			th := fr.Th
			mark := th.Sp
			a := th.AllocArgs(2)
			a[0] = a0.Get(fr)
			a[1] = a1.Get(fr)
			th.CallPos = pos
			th.Tick()
			v := fn(th, a)
			th.Sp = mark
			return v
		}
	}
	ops := make([]operand, n)
	for i, an := range args {
		ops[i] = c.operandOf(f.Items[i+1], an)
	}
	if b.Name == "update" && (n == 3 || n == 4) {
		var cnt *counter
		if f == c.countForm {
			cnt = c.counterOf(f.Items[3], n == 4)
		}
		return updateNode(b, ops, pos, cnt)
	}
	return func(fr *core.Frame) core.Value {
		th := fr.Th
		mark := th.Sp
		a := th.AllocArgs(n) // every slot is written below
		for i := range ops {
			a[i] = ops[i].Get(fr)
		}
		th.CallPos = pos
		th.Tick()
		v := fn(th, a)
		th.Sp = mark
		return v
	}
}

// compileToolCall compiles (tool/name), (tool/name {...}), (tool/name :k v ...).
func (c *Compiler) compileToolCall(f *syntax.Form) core.Node {
	name := c.checkTool(f.Items[0].Name, f.Items[0].Pos)
	argForms := f.Items[1:]
	if len(argForms) > 1 {
		if len(argForms)%2 != 0 || !allKeywordKeys(argForms) {
			c.fail(core.KindToolArgs, f.Pos, "", "tool calls take named arguments: (tool/%s {:key value}) or (tool/%s :key value)", name, name)
		}
	}
	if len(argForms) == 1 && argForms[0].Kind != syntax.FMap && argForms[0].Kind != syntax.FList && argForms[0].Kind != syntax.FSym {
		if !(argForms[0].Kind == syntax.FLit && argForms[0].Val == nil) {
			c.fail(core.KindToolArgs, f.Pos, "", "tool calls take named arguments: (tool/%s {:key value}) or (tool/%s :key value)", name, name)
		}
	}
	args := c.compileAll(argForms)
	pos := f.Pos
	return func(fr *core.Frame) core.Value {
		th := fr.Th
		mark := th.Sp
		a := th.Alloca(len(args))
		for i, an := range args {
			a[i] = an(fr)
		}
		th.CallPos = pos
		v := th.Host.CallToolArgs(th, name, a)
		th.Sp = mark
		return v
	}
}

// SafeCompile compiles a program's top-level forms into its body and the
// number of slots its frame needs; a compile error comes back as the
// error, never as a panic.
func (c *Compiler) SafeCompile(forms []*syntax.Form) (body core.Node, nslots int, err *core.Error) {
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(*core.Error)
			if !ok {
				e = &core.Error{Kind: core.KindInternal, Msg: fmt.Sprintf("internal error while compiling: %v", p)}
			}
			e.Src = c.Src
			err = e
		}
	}()
	c.dispatch = (*Compiler).compileForm
	body, nslots = c.compileProgram(forms)
	return body, nslots, nil
}

// checkResolved fails when what the resolver recorded for symbol f, or
// for the head of list f, is not what the compiler's scopes say there
// (CheckResolve). Every symbol compiled must have been resolved: those the
// compiler makes carry their resolution too (mkSpecial, mkBuiltin,
// madeBinder).
func (c *Compiler) checkResolved(f *syntax.Form) {
	sym, head := f, false
	switch {
	case f.Kind == syntax.FSym:
	case f.Kind == syntax.FList && len(f.Items) > 0 && f.Items[0].Kind == syntax.FSym:
		sym, head = f.Items[0], true
	default:
		return
	}
	got, _ := resOf(sym)
	if sym.Res&resMade != 0 {
		return // an expansion's head: it names what the expansion says
	}
	if got == resNone {
		c.fail(core.KindInternal, sym.Pos, "", "resolver: %s was not resolved", sym.SymText())
	}
	if got == resBinder {
		got = resLocal // an as-> name is both
	}
	want := resOther
	bound := sym.Ns == "" && c.bound(sym.Name)
	sp := specialIDs[sym.Name]
	_, builtin := c.Builtins[sym.Name]
	switch {
	case sym.Ns != "":
	case head && sp != 0 && (!bound || unshadowable(sp)):
		want = resSpecial
	case bound:
		want = resLocal
	case sp != 0:
		want = resSpecial
	case builtin:
		want = resBuiltin
	case c.MemNames[sym.Name]:
		want = resGlobal
	}
	if got != want {
		c.fail(core.KindInternal, sym.Pos, "", "resolver: %s is %s, the compiler's scopes say %d", sym.SymText(), ResolvedAs(sym), want)
	}
	if k, id := resOf(sym); k == resLocal {
		if b := c.sc.binderOf(sym.Name); b != 0 && b != id {
			c.fail(core.KindInternal, sym.Pos, "", "resolver: %s is %s, the compiler's scopes say binder#%d", sym.SymText(), ResolvedAs(sym), b)
		}
		if !c.sc.hasBinder(id) {
			c.fail(core.KindInternal, sym.Pos, "", "resolver: %s is %s, which the compiler's scopes do not declare", sym.SymText(), ResolvedAs(sym))
		}
	}
}
