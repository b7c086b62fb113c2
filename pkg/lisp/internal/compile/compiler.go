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
	// binder is the number the resolver gave the binding occurrence that
	// declared it (0: a name the compiler made)
	binder uint32
}

// localKey is how the compiler finds a local: by the binder number the
// resolver recorded for the symbol, which is what the symbol names; a
// symbol the compiler made has none (binder 0) and is found by its name.
type localKey struct {
	name   string
	binder uint32
}

// keyOf returns how the compiler finds the local symbol f names; ok is
// false when the resolver resolved f to something that is not a local
// (a special form, a global, a builtin, anything else).
func keyOf(f *syntax.Form) (k localKey, ok bool) {
	switch kind, id := resOf(f); kind {
	case resLocal, resBinder: // an as-> name's binding symbol is its value too
		return localKey{f.Name, id}, true
	case resNone:
		return localKey{name: f.Name}, true
	}
	return localKey{}, false
}

// is reports whether k finds the local name declared by binder.
func (k localKey) is(name string, binder uint32) bool {
	if k.binder != 0 {
		return binder == k.binder
	}
	return name == k.name
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
	// names are the loop's bindings (with slots); owned[i] is whether
	// recur updates binding i inline (opt_ownedbox.go); nil: none.
	names []binding
	owned []bool
	// sole is set by a walk's recur whose one argument besides the advance
	// is an owned update: the walk then runs it without the recur node
	sole *ownedArg
}

// scope is the compile-time view of one function activation.
type scope struct {
	parent  *scope
	locals  []localVar
	nslots  int
	capRefs []core.CapRef
	caps    []localKey // what each captured variable is
	// self is the fn's own name and its binder (self.name "": none)
	self  localKey
	recur *recurTarget
}

func (s *scope) declare(name string) int { return s.declareAs(name, 0) }

// declareAs declares local name with the binder the resolver gave it.
func (s *scope) declareAs(name string, binder uint32) int {
	slot := s.nslots
	s.nslots++
	s.locals = append(s.locals, localVar{name: name, slot: slot, binder: binder})
	return slot
}

// declareSym declares binding symbol p, with the binder the resolver
// recorded for it.
func (s *scope) declareSym(p *syntax.Form) int {
	k, id := resOf(p)
	if k != resBinder {
		id = 0
	}
	return s.declareAs(p.Name, id)
}

// binderOf returns the binder of local name as the scopes see it now
// (0: not a local, a fn's own name, or one the compiler made); the
// resolver's check (checkResolved) compares it with the resolver's.
func (s *scope) binderOf(name string) uint32 {
	for ; s != nil; s = s.parent {
		for i := len(s.locals) - 1; i >= 0; i-- {
			if s.locals[i].name == name {
				return s.locals[i].binder
			}
		}
		if s.self.name == name {
			return 0
		}
	}
	return 0
}

// hasBinder reports whether the local binder declared is in scope here
// (compiled code finds it by that number: lookup).
func (s *scope) hasBinder(binder uint32) bool {
	for ; s != nil; s = s.parent {
		for _, l := range s.locals {
			if l.binder == binder {
				return true
			}
		}
		if s.self.binder == binder {
			return true
		}
	}
	return false
}

// lookup returns where the local symbol f names lives: a slot of this
// activation's frame, a captured variable (captured now, on first use)
// or the fn itself. ok is false when f names no local.
func (s *scope) lookup(f *syntax.Form) (kind, idx int, ok bool) {
	k, ok := keyOf(f)
	if !ok {
		return 0, 0, false
	}
	return s.find(k)
}

func (s *scope) find(k localKey) (kind, idx int, ok bool) {
	for i := len(s.locals) - 1; i >= 0; i-- {
		if k.is(s.locals[i].name, s.locals[i].binder) {
			return refLocal, s.locals[i].slot, true
		}
	}
	if s.self.name != "" && k.is(s.self.name, s.self.binder) {
		return refSelf, 0, true
	}
	for i, c := range s.caps {
		if k.is(c.name, c.binder) {
			return refCap, i, true
		}
	}
	if s.parent == nil {
		return 0, 0, false
	}
	pk, pidx, ok := s.parent.find(k)
	if !ok {
		return 0, 0, false
	}
	s.capRefs = append(s.capRefs, core.CapRef{Kind: pk, Idx: pidx})
	s.caps = append(s.caps, k)
	return refCap, len(s.capRefs) - 1, true
}

