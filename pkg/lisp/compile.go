package lisp

import (
	"fmt"
	"strings"
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
	capRefs  []capRef
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
	s.capRefs = append(s.capRefs, capRef{pk, pidx})
	s.capNames = append(s.capNames, name)
	return refCap, len(s.capRefs) - 1, true
}

// compiler turns forms into nodes, resolving every symbol once.
type compiler struct {
	src       string
	host      *host
	builtins  map[string]*Builtin
	fusions   int // reduce pipelines compiled as one loop (opt_fuse.go)
	walks     int // loops compiled as walks (opt_walkloop.go)
	soleWalks int // walks whose one update runs without the recur node
	ownedN    int // loop bindings owned by their loop (opt_ownedbox.go)
	memNames  map[string]bool
	toolsUsed []string // tool names the program calls, resolved
	sc        *scope
	lastProto *fnProto
	gensym    int
	walk      *walkAlias // the walk loop being compiled (opt_walkloop.go)
	// plainLoops turns off walk loops, owned bindings and transient loop
	// bindings (Options.plainLoops)
	plainLoops bool
}

// isFnForm reports whether f is a literal (fn [params] body...) form.
func isFnForm(f *form) bool {
	return f.kind == fList && len(f.items) >= 3 && f.items[0].isSym("fn") && f.items[1].kind == fVec
}

// compileReducer compiles reduce's function; a literal fn (or #(...))
// that uses its accumulator linearly is marked so reduce may pass a
// transient map.
func (c *compiler) compileReducer(f *form) node {
	c.lastProto = nil
	nd := c.compile(f, false)
	if p := c.lastProto; p != nil && f != nil {
		if f.kind == fFnLit {
			f = fnLitAsFn(f)
		}
		if isFnForm(f) && linearAccFn(f) {
			p.linearAcc = true
		}
	}
	return nd
}

// linearAccFn checks (fn [acc x] body...) for a linearly used acc: every
// use of acc is the map argument of a tail assoc/update/dissoc (whose other
// arguments do not mention acc), or acc returned as is, possibly through
// if/when/cond/let/do. No nested form may capture or rebind it.
func linearAccFn(f *form) bool {
	params := f.items[1].items
	if len(params) != 2 || params[0].kind != fSym || params[0].ns != "" || params[0].name == "&" {
		return false
	}
	acc := params[0].name
	if formUses(params[1], acc) {
		return false
	}
	body := f.items[2:]
	for _, b := range body[:len(body)-1] {
		if formUses(b, acc) {
			return false
		}
	}
	return linearTail(body[len(body)-1], acc, -1)
}

