package compile

import (
	"fmt"
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

const (
	refLocal = iota
	refCap
	refSelf
)

type localVar struct {
	name string
	slot int
}

type recurTarget struct {
	n int // binding count (a variadic fn counts its rest as one)
	// cursors[i] is set for loop bindings advanced in place (opt_cursor.go).
	cursors []*loopCursorSlot
	// slots, when set, are the frame slots of a loop whose bindings are
	// all plain symbols: recur then writes them itself.
	slots []int
	// walk is 1 + the index of the binding a walk loop advances itself
	// (opt_walkloop.go): recur leaves it alone. 0: not a walk.
	walk    int
	walkAdv *walkAdvance
	// names are the loop's binding names (with slots); owned[i] is whether
	// recur updates binding i inline (opt_ownedbox.go); nil: none.
	names []string
	owned []bool
	// sole is set by a walk's recur whose one argument besides the advance
	// is an owned update: the walk then runs it without the recur node
	sole *ownedArg
}

// scope is the compile-time view of one function activation.
type scope struct {
	parent   *scope
	locals   []localVar
	nslots   int
	capRefs  []core.CapRef
	capNames []string
	selfName string
	recur    *recurTarget
}

func (s *scope) declare(name string) int {
	slot := s.nslots
	s.nslots++
	s.locals = append(s.locals, localVar{name, slot})
	return slot
}

func (s *scope) lookup(name string) (kind, idx int, ok bool) {
	for i := len(s.locals) - 1; i >= 0; i-- {
		if s.locals[i].name == name {
			return refLocal, s.locals[i].slot, true
		}
	}
	if s.selfName != "" && s.selfName == name {
		return refSelf, 0, true
	}
	for i, n := range s.capNames {
		if n == name {
			return refCap, i, true
		}
	}
	if s.parent == nil {
		return 0, 0, false
	}
	pk, pidx, ok := s.parent.lookup(name)
	if !ok {
		return 0, 0, false
	}
	s.capRefs = append(s.capRefs, core.CapRef{Kind: pk, Idx: pidx})
	s.capNames = append(s.capNames, name)
	return refCap, len(s.capRefs) - 1, true
}

// compiler turns forms into nodes, resolving every symbol once.
type Compiler struct {
	Src       string
	Host      *core.Host
	Builtins  map[string]*core.Builtin
	Fusions   int // reduce pipelines compiled as one loop (opt_fuse.go)
	Walks     int // loops compiled as walks (opt_walkloop.go)
	SoleWalks int // walks whose one update runs without the recur node
	OwnedN    int // loop bindings owned by their loop (opt_ownedbox.go)
	MemNames  map[string]bool
	ToolsUsed []string // tool names the program calls, resolved
	sc        *scope
	lastProto *core.FnProto
	gensym    int
	walk      *walkAlias // the walk loop being compiled (opt_walkloop.go)
	// plainLoops turns off walk loops, owned bindings and transient loop
	// bindings (Options.plainLoops)
	PlainLoops bool
}

// isFnForm reports whether f is a literal (fn [params] body...) form.
func isFnForm(f *syntax.Form) bool {
	return f.Kind == syntax.FList && len(f.Items) >= 3 && f.Items[0].IsSym("fn") && f.Items[1].Kind == syntax.FVec
}

// compileReducer compiles reduce's function; a literal fn (or #(...))
// that uses its accumulator linearly is marked so reduce may pass a
// transient map.
func (c *Compiler) compileReducer(f *syntax.Form) core.Node {
	c.lastProto = nil
	nd := c.compile(f, false)
	if p := c.lastProto; p != nil && f != nil {
		if f.Kind == syntax.FFnLit {
			f = FnLitAsFn(f)
		}
		if isFnForm(f) && LinearAccFn(f) {
			p.LinearAcc = true
		}
	}
	return nd
}

// linearAccFn checks (fn [acc x] body...) for a linearly used acc: every
// use of acc is the map argument of a tail assoc/update/dissoc (whose other
// arguments do not mention acc), or acc returned as is, possibly through
// if/when/cond/let/do. No nested form may capture or rebind it.
func LinearAccFn(f *syntax.Form) bool {
	params := f.Items[1].Items
	if len(params) != 2 || params[0].Kind != syntax.FSym || params[0].Ns != "" || params[0].Name == "&" {
		return false
	}
	acc := params[0].Name
	if formUses(params[1], acc) {
		return false
	}
	body := f.Items[2:]
	for _, b := range body[:len(body)-1] {
		if formUses(b, acc) {
			return false
		}
	}
	return linearTail(body[len(body)-1], acc, -1)
}

// formUses reports whether symbol name occurs anywhere in f.
func formUses(f *syntax.Form, name string) bool {
	if f.Kind == syntax.FSym {
		return f.Ns == "" && f.Name == name
	}
	for _, it := range f.Items {
		if formUses(it, name) {
			return true
		}
	}
	return false
}

// linearUpdates are the builtins whose first argument a linear use may
// update in place.
var linearUpdates = map[string]bool{"assoc": true, "update": true, "dissoc": true, "assoc-in": true, "update-in": true}

// linearFirst reports whether f, the map an update changes, is acc or a
// linear update of acc.
func linearFirst(f *syntax.Form, acc string) bool {
	return f.IsSym(acc) || f.Kind == syntax.FList && linearTail(f, acc, -1)
}

// linearTail checks that f, in tail position, uses acc linearly. In a
// loop whose binding recurArg is acc (recurArg < 0 elsewhere), a recur
// may hand acc on as that binding the same way: its other arguments must
// not mention acc.
func linearTail(f *syntax.Form, acc string, recurArg int) bool {
	if f.IsSym(acc) || !formUses(f, acc) {
		return true
	}
	if f.Kind != syntax.FList || len(f.Items) == 0 || f.Items[0].Kind != syntax.FSym || f.Items[0].Ns != "" {
		return false
	}
	it := f.Items
	noneUse := func(fs []*syntax.Form) bool {
		for _, x := range fs {
			if formUses(x, acc) {
				return false
			}
		}
		return true
	}
	if linearUpdates[it[0].Name] {
		// (assoc acc ...), or of a linear update of acc: (assoc (assoc acc ...) ...)
		return len(it) >= 3 && linearFirst(it[1], acc) && noneUse(it[2:])
	}
	switch it[0].Name {
	case "if", "if-not":
		return len(it) >= 3 && len(it) <= 4 && !formUses(it[1], acc) && linearTail(it[2], acc, recurArg) && (len(it) == 3 || linearTail(it[3], acc, recurArg))
	case "when", "when-not", "do":
		start := 1
		if it[0].Name != "do" {
			if len(it) < 3 || formUses(it[1], acc) {
				return false
			}
			start = 2
		}
		if len(it) <= start {
			return true
		}
		return noneUse(it[start:len(it)-1]) && linearTail(it[len(it)-1], acc, recurArg)
	case "cond":
		if len(it)%2 == 0 {
			return false
		}
		for i := 1; i+1 < len(it); i += 2 {
			if formUses(it[i], acc) || !linearTail(it[i+1], acc, recurArg) {
				return false
			}
		}
		return true
	case "let":
		if len(it) < 3 || it[1].Kind != syntax.FVec || formUses(it[1], acc) {
			return false
		}
		return noneUse(it[2:len(it)-1]) && linearTail(it[len(it)-1], acc, recurArg)
	case "->":
		// (-> acc (assoc ...) (update ...)): each step an update of the last
		if len(it) < 2 || !linearFirst(it[1], acc) {
			return false
		}
		for _, step := range it[2:] {
			if step.Kind != syntax.FList || len(step.Items) < 2 || step.Items[0].Kind != syntax.FSym || step.Items[0].Ns != "" ||
				!linearUpdates[step.Items[0].Name] || !noneUse(step.Items[1:]) {
				return false
			}
		}
		return true
	case "recur":
		if recurArg < 0 || recurArg+1 >= len(it) {
			return false
		}
		for j, x := range it[1:] {
			if j != recurArg && formUses(x, acc) {
				return false
			}
		}
		return linearTail(it[recurArg+1], acc, -1)
	}
	return false
}

type fnLitInfo struct {
	maxN int
	rest bool
}

func (c *Compiler) fail(kind core.Kind, pos core.Pos, hint, format string, args ...any) {
	e := core.Errorf(kind, pos, format, args...)
	e.Hint = hint
	e.Src = c.Src
	panic(e)
}

// compileProgram compiles top-level forms as one do block.
func (c *Compiler) compileProgram(forms []*syntax.Form) (body core.Node, nslots int) {
	c.sc = &scope{}
	c.collectDefs(forms)
	nodes := make([]core.Node, len(forms))
	for i, f := range forms {
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
					c.MemNames[f.Items[1].Name] = true
				}
			}
		}
		c.collectDefs(f.Items)
	}
}