// Compiler turns forms into nodes, resolving every symbol once.
type Compiler struct {
	Src       string
	Host      *core.Host
	Builtins  map[string]*core.Builtin
	Fusions   int // reduce pipelines compiled as one loop (opt_fuse.go)
	Walks     int // loops compiled as walks (opt_walkloop.go)
	SoleWalks int // walks whose one update runs without the recur node
	OwnedN    int // loop bindings owned by their loop (opt_ownedbox.go)

	IndexLoops  int  // index loops compiled also as walks (opt_indexloop.go)
	inIndexLoop bool // compiling an index loop's two versions
	// MemNames are the names memory holds when the program runs (nil for
	// none); the compile adds the names the program defs
	MemNames  map[string]bool
	ToolsUsed []string // tool names the program calls, resolved
	sc        *scope
	top       scope // the program's top-level scope
	lastProto *core.FnProto
	gensymN   int
	walk      *walkAlias // the walk loop being compiled (opt_walkloop.go)
	// countForm is the update form that is the whole body of the reducing
	// function being compiled, when it may count unboxed (opt_count.go)
	countForm *syntax.Form
	// Counts is the number of updates compiled to count unboxed
	Counts int
	// RecordSteps is the number of reducing functions whose update
	// reduce runs over host records without their call (opt_recordstep.go)
	RecordSteps int
	// PlainLoops turns off walk loops, owned bindings and transient loop
	// bindings (Options.plainLoops)
	PlainLoops bool
	// CheckResolve checks the resolver's answer for each symbol compiled
	// against the compiler's scopes (checkResolved); tests set it.
	CheckResolve bool
	// dispatch compiles one form (compileForm); SafeCompile installs it.
	// The special forms and the passes reach it through compile, so they
	// need not know the dispatch that chooses them.
	dispatch func(c *Compiler, f *syntax.Form, tail bool) core.Node
	res      resolver // resolves each top-level form before it is compiled
}

// compile compiles one form; tail reports whether it is in tail position
// for recur.
func (c *Compiler) compile(f *syntax.Form, tail bool) core.Node { return c.dispatch(c, f, tail) }

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

// constNode returns a node that yields v: for the constants programs use
// most (nil, booleans, small integers) one made at init and shared, else
// a node of its own.
func constNode(v core.Value) core.Node {
	switch x := v.(type) {
	case nil:
		return sharedConsts.null
	case bool:
		if x {
			return sharedConsts.yes
		}
		return sharedConsts.no
	case int64:
		if i := x - minSharedInt; i >= 0 && i < int64(len(sharedConsts.ints)) {
			return sharedConsts.ints[i]
		}
	}
	return newConstNode(v)
}

func newConstNode(v core.Value) core.Node { return func(*core.Frame) core.Value { return v } }

// minSharedInt is the least integer of sharedConsts.ints.
const minSharedInt = -1

// sharedConsts are the nodes constNode shares, made once and only read.
var sharedConsts = func() (s struct {
	null, yes, no core.Node
	ints          [34]core.Node // minSharedInt to 32
}) {
	s.null, s.yes, s.no = newConstNode(nil), newConstNode(true), newConstNode(false)
	for i := range s.ints {
		s.ints[i] = newConstNode(int64(i + minSharedInt))
	}
	return s
}()

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

// LookupBuiltin resolves ns/name to a builtin (ns may be "").
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

// operand is a call argument: a local's slot is read in place instead of
// through a node call.
type operand struct {
	slot int       // >= 0: a local's frame slot
	node core.Node // otherwise
}

// Get is small enough to inline. Its receiver is a value: a node that
// calls Get on an operand it captures then holds the operand in its own
// closure, where a pointer receiver would move each operand to the heap
// by itself (an allocation per operand of every compiled call).
func (o operand) Get(fr *core.Frame) core.Value {
	if o.slot >= 0 {
		return fr.Slots[o.slot]
	}
	return o.node(fr)
}