// formUses reports whether symbol name occurs anywhere in f.
func formUses(f *form, name string) bool {
	if f.kind == fSym {
		return f.ns == "" && f.name == name
	}
	for _, it := range f.items {
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
func linearFirst(f *form, acc string) bool {
	return f.isSym(acc) || f.kind == fList && linearTail(f, acc, -1)
}

// linearTail checks that f, in tail position, uses acc linearly. In a
// loop whose binding recurArg is acc (recurArg < 0 elsewhere), a recur
// may hand acc on as that binding the same way: its other arguments must
// not mention acc.
func linearTail(f *form, acc string, recurArg int) bool {
	if f.isSym(acc) || !formUses(f, acc) {
		return true
	}
	if f.kind != fList || len(f.items) == 0 || f.items[0].kind != fSym || f.items[0].ns != "" {
		return false
	}
	it := f.items
	noneUse := func(fs []*form) bool {
		for _, x := range fs {
			if formUses(x, acc) {
				return false
			}
		}
		return true
	}
	if linearUpdates[it[0].name] {
		// (assoc acc ...), or of a linear update of acc: (assoc (assoc acc ...) ...)
		return len(it) >= 3 && linearFirst(it[1], acc) && noneUse(it[2:])
	}
	switch it[0].name {
	case "if", "if-not":
		return len(it) >= 3 && len(it) <= 4 && !formUses(it[1], acc) && linearTail(it[2], acc, recurArg) && (len(it) == 3 || linearTail(it[3], acc, recurArg))
	case "when", "when-not", "do":
		start := 1
		if it[0].name != "do" {
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
		if len(it) < 3 || it[1].kind != fVec || formUses(it[1], acc) {
			return false
		}
		return noneUse(it[2:len(it)-1]) && linearTail(it[len(it)-1], acc, recurArg)
	case "->":
		// (-> acc (assoc ...) (update ...)): each step an update of the last
		if len(it) < 2 || !linearFirst(it[1], acc) {
			return false
		}
		for _, step := range it[2:] {
			if step.kind != fList || len(step.items) < 2 || step.items[0].kind != fSym || step.items[0].ns != "" ||
				!linearUpdates[step.items[0].name] || !noneUse(step.items[1:]) {
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

func (c *compiler) fail(kind Kind, pos Pos, hint, format string, args ...any) {
	e := errorf(kind, pos, format, args...)
	e.Hint = hint
	e.src = c.src
	panic(e)
}

// compileProgram compiles top-level forms as one do block.
func (c *compiler) compileProgram(forms []*form) (body node, nslots int) {
	c.sc = &scope{}
	c.collectDefs(forms)
	nodes := make([]node, len(forms))
	for i, f := range forms {
		nodes[i] = c.compile(f, false)
	}
	if len(nodes) < 2 {
		return seqNode(nodes), c.sc.nslots
	}
	// a top-level form's value is dropped unless it is the last: what it
	// charged and did not keep (def, prints) is given back (retain.go)
	return func(fr *frame) Value {
		th := fr.th
		last := len(nodes) - 1
		for _, n := range nodes[:last] {
			mark := th.alloc
			n(fr)
			th.credit(mark, nil)
		}
		return nodes[last](fr)
	}, c.sc.nslots
}

// collectDefs records names def'd anywhere in the program: they count as
// bound for the static check.
func (c *compiler) collectDefs(forms []*form) {
	for _, f := range forms {
		if f == nil {
			continue
		}
		if f.kind == fList && len(f.items) >= 2 && f.items[0].kind == fSym && f.items[0].ns == "" {
			switch f.items[0].name {
			case "def", "defn", "defn-", "defonce":
				if f.items[1].kind == fSym && f.items[1].ns == "" {
					c.memNames[f.items[1].name] = true
				}
			}
		}
		c.collectDefs(f.items)
	}
}

func constNode(v Value) node { return func(*frame) Value { return v } }

func seqNode(nodes []node) node {
	switch len(nodes) {
	case 0:
		return constNode(nil)
	case 1:
		return nodes[0]
	case 2:
		a, b := nodes[0], nodes[1]
		return func(fr *frame) Value { a(fr); return b(fr) }
	}
	last := nodes[len(nodes)-1]
	init := nodes[:len(nodes)-1]
	return func(fr *frame) Value {
		for _, n := range init {
			n(fr)
		}
		return last(fr)
	}
}

func (c *compiler) compileBody(forms []*form, tail bool) node {
	nodes := make([]node, len(forms))
	for i, f := range forms {
		nodes[i] = c.compile(f, tail && i == len(forms)-1)
	}
	return seqNode(nodes)
}

// compile compiles one form; tail reports whether it is in tail position
// for recur.
func (c *compiler) compile(f *form, tail bool) node {
	switch f.kind {
	case fLit:
		return constNode(f.val)
	case fSym:
		return c.compileSym(f, false)
	case fVec:
		return c.compileVec(f)
	case fMap:
		return c.compileMap(f)
	case fSet:
		return c.compileSet(f)
	case fRegex:
		re, err := compileRegex(f.val.(string))
		if err != nil {
			c.fail(KindRegex, f.pos, "", "%s", err.Error())
		}
		return constNode(re)
	case fFnLit:
		return c.compileFnLit(f)
	case fList:
		return c.compileList(f, tail)
	}
	c.fail(KindInternal, f.pos, "", "unknown form")
	return nil
}

func (c *compiler) compileVec(f *form) node {
	if v, ok := constData(f); ok {
		return constNode(v)
	}
	items := c.compileAll(f.items)
	pos := f.pos
	return func(fr *frame) Value {
		out := make([]Value, len(items))
		for i, n := range items {
			out[i] = n(fr)
		}
		fr.th.allocVectorAt(len(out), pos)
		return &Vector{slots: out}
	}
}

func (c *compiler) compileMap(f *form) node {
	if v, ok := constData(f); ok {
		return constNode(v)
	}
	items := c.compileAll(f.items)
	pos := f.pos
	return func(fr *frame) Value {
		b := newMapBuilder(len(items) / 2)
		for i := 0; i < len(items); i += 2 {
			k := items[i](fr)
			n := b.n
			b.setExactLast(k, items[i+1](fr))
			if b.n == n {
				// as Clojure: {a 1 b 2} with a = b
				panic(&Error{Kind: KindValue, Pos: pos, Msg: "map literal: duplicate key: " + preview(k)})
			}
		}
		fr.th.allocSlots(len(items))
		return b.build()
	}
}

func (c *compiler) compileSet(f *form) node {
	if v, ok := constData(f); ok {
		return constNode(v)
	}
	items := c.compileAll(f.items)
	pos := f.pos
	return func(fr *frame) Value {
		s := emptySet
		for _, n := range items {
			v := n(fr)
			k := s.Len()
			s = s.Conj(v)
			if s.Len() == k {
				// as Clojure: #{a b} with a = b
				panic(&Error{Kind: KindValue, Pos: pos, Msg: "set literal: duplicate key: " + preview(v)})
			}
		}
		fr.th.allocSlots(len(items))
		return s
	}
}

func (c *compiler) compileAll(fs []*form) []node {
	out := make([]node, len(fs))
	for i, f := range fs {
		out[i] = c.compile(f, false)
	}
	return out
}

// constData returns the value of a form made only of literals.
func constData(f *form) (Value, bool) { return formData(f, false) }

// formData returns the value of a form made only of literals, vectors, maps
// and sets. With quoted set (the form under ' or quote), lists are data too
// and read as vectors.
func formData(f *form, quoted bool) (Value, bool) {
	switch f.kind {
	case fLit:
		return f.val, true
	case fVec, fList:
		if f.kind == fList && !quoted {
			return nil, false
		}
		items := make([]Value, len(f.items))
		for i, it := range f.items {
			v, ok := formData(it, quoted)
			if !ok {
				return nil, false
			}
			items[i] = v
		}
		if len(items) == 0 {
			return emptyVector, true
		}
		return &Vector{slots: items}, true
	case fMap:
		b := newMapBuilder(len(f.items) / 2)
		for i := 0; i+1 < len(f.items); i += 2 {
			k, ok1 := formData(f.items[i], quoted)
			v, ok2 := formData(f.items[i+1], quoted)
			if !ok1 || !ok2 {
				return nil, false
			}
			b.setExactLast(k, v)
		}
		return b.build(), true
	case fSet:
		s := emptySet
		for _, it := range f.items {
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
var nsAliases = map[string]string{
	"clojure.string": "str", "str": "str", "string": "str",
	"clojure.core": "core", "core": "core",
	"clojure.set": "set", "set": "set",
	"clojure.walk": "walk", "walk": "walk",
	"Math": "Math", "Boolean": "Boolean", "System": "System", "Double": "Double", "Integer": "Integer", "Long": "Long",
	"java.time.LocalDate": "LocalDate", "LocalDate": "LocalDate",
	"memory": "memory", "mem": "memory",
}

// lookupBuiltin resolves ns/name to a builtin (ns may be "").
func (c *compiler) lookupBuiltin(ns, name string) (*Builtin, bool) {
	if ns == "" {
		b, ok := c.builtins[name]
		return b, ok
	}
	canon, ok := nsAliases[ns]
	if !ok {
		return nil, false
	}
	if b, ok := c.builtins[canon+"/"+name]; ok {
		return b, true
	}
	if canon == "memory" {
		return nil, false
	}
	b, ok := c.builtins[name]
	return b, ok
}

func (c *compiler) compileSym(f *form, inOr bool) node {
	if f.ns == "" {
		if kind, idx, ok := c.sc.lookup(f.name); ok {
			switch kind {
			case refLocal:
				return func(fr *frame) Value { return fr.slots[idx] }
			case refCap:
				return func(fr *frame) Value { return fr.caps[idx] }
			default:
				return func(fr *frame) Value { return fr.self }
			}
		}
		if isSpecialForm(f.name) {
			c.fail(KindAnalysis, f.pos, fmt.Sprintf("write (%s ...)", f.name), "%s is a special form and cannot be used as a value", f.name)
		}
		if b, ok := c.builtins[f.name]; ok {
			return constNode(b)
		}
		if v, ok := hostConstants[f.name]; ok {
			return constNode(v)
		}
		name := f.name
		pos := f.pos
		if c.memNames[name] || inOr {
			return func(fr *frame) Value {
				if v, ok := fr.th.mem[name]; ok {
					return v
				}
				if inOr {
					return nil
				}
				panic(&Error{Kind: KindUnbound, Pos: pos, Msg: "undefined symbol: " + name, Hint: "it is def'd later in the program; define it before use"})
			}
		}
		c.unbound(f)
	}
	switch f.ns {
	case "ctx", "data":
		key := f.name
		return func(fr *frame) Value { return fr.th.host.ctxGet(fr.th, key) }
	case "memory", "mem":
		name := f.name
		if b, ok := c.builtins["memory/"+name]; ok {
			return constNode(b)
		}
		return func(fr *frame) Value { return fr.th.mem[name] }
	case "tool":
		name := c.checkTool(f.name, f.pos)
		return constNode(&Builtin{Name: "tool/" + name, MinArgs: 0, MaxArgs: -1, Fn: func(th *Thread, args []Value) Value {
			return th.host.callToolArgs(th, name, args)
		}})
	}
	if b, ok := c.lookupBuiltin(f.ns, f.name); ok {
		return constNode(b)
	}
	if v, ok := hostConstants[f.ns+"/"+f.name]; ok {
		return constNode(v)
	}
	if canon, ok := nsAliases[f.ns]; ok {
		c.fail(KindUnbound, f.pos, c.namespacedHint(canon, f.name), "%s/%s is not available", f.ns, f.name)
	}
	c.fail(KindUnbound, f.pos, "", "unknown namespace %s/; use tool/ for tools, ctx/ for inputs", f.ns)
	return nil
}

func (c *compiler) checkTool(name string, pos Pos) string {
	if name == "return" || name == "fail" {
		return name
	}
	resolved, ok := c.host.resolveTool(name)
	if !ok {
		c.fail(KindUnknownTool, pos, "", "%s", c.host.unknownTool(name))
	}
	c.toolsUsed = append(c.toolsUsed, resolved)
	return resolved
}

// compileList compiles a call or special form.
func (c *compiler) compileList(f *form, tail bool) node {
	if len(f.items) == 0 {
		return constNode(emptyVector)
	}
	head := f.items[0]
	if head.kind == fSym && head.ns == "" {
		if sf := specialForm(head.name); sf != nil {
			if _, _, local := c.sc.lookup(head.name); !local || unshadowable[head.name] {
				return sf(c, f, tail)
			}
		}
	}
	if head.kind == fSym && head.ns == "tool" {
		return c.compileToolCall(f)
	}
	if head.kind == fSym && head.ns == "" && strings.HasPrefix(head.name, ".") && len(head.name) > 1 {
		if _, _, local := c.sc.lookup(head.name); !local {
			b, ok := c.builtins[head.name]
			if !ok {
				c.fail(KindUnbound, head.pos, "the only methods are .getTime, .indexOf and .lastIndexOf", "unknown method: %s", head.name)
			}
			return c.builtinCall(b, f)
		}
	}
	if nd := c.walkFirst(f); nd != nil {
		return nd
	}
	var fnNode node
	if head.kind == fSym {
		if head.ns == "" {
			if _, _, local := c.sc.lookup(head.name); !local {
				if b, ok := c.builtins[head.name]; ok {
					return c.builtinCall(b, f)
				}
			}
		} else if _, isNs := nsAliases[head.ns]; isNs && head.ns != "memory" && head.ns != "mem" {
			if b, ok := c.lookupBuiltin(head.ns, head.name); ok {
				return c.builtinCall(b, f)
			}
		} else if head.ns == "memory" || head.ns == "mem" {
			if b, ok := c.builtins["memory/"+head.name]; ok {
				return c.builtinCall(b, f)
			}
		}
	}
	if head.kind == fLit {
		if kw, ok := head.val.(*Keyword); ok && (len(f.items) == 2 || len(f.items) == 3) {
			// (:k m) and (:k m default): a direct lookup, no call frame
			m := c.compile(f.items[1], false)
			if len(f.items) == 2 {
				op := c.operandOf(f.items[1], m)
				return func(fr *frame) Value { return kwGet(op.get(fr), kw) }
			}
			d := c.compile(f.items[2], false)
			return func(fr *frame) Value { return getKey(m(fr), kw, d(fr)) }
		}
	}
	switch head.kind {
	case fLit:
		switch head.val.(type) {
		case *Keyword, nil:
		default:
			c.fail(KindNotCallable, f.pos, "", "not callable: %s", preview(head.val))
		}
	case fVec:
	}
	fnNode = c.compile(head, false)
	args := c.compileAll(f.items[1:])
	pos := f.pos
	n := len(args)
	return func(fr *frame) Value {
		th := fr.th
		fn := fnNode(fr)
		mark := th.sp
		if c, ok := fn.(*Closure); ok && n < len(c.proto.direct) && c.proto.direct[n] != nil {
			// arguments go straight into the callee's slots
			ar := c.proto.direct[n]
			slots := th.alloca(ar.nslots)
			for i, an := range args {
				slots[i] = an(fr)
			}
			th.pos = pos
			th.tick()
			var given [4]Value // the arguments, for the credit (retain.go)
			copy(given[:], slots[:min(n, 4)])
			amark := th.alloc
			v := th.runBody(th.enter(c, slots), ar)
			th.sp = mark
			if th.alloc != amark && n <= 4 {
				th.credit(amark, given[:n], v)
			}
			return v
		}
		a := th.alloca(n)
		for i, an := range args {
			a[i] = an(fr)
		}
		th.pos = pos
		v := th.call(fn, a)
		th.sp = mark
		return v
	}
}

// builtinCall compiles a direct call of a known builtin, checking the
// argument count statically.
func (c *compiler) builtinCall(b *Builtin, f *form) node {
	n := len(f.items) - 1
	if n < b.MinArgs || (b.MaxArgs >= 0 && n > b.MaxArgs) {
		c.fail(KindArity, f.pos, "", "%s expects %s, got %d", b.Name, b.arityText(), n)
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
	var args []node
	if b.Name == "reduce" && n == 3 {
		args = make([]node, 3)
		args[0] = c.compileReducer(f.items[1])
		args[1] = c.compile(f.items[2], false)
		args[2] = c.compile(f.items[3], false)
	} else {
		args = c.compileAll(f.items[1:])
	}
	if k := streamArg(b.Name, n); k >= 0 && c.streamSource(f.items[1+k]) {
		args[k] = streamNode(args[k])
	}
	pos := f.pos
	fn := b.Fn
	if v, ok := c.foldCtor(b, f.items[1:]); ok {
		// same steps and position as the call it replaces
		return func(fr *frame) Value {
			th := fr.th
			th.pos = pos
			th.tick()
			return v
		}
	}
	if n == 1 && b.fn1 != nil {
		return fastNode1(b, c.operandOf(f.items[1], args[0]), pos)
	}
	if n == 2 && b.fn2 != nil {
		return fastNode2(b, c.operandOf(f.items[1], args[0]), c.operandOf(f.items[2], args[1]), pos)
	}
	switch n {
	case 1:
		a0 := c.operandOf(f.items[1], args[0])
		return func(fr *frame) Value {
			th := fr.th
			mark := th.sp
			a := th.allocArgs(1)
			a[0] = a0.get(fr)
			th.pos = pos
			th.tick()
			v := fn(th, a)
			th.sp = mark
			return v
		}
	case 2:
		a0, a1 := c.operandOf(f.items[1], args[0]), c.operandOf(f.items[2], args[1])
		return func(fr *frame) Value {
			th := fr.th
			mark := th.sp
			a := th.allocArgs(2)
			a[0] = a0.get(fr)
			a[1] = a1.get(fr)
			th.pos = pos
			th.tick()
			v := fn(th, a)
			th.sp = mark
			return v
		}
	}
	ops := make([]operand, n)
	for i, an := range args {
		ops[i] = c.operandOf(f.items[i+1], an)
	}
	if b.Name == "update" && (n == 3 || n == 4) {
		return updateNode(b, ops, pos)
	}
	return func(fr *frame) Value {
		th := fr.th
		mark := th.sp
		a := th.allocArgs(n) // every slot is written below
		for i := range ops {
			a[i] = ops[i].get(fr)
		}
		th.pos = pos
		th.tick()
		v := fn(th, a)
		th.sp = mark
		return v
	}
}

// operand is a call argument: a local's slot is read in place instead of
// through a node call.
type operand struct {
	slot int  // >= 0: a local's frame slot
	node node // otherwise
}

// get is small enough to inline.
func (o *operand) get(fr *frame) Value {
	if o.slot >= 0 {
		return fr.slots[o.slot]
	}
	return o.node(fr)
}

// operandOf classifies argument form f, compiled as nd.
func (c *compiler) operandOf(f *form, nd node) operand {
	if f.kind == fSym && f.ns == "" {
		if kind, idx, ok := c.sc.lookup(f.name); ok && kind == refLocal {
			return operand{slot: idx}
		}
	}
	return operand{slot: -1, node: nd}
}

// compileToolCall compiles (tool/name), (tool/name {...}), (tool/name :k v ...).
func (c *compiler) compileToolCall(f *form) node {
	name := c.checkTool(f.items[0].name, f.items[0].pos)
	argForms := f.items[1:]
	if len(argForms) > 1 {
		if len(argForms)%2 != 0 || !allKeywordKeys(argForms) {
			c.fail(KindToolArgs, f.pos, "", "tool calls take named arguments: (tool/%s {:key value}) or (tool/%s :key value)", name, name)
		}
	}
	if len(argForms) == 1 && argForms[0].kind != fMap && argForms[0].kind != fList && argForms[0].kind != fSym {
		if !(argForms[0].kind == fLit && argForms[0].val == nil) {
			c.fail(KindToolArgs, f.pos, "", "tool calls take named arguments: (tool/%s {:key value}) or (tool/%s :key value)", name, name)
		}
	}
	args := c.compileAll(argForms)
	pos := f.pos
	return func(fr *frame) Value {
		th := fr.th
		mark := th.sp
		a := th.alloca(len(args))
		for i, an := range args {
			a[i] = an(fr)
		}
		th.pos = pos
		v := th.host.callToolArgs(th, name, a)
		th.sp = mark
		return v
	}
}

func allKeywordKeys(fs []*form) bool {
	for i := 0; i < len(fs); i += 2 {
		if fs[i].kind != fLit {
			return false
		}
		if _, ok := fs[i].val.(*Keyword); !ok {
			if _, ok := fs[i].val.(string); !ok {
				return false
			}
		}
	}
	return true
}

// foldCtor evaluates a call of a foldable constructor whose arguments are
// all literals or builtin names; ok is false otherwise.
func (c *compiler) foldCtor(b *Builtin, argForms []*form) (v Value, ok bool) {
	if !facts(b.Name).foldable {
		return nil, false
	}
	args := make([]Value, len(argForms))
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
func (c *compiler) constArg(f *form) (Value, bool) {
	if v, ok := constData(f); ok {
		return v, true
	}
	if f.kind != fSym {
		return nil, false
	}
	if f.ns == "" {
		if _, _, local := c.sc.lookup(f.name); local {
			return nil, false
		}
		b, ok := c.builtins[f.name]
		return b, ok
	}
	if _, isNs := nsAliases[f.ns]; !isNs || f.ns == "memory" || f.ns == "mem" {
		return nil, false
	}
	b, ok := c.lookupBuiltin(f.ns, f.name)
	return b, ok
}

func (c *compiler) safeCompile(forms []*form) (body node, nslots int, err *Error) {
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(*Error)
			if !ok {
				e = &Error{Kind: KindInternal, Msg: fmt.Sprintf("internal error while compiling: %v", p)}
			}
			e.src = c.src
			err = e
		}
	}()
	body, nslots = c.compileProgram(forms)
	return body, nslots, nil
}