func constNode(v core.Value) core.Node { return func(*core.Frame) core.Value { return v } }

func seqNode(nodes []core.Node) core.Node {
	switch len(nodes) {
	case 0:
		return constNode(nil)
	case 1:
		return nodes[0]
	case 2:
		a, b := nodes[0], nodes[1]
		return func(fr *core.Frame) core.Value { a(fr); return b(fr) }
	}
	last := nodes[len(nodes)-1]
	init := nodes[:len(nodes)-1]
	return func(fr *core.Frame) core.Value {
		for _, n := range init {
			n(fr)
		}
		return last(fr)
	}
}

func (c *Compiler) compileBody(forms []*syntax.Form, tail bool) core.Node {
	nodes := make([]core.Node, len(forms))
	for i, f := range forms {
		nodes[i] = c.compile(f, tail && i == len(forms)-1)
	}
	return seqNode(nodes)
}

// compile compiles one form; tail reports whether it is in tail position
// for recur.
func (c *Compiler) compile(f *syntax.Form, tail bool) core.Node {
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

func (c *Compiler) compileAll(fs []*syntax.Form) []core.Node {
	out := make([]core.Node, len(fs))
	for i, f := range fs {
		out[i] = c.compile(f, false)
	}
	return out
}

// constData returns the value of a form made only of literals.
func constData(f *syntax.Form) (core.Value, bool) { return formData(f, false) }

// formData returns the value of a form made only of literals, vectors, maps
// and sets. With quoted set (the form under ' or quote), lists are data too
// and read as vectors.
func formData(f *syntax.Form, quoted bool) (core.Value, bool) {
	switch f.Kind {
	case syntax.FLit:
		return f.Val, true
	case syntax.FVec, syntax.FList:
		if f.Kind == syntax.FList && !quoted {
			return nil, false
		}
		items := make([]core.Value, len(f.Items))
		for i, it := range f.Items {
			v, ok := formData(it, quoted)
			if !ok {
				return nil, false
			}
			items[i] = v
		}
		if len(items) == 0 {
			return core.EmptyVector, true
		}
		return &core.Vector{Slots: items}, true
	case syntax.FMap:
		b := core.NewMapBuilder(len(f.Items) / 2)
		for i := 0; i+1 < len(f.Items); i += 2 {
			k, ok1 := formData(f.Items[i], quoted)
			v, ok2 := formData(f.Items[i+1], quoted)
			if !ok1 || !ok2 {
				return nil, false
			}
			b.SetExactLast(k, v)
		}
		return b.Build(), true
	case syntax.FSet:
		s := core.EmptySet
		for _, it := range f.Items {
			v, ok := formData(it, quoted)
			if !ok {
				return nil, false
			}
			s = s.Conj(v)
		}
		return s, true
	}
	return nil, false
}

// Namespace aliases mapped to canonical namespaces.
var NsAliases = map[string]string{
	"clojure.string": "str", "str": "str", "string": "str",
	"clojure.core": "core", "core": "core",
	"clojure.set": "set", "set": "set",
	"clojure.walk": "walk", "walk": "walk",
	"Math": "Math", "Boolean": "Boolean", "System": "System", "Double": "Double", "Integer": "Integer", "Long": "Long",
	"java.time.LocalDate": "LocalDate", "LocalDate": "LocalDate",
	"memory": "memory", "mem": "memory",
}

// lookupBuiltin resolves ns/name to a builtin (ns may be "").
func (c *Compiler) LookupBuiltin(ns, name string) (*core.Builtin, bool) {
	if ns == "" {
		b, ok := c.Builtins[name]
		return b, ok
	}
	canon, ok := NsAliases[ns]
	if !ok {
		return nil, false
	}
	if b, ok := c.Builtins[canon+"/"+name]; ok {
		return b, true
	}
	if canon == "memory" {
		return nil, false
	}
	b, ok := c.Builtins[name]
	return b, ok
}

func (c *Compiler) compileSym(f *syntax.Form, inOr bool) core.Node {
	if f.Ns == "" {
		if kind, idx, ok := c.sc.lookup(f.Name); ok {
			switch kind {
			case refLocal:
				return func(fr *core.Frame) core.Value { return fr.Slots[idx] }
			case refCap:
				return func(fr *core.Frame) core.Value { return fr.Caps[idx] }
			default:
				return func(fr *core.Frame) core.Value { return fr.Self }
			}
		}
		if IsSpecialForm(f.Name) {
			c.fail(core.KindAnalysis, f.Pos, fmt.Sprintf("write (%s ...)", f.Name), "%s is a special form and cannot be used as a value", f.Name)
		}
		if b, ok := c.Builtins[f.Name]; ok {
			return constNode(b)
		}
		if v, ok := builtins.HostConstants[f.Name]; ok {
			return constNode(v)
		}
		name := f.Name
		pos := f.Pos
		if c.MemNames[name] || inOr {
			return func(fr *core.Frame) core.Value {
				if v, ok := fr.Th.Mem[name]; ok {
					return v
				}
				if inOr {
					return nil
				}
				panic(&core.Error{Kind: core.KindUnbound, Pos: pos, Msg: "undefined symbol: " + name, Hint: "it is def'd later in the program; define it before use"})
			}
		}
		c.unbound(f)
	}
	switch f.Ns {
	case "ctx", "data":
		key := f.Name
		return func(fr *core.Frame) core.Value { return fr.Th.Host.CtxGet(fr.Th, key) }
	case "memory", "mem":
		name := f.Name
		if b, ok := c.Builtins["memory/"+name]; ok {
			return constNode(b)
		}
		return func(fr *core.Frame) core.Value { return fr.Th.Mem[name] }
	case "tool":
		name := c.checkTool(f.Name, f.Pos)
		return constNode(&core.Builtin{Name: "tool/" + name, MinArgs: 0, MaxArgs: -1, Fn: func(th *core.Thread, args []core.Value) core.Value {
			return th.Host.CallToolArgs(th, name, args)
		}})
	}
	if b, ok := c.LookupBuiltin(f.Ns, f.Name); ok {
		return constNode(b)
	}
	if v, ok := builtins.HostConstants[f.Ns+"/"+f.Name]; ok {
		return constNode(v)
	}
	if canon, ok := NsAliases[f.Ns]; ok {
		c.fail(core.KindUnbound, f.Pos, c.namespacedHint(canon, f.Name), "%s/%s is not available", f.Ns, f.Name)
	}
	c.fail(core.KindUnbound, f.Pos, "", "unknown namespace %s/; use tool/ for tools, ctx/ for inputs", f.Ns)
	return nil
}

func (c *Compiler) checkTool(name string, pos core.Pos) string {
	if name == "return" || name == "fail" {
		return name
	}
	resolved, ok := c.Host.ResolveTool(name)
	if !ok {
		c.fail(core.KindUnknownTool, pos, "", "%s", c.Host.UnknownTool(name))
	}
	c.ToolsUsed = append(c.ToolsUsed, resolved)
	return resolved
}

// compileList compiles a call or special form.
func (c *Compiler) compileList(f *syntax.Form, tail bool) core.Node {
	if len(f.Items) == 0 {
		return constNode(core.EmptyVector)
	}
	head := f.Items[0]
	if head.Kind == syntax.FSym && head.Ns == "" {
		if sf := specialForm(head.Name); sf != nil {
			if _, _, local := c.sc.lookup(head.Name); !local || unshadowable[head.Name] {
				return sf(c, f, tail)
			}
		}
	}
	if head.Kind == syntax.FSym && head.Ns == "tool" {
		return c.compileToolCall(f)
	}
	if head.Kind == syntax.FSym && head.Ns == "" && strings.HasPrefix(head.Name, ".") && len(head.Name) > 1 {
		if _, _, local := c.sc.lookup(head.Name); !local {
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
			if _, _, local := c.sc.lookup(head.Name); !local {
				if b, ok := c.Builtins[head.Name]; ok {
					return c.builtinCall(b, f)
				}
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
				return func(fr *core.Frame) core.Value { return core.KwGet(op.Get(fr), kw) }
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
		args = c.compileAll(f.Items[1:])
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
		return updateNode(b, ops, pos)
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

// operand is a call argument: a local's slot is read in place instead of
// through a node call.
type operand struct {
	slot int       // >= 0: a local's frame slot
	node core.Node // otherwise
}

// get is small enough to inline.
func (o *operand) Get(fr *core.Frame) core.Value {
	if o.slot >= 0 {
		return fr.Slots[o.slot]
	}
	return o.node(fr)
}

// operandOf classifies argument form f, compiled as nd.
func (c *Compiler) operandOf(f *syntax.Form, nd core.Node) operand {
	if f.Kind == syntax.FSym && f.Ns == "" {
		if kind, idx, ok := c.sc.lookup(f.Name); ok && kind == refLocal {
			return operand{slot: idx}
		}
	}
	return operand{slot: -1, node: nd}
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

func allKeywordKeys(fs []*syntax.Form) bool {
	for i := 0; i < len(fs); i += 2 {
		if fs[i].Kind != syntax.FLit {
			return false
		}
		if _, ok := fs[i].Val.(*core.Keyword); !ok {
			if _, ok := fs[i].Val.(string); !ok {
				return false
			}
		}
	}
	return true
}

// foldCtor evaluates a call of a foldable constructor whose arguments are
// all literals or builtin names; ok is false otherwise.
func (c *Compiler) foldCtor(b *core.Builtin, argForms []*syntax.Form) (v core.Value, ok bool) {
	if !builtins.Facts(b.Name).Foldable {
		return nil, false
	}
	args := make([]core.Value, len(argForms))
	for i, af := range argForms {
		a, ok := c.constArg(af)
		if !ok {
			return nil, false
		}
		args[i] = a
	}
	defer func() {
		if recover() != nil {
			v, ok = nil, false
		}
	}()
	return b.Fn(nil, args), true
}

// constArg returns the value of an argument form that is a literal or
// names a builtin (not shadowed by a local).
func (c *Compiler) constArg(f *syntax.Form) (core.Value, bool) {
	if v, ok := constData(f); ok {
		return v, true
	}
	if f.Kind != syntax.FSym {
		return nil, false
	}
	if f.Ns == "" {
		if _, _, local := c.sc.lookup(f.Name); local {
			return nil, false
		}
		b, ok := c.Builtins[f.Name]
		return b, ok
	}
	if _, isNs := NsAliases[f.Ns]; !isNs || f.Ns == "memory" || f.Ns == "mem" {
		return nil, false
	}
	b, ok := c.LookupBuiltin(f.Ns, f.Name)
	return b, ok
}

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
	body, nslots = c.compileProgram(forms)
	return body, nslots, nil
}