// operandOf classifies argument form f, compiled as nd.
func (c *Compiler) operandOf(f *syntax.Form, nd core.Node) operand {
	if f.Kind == syntax.FSym && f.Ns == "" {
		if kind, idx, ok := c.sc.lookup(f); ok && kind == refLocal {
			return operand{slot: idx}
		}
	}
	return operand{slot: -1, node: nd}
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

// walkAlias makes the compiler read (first xs) from the walk's item slot.
type walkAlias struct {
	xs               binding
	xsSlot, itemSlot int // xs's slot, the hidden item local's slot
	sc               *scope
}

// loopCursorSlot is a loop binding that may be advanced in place.
type loopCursorSlot struct {
	name      binding
	slot, own int
}

// ownedArg is a recur argument that updates an owned binding.
type ownedArg struct {
	slot     int           // the binding's slot
	op       byte          // '+', '-' or '*'
	x        operand       // the other operand
	xkw      *core.Keyword // with xslot: the other operand is (:xkw local)
	xslot    int
	xwalk    bool          // xslot is a walk's item: when unset, x computes it
	accFirst bool          // the binding is the first operand
	b        *core.Builtin // the builtin as written (inc, +, ...)
	unary    bool          // inc or dec: b takes the binding alone
	pos      core.Pos
}

// walkAdvance is how a walk advances xs when it walks a sequence: the
// recur computes (rest xs) / (next xs) at its place among the arguments.
type walkAdvance struct {
	item, xs int // the item and xs slots
	b        *core.Builtin
	pos      core.Pos
	at       int // the advance's index among the recur's arguments
}

// specialFormNames lists the special forms' names, from their one list
// (builtins.SpecialForms); specialForm (special.go) gives each its
// function.
var specialFormNames = func() []string {
	names := make([]string, len(builtins.SpecialForms))
	for i, f := range builtins.SpecialForms {
		names[i] = f.Name
	}
	return names
}()

// form constructors for macro-like rewrites.
func mkSym(name string, pos core.Pos) *syntax.Form {
	return &syntax.Form{Kind: syntax.FSym, Name: name, Pos: pos}
}

func mkVec(pos core.Pos, items ...*syntax.Form) *syntax.Form {
	return &syntax.Form{Kind: syntax.FVec, Pos: pos, Items: items}
}

// FormText renders a form back to source (for #fn[x y] printing).
func FormText(f *syntax.Form) string {
	switch f.Kind {
	case syntax.FSym:
		return f.SymText()
	case syntax.FLit:
		return core.PrStr(f.Val)
	case syntax.FVec, syntax.FList, syntax.FMap, syntax.FSet:
		parts := make([]string, len(f.Items))
		for i, it := range f.Items {
			parts[i] = FormText(it)
		}
		s := strings.Join(parts, " ")
		switch f.Kind {
		case syntax.FVec:
			return "[" + s + "]"
		case syntax.FList:
			return "(" + s + ")"
		case syntax.FMap:
			return "{" + s + "}"
		}
		return "#{" + s + "}"
	case syntax.FFnLit:
		parts := make([]string, len(f.Items))
		for i, it := range f.Items {
			parts[i] = FormText(it)
		}
		return "#(" + strings.Join(parts, " ") + ")"
	case syntax.FRegex:
		src := strings.ReplaceAll(f.Val.(string), `\`, `\\`)
		return "#\"" + strings.ReplaceAll(src, `"`, `\"`) + "\""
	}
	return "?"
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
		if !c.isBuiltin(f) {
			return nil, false
		}
		return c.Builtins[f.Name], true
	}
	if _, isNs := NsAliases[f.Ns]; !isNs || f.Ns == "memory" || f.Ns == "mem" {
		return nil, false
	}
	b, ok := c.LookupBuiltin(f.Ns, f.Name)
	return b, ok
}

// bindingPairs checks a binding vector and returns its forms.
func (c *Compiler) bindingPairs(f *syntax.Form, name string) []*syntax.Form {
	if len(f.Items) < 2 || f.Items[1].Kind != syntax.FVec {
		c.fail(core.KindAnalysis, f.Pos, fmt.Sprintf("write (%s [name value ...] body)", name), "%s requires a binding vector", name)
	}
	b := f.Items[1].Items
	if len(b)%2 != 0 {
		c.fail(core.KindAnalysis, f.Items[1].Pos, "", "%s binding vector requires an even number of forms", name)
	}
	return b
}

// resolver is the resolver's state; the Compiler keeps one and reuses its
// scope stack for each top-level form.
type resolver struct {
	c     *Compiler
	names []resName // the locals in scope, innermost last
	next  uint32    // the next binder's number
	// buf backs names while at most len(buf) locals are in scope at once
	buf [8]resName
}

// binds reports whether name is a local, captured or self name of this
// scope or an enclosing one (for a symbol the compiler made, which has
// no binder number).
func (s *scope) binds(name string) bool {
	for ; s != nil; s = s.parent {
		for _, l := range s.locals {
			if l.name == name {
				return true
			}
		}
		for _, c := range s.caps {
			if c.name == name {
				return true
			}
		}
		if s.self.name == name && name != "" {
			return true
		}
	}
	return false
}

func mkList(pos core.Pos, items ...*syntax.Form) *syntax.Form {
	return &syntax.Form{Kind: syntax.FList, Pos: pos, Items: items}
}

// threadStep inserts x into step as first (or last) argument.
func threadStep(step, x *syntax.Form, last bool) *syntax.Form {
	if step.Kind == syntax.FList && len(step.Items) > 0 {
		items := make([]*syntax.Form, 0, len(step.Items)+1)
		if last {
			items = append(append(items, step.Items...), x)
		} else {
			items = append(append(append(items, step.Items[0]), x), step.Items[1:]...)
		}
		return &syntax.Form{Kind: syntax.FList, Pos: step.Pos, Items: items}
	}
	return mkList(step.Pos, step, x)
}

// isBuiltin reports whether sym is an unqualified symbol that names a
// builtin at its position.
func (c *Compiler) isBuiltin(sym *syntax.Form) bool {
	if sym.Kind != syntax.FSym || sym.Ns != "" {
		return false
	}
	switch k, _ := resOf(sym); k {
	case resBuiltin:
		return true
	case resNone:
		_, ok := c.Builtins[sym.Name]
		return ok && !c.bound(sym.Name)
	}
	return false
}

// bound reports whether name is a local of the scope being compiled (or
// an enclosing one), without capturing it: what a symbol the compiler
// made (unresolved) names.
func (c *Compiler) bound(name string) bool {
	if c == nil || c.sc == nil {
		return false
	}
	return c.sc.binds(name)
}
