package core

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"
	"unicode/utf8"
)

// CheckEvery is how many steps pass between ctx/deadline checks.
const CheckEvery = 1024

// Thread is the per-run evaluation state: limits, counters, the value
// stack, memory and host hooks. A Thread is used by one goroutine; pmap
// branches get child threads. Builtins receive the Thread and use its
// methods to call functions, charge the budgets and raise errors.
type Thread struct {
	Ctx context.Context
	// Deadline ends the run (zero: none). It is compared with the
	// monotonic clock; its wall clock reading may be off by steps of the
	// system clock (the run's start may be read on the monotonic clock
	// alone), so DeadlineCtx converts it before handing it on.
	Deadline  time.Time
	TimeoutMs int64
	Steps     int64
	NextCheck int64
	MaxSteps  int64
	// Alloc is an upper bound of the bytes the program holds (retain.go);
	// floor is the part of it that no scope's end may give back.
	Alloc    int64
	floor    int64
	MaxMem   int64
	Depth    int
	MaxDepth int
	loops    int64
	MaxLoops int64

	stack  []Value
	Sp     int
	frames []*Frame // the frame of each call depth, reused by later calls
	// frame0 and frameBuf back the first frames, so a run that calls no
	// function allocates no frame.
	frame0   Frame
	frameBuf [2]*Frame
	CallPos  Pos
	// RecurArgs holds the values of the recur being executed.
	RecurArgs []Value

	Host *Host
	// Mem is this thread's working memory (committed only on success); nil
	// while empty (SetMem makes it).
	Mem map[string]Value
	// child is true for pmap/pcalls branches: their defs and prints are dropped.
	child bool
	// Prints collects println lines.
	Prints []string
	// toolCtx is ctx with the run's deadline, made on the first tool call.
	toolCtx    context.Context
	ToolCancel context.CancelFunc
	// calls is set by DeadlineCtx: the run called a tool or host function
	// or started pmap branches
	calls bool
	// boxer boxes arithmetic results (opt_numbox.go).
	boxer
	// shapes interns the shapes of the wide maps AssocRecord builds and
	// holds their slabs; nil until the first.
	shapes *ShapeCache
}

// DeadlineCtx returns the run's context bounded by the run's deadline,
// carrying the run's meter (for tools, host calls and pmap branches); it
// is created on first use, and so is the run's own meter (Host.OwnMeter).
// pmap branches share their parent's host: the parent makes the meter
// here before it starts them.
func (th *Thread) DeadlineCtx() context.Context {
	th.calls = true
	if th.toolCtx == nil {
		ctx := th.Ctx
		if h := th.Host; h != nil && h.OwnMeter && h.Meter == nil {
			h.Meter = NewMeter(h.MeterLimit, "")
			ctx = WithMeter(ctx, h.Meter)
		}
		if th.Deadline.IsZero() {
			th.toolCtx = ctx
		} else {
			// the deadline as the wall clock reads it now: Deadline
			// may count from an instant read on the monotonic clock
			// alone (see Thread.Deadline)
			d := time.Now()
			d = d.Add(th.Deadline.Sub(d))
			th.toolCtx, th.ToolCancel = context.WithDeadline(ctx, d)
		}
	}
	return th.toolCtx
}

// StartedCalls reports whether the run asked for its tool context
// (DeadlineCtx): it called a tool or host function or started pmap
// branches, which may hold the Thread or its host beyond the call.
func (th *Thread) StartedCalls() bool { return th.calls }

// Context returns the run's context (pass it to anything that blocks).
func (th *Thread) Context() context.Context { return th.Ctx }

// Pos returns the position of the call being evaluated.
func (th *Thread) Pos() Pos { return th.CallPos }

// Tick counts one evaluation step and checks the limits every checkEvery
// steps.
func (th *Thread) Tick() {
	th.Steps++
	if th.Steps >= th.NextCheck {
		th.slowCheck()
	}
}

// ticks counts n evaluation steps at once (a chunk of work done in Go).
func (th *Thread) ticks(n int) {
	th.Steps += int64(n)
	if th.Steps >= th.NextCheck {
		th.slowCheck()
	}
}

func (th *Thread) slowCheck() {
	th.NextCheck = th.Steps + CheckEvery
	if th.MaxSteps > 0 && th.Steps > th.MaxSteps {
		panic(&Error{Kind: KindStepLimit, Pos: th.CallPos, Msg: fmt.Sprintf("step limit exceeded (%d evaluation steps)", th.MaxSteps)})
	}
	if err := th.Ctx.Err(); err != nil {
		th.RaiseCtx(err)
	}
	if th.toolCtx != nil {
		if err := th.toolCtx.Err(); err != nil {
			th.RaiseCtx(err)
		}
	}
	if !th.Deadline.IsZero() && time.Now().After(th.Deadline) {
		panic(&Error{Kind: KindTimeout, Pos: th.CallPos, Msg: fmt.Sprintf("execution exceeded %dms limit", th.TimeoutMs), Err: context.DeadlineExceeded})
	}
}

// RaiseCtx ends the run for the context error err: timeout when a
// deadline passed, canceled otherwise. The message names whose deadline
// it was: the program's own time limit, or the caller's context ending
// first.
func (th *Thread) RaiseCtx(err error) {
	if err == context.DeadlineExceeded {
		msg := fmt.Sprintf("execution exceeded %dms limit", th.TimeoutMs)
		if th.Deadline.IsZero() || time.Now().Before(th.Deadline) {
			msg = "execution stopped at the caller's deadline"
		}
		panic(&Error{Kind: KindTimeout, Pos: th.CallPos, Msg: msg, Err: err})
	}
	panic(&Error{Kind: KindCanceled, Pos: th.CallPos, Msg: "execution canceled", Err: err})
}

// AllocSlots charges n collection slots to the memory the program holds
// (retain.go).
func (th *Thread) AllocSlots(n int) {
	th.Alloc += int64(n) * SlotBytes
	if th.MaxMem > 0 && th.Alloc > th.MaxMem {
		th.MemLimit()
	}
}

// AllocBytes charges n bytes of string data to the memory limit.
func (th *Thread) AllocBytes(n int) {
	th.Alloc += int64(n)
	if th.MaxMem > 0 && th.Alloc > th.MaxMem {
		th.MemLimit()
	}
}

// MemLimit ends the run with memory_limit.
func (th *Thread) MemLimit() {
	panic(&Error{Kind: KindMemory, Pos: th.CallPos, Msg: fmt.Sprintf("memory limit exceeded: the program holds more than %d bytes", th.MaxMem),
		Hint: "keep less data at once: filter or aggregate before collecting, (take n ...) instead of whole sequences, no huge strings"})
}

// Alloca reserves n zeroed slots on the value stack.
func (th *Thread) Alloca(n int) []Value {
	s := th.AllocArgs(n)
	// element stores: for the few slots of a call they are much cheaper
	// than clear's runtime call (memclrHasPointers with its bulk barrier);
	// a range loop would be compiled into that call
	for i := 0; i < len(s); i++ {
		s[i] = nil
	}
	return s
}

// AllocArgs reserves n slots the caller overwrites at once (not zeroed).
func (th *Thread) AllocArgs(n int) []Value {
	if th.Sp+n > len(th.stack) {
		size := 2 * len(th.stack)
		if size < th.Sp+n+32 {
			size = th.Sp + n + 32
		}
		th.stack = make([]Value, size)
	}
	s := th.stack[th.Sp : th.Sp+n : th.Sp+n]
	th.Sp += n
	return s
}

// Raise panics with an error of the given kind at the current position;
// the run's edge recovers it. Builtins use it for every error.
func (th *Thread) Raise(kind Kind, format string, args ...any) {
	panic(&Error{Kind: kind, Pos: th.CallPos, Msg: fmt.Sprintf(format, args...)})
}

// RaiseHint is Raise with a hint for the model.
func (th *Thread) RaiseHint(kind Kind, hint, format string, args ...any) {
	panic(&Error{Kind: kind, Pos: th.CallPos, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

// TypeError raises "fn: expected want, got <preview> (arg n)"; argN is
// 1-based, 0 omits the arg note.
func (th *Thread) TypeError(fn, want string, got Value, argN int) {
	msg := fmt.Sprintf("%s: expected %s, got %s", fn, want, ErrorPreview(got))
	if argN > 0 {
		msg += fmt.Sprintf(" (arg %d)", argN)
	}
	panic(&Error{Kind: KindType, Pos: th.CallPos, Msg: msg})
}

// ArityError raises "name expects want args, got n".
func (th *Thread) ArityError(name, want string, got int) {
	panic(&Error{Kind: KindArity, Pos: th.CallPos, Msg: fmt.Sprintf("%s expects %s, got %d", name, want, got)})
}

// preview renders a value for an error message: the type for nil-like
// values, else a pr-str preview of at most 80 chars.
func ErrorPreview(v Value) string {
	if v == nil {
		return "nil"
	}
	s := Sprint(v, PrintOptions{MaxItems: 10, MaxString: 60, MaxLen: 100})
	if utf8.RuneCountInString(s) > 80 {
		s = string([]rune(s)[:77]) + "..."
	}
	switch v.(type) {
	case *Vector, *Map, HostMap, *Set, string, *Keyword, *LazySeq:
		return TypeName(v) + " " + s
	}
	return s
}

// ArgsText is "1 arg" or "n args".
func ArgsText(n int) string {
	if n == 1 {
		return "1 arg"
	}
	return fmt.Sprintf("%d args", n)
}

// arityText renders the accepted arg counts of a builtin.
func (b *Builtin) ArityDesc() string {
	if b.ArityText != "" {
		return b.ArityText
	}
	switch {
	case b.MaxArgs < 0:
		return fmt.Sprintf("%d or more args", b.MinArgs)
	case b.MinArgs == b.MaxArgs:
		return ArgsText(b.MinArgs)
	case b.MaxArgs == b.MinArgs+1:
		return fmt.Sprintf("%d or %d args", b.MinArgs, b.MaxArgs)
	}
	return fmt.Sprintf("%d to %d args", b.MinArgs, b.MaxArgs)
}

// Call calls any callable value with args (args is not retained).
func (th *Thread) Call(f Value, args ...Value) Value {
	return th.withArgs(func(th *Thread, a []Value) Value { return th.CallArgs(f, a) }, args...)
}

// withArgs copies args onto the value stack, calls fn with them there
// and pops them (args is not retained).
func (th *Thread) withArgs(fn BuiltinFunc, args ...Value) Value {
	mark := th.Sp
	a := th.AllocArgs(len(args))
	//lint:ignore S1001 a call to typedslicecopy costs more than one or two stores
	for i, x := range args {
		a[i] = x
	}
	v := fn(th, a)
	th.Sp = mark
	return v
}

// Call1 calls f with one argument without allocating.
func (th *Thread) Call1(f Value, x Value) Value {
	if c, ok := f.(*Closure); ok {
		if v, ok := th.call1Closure(c, x); ok {
			return v
		}
	}
	if b, ok := f.(*Builtin); ok && b.MinArgs <= 1 && (b.MaxArgs < 0 || b.MaxArgs >= 1) {
		th.Tick()
		if b.Fn1 != nil {
			return b.Fn1(th, x)
		}
		return SlowCall1(th, b, x)
	}
	if k, ok := f.(*Keyword); ok {
		th.Tick()
		return KwGet(x, k)
	}
	return th.Call(f, x)
}

// Call2 calls f with two arguments without allocating.
func (th *Thread) Call2(f Value, x, y Value) Value {
	switch c := f.(type) {
	case *Closure:
		if v, ok := th.call2Closure(c, x, y); ok {
			return v
		}
	case *Builtin:
		if c.Fn2 != nil {
			th.Tick()
			return c.Fn2(th, x, y)
		}
	}
	return th.Call(f, x, y)
}

// call dispatches on the callable's type. args lives on the value stack.
func (th *Thread) CallArgs(f Value, args []Value) Value {
	th.Tick()
	switch fn := f.(type) {
	case *Closure:
		return th.callClosure(fn, args)
	case *Builtin:
		if len(args) < fn.MinArgs || (fn.MaxArgs >= 0 && len(args) > fn.MaxArgs) {
			th.ArityError(fn.Name, fn.ArityDesc(), len(args))
		}
		return fn.Fn(th, args)
	case *Keyword:
		switch len(args) {
		case 1:
			return GetKey(args[0], fn, nil)
		case 2:
			return GetKey(args[0], fn, args[1])
		}
		th.ArityError(":"+fn.Name, "1 or 2 args", len(args))
	case HostMap:
		switch len(args) {
		case 1:
			v, _ := fn.Get(args[0])
			return v
		case 2:
			if v, ok := fn.Get(args[0]); ok {
				return v
			}
			return args[1]
		}
		th.ArityError("a map", "1 or 2 args", len(args))
	case *Map:
		switch len(args) {
		case 1:
			v, _ := fn.Get(args[0])
			return v
		case 2:
			if v, ok := fn.Get(args[0]); ok {
				return v
			}
			return args[1]
		}
		th.ArityError("a map", "1 or 2 args", len(args))
	case *Set:
		if len(args) != 1 {
			th.ArityError("a set", "1 arg", len(args))
		}
		if fn.Has(args[0]) {
			return args[0]
		}
		return nil
	case *Vector:
		if len(args) != 1 {
			th.ArityError("a vector", "1 arg", len(args))
		}
		i, ok := args[0].(int64)
		if !ok {
			th.TypeError("vector", "an integer index", args[0], 1)
		}
		if i < 0 || i >= int64(fn.Len()) {
			th.Raise(KindValue, "index %d out of bounds for vector of %d items", i, fn.Len())
		}
		return fn.At(int(i))
	}
	panic(&Error{Kind: KindNotCallable, Pos: th.CallPos, Msg: "not callable: " + ErrorPreview(f)})
}

// GetKey implements (get m k default) on any value: maps (flex), vectors
// by index, nil and other values give the default.
func GetKey(m Value, k Value, dflt Value) Value {
	switch c := m.(type) {
	case *Map:
		if v, ok := c.Get(k); ok {
			return v
		}
	case HostMap:
		if v, ok := c.Get(k); ok {
			return v
		}
	case *Vector:
		if i, ok := k.(int64); ok && i >= 0 && i < int64(c.Len()) {
			return c.At(int(i))
		}
	case *Set:
		if c.Has(k) {
			return k
		}
	}
	return dflt
}

func (th *Thread) frameAt(depth int) *Frame {
	if th.frames == nil {
		th.frame0.Th = th
		th.frameBuf[0] = &th.frame0
		th.frames = th.frameBuf[:1]
	}
	for len(th.frames) <= depth {
		th.frames = append(th.frames, &Frame{Th: th})
	}
	return th.frames[depth]
}

// callClosure runs a compiled function. Frames are pooled per depth and
// slots live on the value stack: closures capture by value, so no frame
// outlives its call.
func (th *Thread) callClosure(c *Closure, args []Value) Value {
	ar := c.Proto.pick(len(args))
	if ar == nil {
		th.ArityError(c.Proto.displayName(), c.Proto.ArityText(), len(args))
	}
	mark, amark := th.Sp, th.Alloc
	slots := th.Alloca(ar.Nslots)
	fr := th.Enter(c, slots)
	ar.bindParams(fr, args)
	v := th.RunBody(fr, ar)
	th.Sp = mark
	if th.Alloc != amark {
		th.Credit(amark, args, v)
	}
	return v
}

// Enter pushes a call frame for c with the given slots.
func (th *Thread) Enter(c *Closure, slots []Value) *Frame {
	th.Depth++
	if th.Depth > th.MaxDepth {
		panic(&Error{Kind: KindDepthLimit, Pos: th.CallPos, Msg: fmt.Sprintf("depth limit exceeded (%d nested calls)", th.MaxDepth),
			Hint: "use loop/recur or reduce instead of deep recursion"})
	}
	fr := th.frameAt(th.Depth)
	fr.Slots = slots
	fr.Caps = c.Caps
	fr.Self = c
	return fr
}

// RunBody runs an arity's body in fr (entered with enter) until it
// returns, handling fn-level recur, and pops the frame. The caller
// restores th.sp.
func (th *Thread) RunBody(fr *Frame, ar *Arity) Value {
	v := th.runArity(fr, ar)
	th.Depth--
	return v
}

// runArity runs an arity's body in fr until it returns (fn-level recur
// included); the frame stays entered.
func (th *Thread) runArity(fr *Frame, ar *Arity) Value {
	base := th.Sp
	for {
		v := ar.Body(fr)
		if _, again := v.(*RecurMark); again {
			th.Tick()
			th.CountLoop()
			ar.bindRecur(fr, th.RecurArgs)
			th.Sp = base
			continue
		}
		return v
	}
}

// loopCaller calls one function many times from a builtin's loop (reduce,
// map, filter). A closure whose arity for that many arguments is plain
// symbols is entered once and its frame reused: each call writes the
// arguments into the same slots, clears the others and runs the body.
// Calls are sequential and a frame never outlives its call, so this is
// not observable; depth and steps count as for separate calls.
type loopCaller struct {
	th   *Thread
	f    Value
	kw   *Keyword // f as a keyword called with one argument
	ar   *Arity   // nil: call f the general way
	fr   *Frame
	base int // th.sp after the slots
	mark int // th.sp before them
}

// NewLoopCaller prepares calls of f with n arguments; call end when done.
func (th *Thread) NewLoopCaller(f Value, n int) loopCaller {
	lc := loopCaller{th: th, f: f}
	if k, ok := f.(*Keyword); ok && n == 1 {
		lc.kw = k
		return lc
	}
	c, ok := f.(*Closure)
	if !ok || n >= len(c.Proto.Direct) || c.Proto.Direct[n] == nil {
		return lc
	}
	lc.ar = c.Proto.Direct[n]
	lc.mark = th.Sp
	lc.fr = th.Enter(c, th.AllocArgs(lc.ar.Nslots))
	lc.base = th.Sp
	return lc
}

// End pops the reused frame.
func (lc *loopCaller) End() {
	if lc.ar != nil {
		lc.th.Depth--
		lc.th.Sp = lc.mark
		lc.ar = nil
	}
}

// Call1 calls the function with one argument.
func (lc *loopCaller) Call1(x Value) Value { return lc.Call(1, x, nil) }

// Call2 calls the function with two arguments.
func (lc *loopCaller) Call2(x, y Value) Value { return lc.Call(2, x, y) }

// Call calls f with n (1 or 2) arguments: x, and y when n is 2.
func (lc *loopCaller) Call(n int, x, y Value) Value {
	th := lc.th
	if lc.ar == nil {
		switch {
		case lc.kw != nil:
			th.Tick() // as Call1
			return KwGet(x, lc.kw)
		case n == 1:
			return th.Call1(lc.f, x)
		}
		return th.Call2(lc.f, x, y)
	}
	th.Tick()
	s := lc.fr.Slots
	s[0] = x
	if n == 2 {
		s[1] = y
	}
	for i := n; i < len(s); i++ {
		s[i] = nil
	}
	th.Sp = lc.base
	amark := th.Alloc
	acc, grows := x.(*Map) // a reduce's transient accumulator
	n0 := 0
	if grows = grows && acc.Edit != nil; grows {
		acc.Edit.writes, n0 = 0, acc.Len()
	}
	v := th.runArity(lc.fr, lc.ar)
	if th.Alloc != amark {
		if m, ok := v.(*Map); ok && grows && m == acc && m.Edit != nil {
			th.creditGrown(amark, m, n0, y)
		} else {
			th.credit2(amark, x, y, v)
		}
	}
	return v
}

// call1Closure and call2Closure are the HOF fast path: a closure whose
// arity for that many args is plain symbols gets its arguments written
// straight into its slots (no argument copy, no arity search).
func (th *Thread) call1Closure(c *Closure, x Value) (Value, bool) {
	return th.callDirect(c, 1, x, nil)
}

func (th *Thread) call2Closure(c *Closure, x, y Value) (Value, bool) {
	return th.callDirect(c, 2, x, y)
}

// callDirect is call1Closure and call2Closure: n (1 or 2) arguments, x
// and, when n is 2, y.
func (th *Thread) callDirect(c *Closure, n int, x, y Value) (Value, bool) {
	ar := c.Proto.Direct[n]
	if ar == nil {
		return nil, false
	}
	th.Tick()
	mark, amark := th.Sp, th.Alloc
	slots := th.AllocArgs(ar.Nslots)
	slots[0] = x
	if n == 2 {
		slots[1] = y
	}
	for i := n; i < len(slots); i++ {
		slots[i] = nil
	}
	v := th.RunBody(th.Enter(c, slots), ar)
	th.Sp = mark
	if th.Alloc != amark {
		th.credit2(amark, x, y, v)
	}
	return v, true
}

// CountLoop counts one loop iteration against LoopLimit.
func (th *Thread) CountLoop() {
	th.loops++
	if th.MaxLoops > 0 && th.loops > th.MaxLoops {
		panic(&Error{Kind: KindLoopLimit, Pos: th.CallPos, Msg: fmt.Sprintf("loop limit exceeded (%d iterations)", th.MaxLoops)})
	}
}

// Seq returns the items of a collection as a slice (do not modify it):
// vectors as is, nil as empty, sets and lazy seqs realised, maps as [k v]
// entries in key order, strings as 1-char strings. fn and argN name the
// caller in the type error raised for other values.
func (th *Thread) Seq(coll Value, fn string, argN int) []Value {
	switch c := MapValue(coll).(type) {
	case nil:
		return nil
	case *Vector:
		return c.Items()
	case *Set:
		th.AllocSlots(c.Len())
		return c.Items()
	case *Map:
		es := c.Entries()
		th.AllocSlots(3 * len(es))
		out := make([]Value, len(es))
		for i, e := range es {
			out[i] = &Vector{Slots: []Value{e.Key, e.Val}}
		}
		return out
	case string:
		th.AllocSlots(len(c))
		out := make([]Value, 0, len(c))
		for _, r := range c {
			out = append(out, string(r))
		}
		return out
	case *LazySeq:
		return c.realiseAll(th)
	}
	th.TypeError(fn, "a collection", coll, argN)
	return nil
}

// Each calls fn for each item of coll in order until fn returns false.
// Lazy seqs are realised only as far as needed, so Each works on infinite
// sequences.
func (th *Thread) Each(coll Value, fname string, argN int, fn func(Value) bool) {
	if s, ok := coll.(*LazySeq); ok && s.Stream {
		for i := 0; ; i++ {
			v, ok := s.streamNth(th, i)
			if !ok || !fn(v) {
				return
			}
		}
	}
	if s, ok := coll.(*LazySeq); ok {
		for i := 0; ; {
			items, _ := s.realise(th, i+1)
			if i >= len(items) {
				return
			}
			for ; i < len(items); i++ {
				if !fn(items[i]) {
					return
				}
			}
		}
	}
	if v, ok := coll.(*Vector); ok {
		items := v.ItemsOf()
		for i := range items.Len() {
			if !fn(items.At(i)) {
				return
			}
		}
		return
	}
	for _, v := range th.Seq(coll, fname, argN) {
		if !fn(v) {
			return
		}
	}
}

// Println appends a println line (capped at 2000 chars + "...").
func (th *Thread) Println(line string) {
	if utf8.RuneCountInString(line) > 2000 {
		line = string([]rune(line)[:2000]) + "..."
	}
	th.AllocBytes(len(line))
	th.Prints = append(th.Prints, line)
	th.keep()
}

// Keyword returns the run's interned keyword for name.
func (th *Thread) Keyword(name string) *Keyword { return th.Host.Keyword(name) }

// MakeVector wraps items as a vector, charging the memory limit.
func (th *Thread) MakeVector(items []Value) *Vector {
	if len(items) == 0 {
		return EmptyVector
	}
	th.allocVector(len(items))
	return &Vector{Slots: items}
}

// MakeString charges s to the memory limit and returns it.
func (th *Thread) MakeString(s string) string {
	th.AllocBytes(len(s))
	return s
}

// SlowCall1 calls b.Fn with one argument on the value stack. It and
// slowCall2 are the fallback of every fixed-arity entry, so they store
// the arguments directly rather than through withArgs's slice.
func SlowCall1(th *Thread, b *Builtin, x Value) Value {
	mark := th.Sp
	a := th.AllocArgs(1)
	a[0] = x
	v := b.Fn(th, a)
	th.Sp = mark
	return v
}

// SlowCall2 calls b.Fn with two arguments on the value stack.
func SlowCall2(th *Thread, b *Builtin, x, y Value) Value {
	mark := th.Sp
	a := th.AllocArgs(2)
	a[0], a[1] = x, y
	v := b.Fn(th, a)
	th.Sp = mark
	return v
}

// CallBuiltin3 calls b.Fn with three arguments on the value stack.
func CallBuiltin3(th *Thread, b *Builtin, x, y, z Value) Value { return th.withArgs(b.Fn, x, y, z) }

// DepthLimit raises the depth-limit error for recursive data walks.
func (th *Thread) DepthLimit(name string) {
	panic(&Error{Kind: KindDepthLimit, Pos: th.CallPos, Msg: fmt.Sprintf("%s: depth limit exceeded (%d nested levels)", name, th.MaxDepth)})
}

// CheckGrowth raises the memory limit error when a string being built
// (n bytes so far, charged when done) would not fit the budget.
func (th *Thread) CheckGrowth(n int) {
	if th.MaxMem > 0 && th.Alloc+int64(n) > th.MaxMem {
		th.MemLimit()
	}
}

// RunTop evaluates the compiled program, recovering errors and signals,
// then realises lazy seqs in the result under the same limits.
func (th *Thread) RunTop(body Node, nslots int) (v Value, sig *ReturnSignal, err *Error) {
	fr := th.frameAt(0)
	fr.Slots = th.Alloca(nslots)
	v, sig, err = th.Protect(func() Value { return body(fr) })
	if err != nil {
		return v, sig, err
	}
	target := v
	if sig != nil {
		target = sig.Val
	}
	switch target.(type) {
	case nil, bool, int64, float64, string, *Keyword:
		return v, sig, nil // nothing to realise
	}
	if _, _, rerr := th.Protect(func() Value { th.RealiseDeep(target); return nil }); rerr != nil {
		return nil, nil, rerr
	}
	return v, sig, nil
}

// Protect runs fn, turning panics into an error or a return/fail signal.
func (th *Thread) Protect(fn func() Value) (v Value, sig *ReturnSignal, err *Error) {
	defer func() {
		if p := recover(); p != nil {
			v = nil
			if s, ok := p.(*ReturnSignal); ok {
				sig = s
				return
			}
			err = th.RecoverValue(p)
		}
	}()
	return fn(), nil, nil
}

// RecoverValue turns a recovered panic into an *Error (signals → nil).
func (th *Thread) RecoverValue(p any) *Error {
	switch x := p.(type) {
	case *Error:
		return x
	case *ReturnSignal:
		return nil
	case *HostDataError:
		return &Error{Kind: KindType, Pos: th.CallPos, Msg: x.Error(), Err: x}
	}
	return &Error{Kind: KindInternal, Pos: th.CallPos, Msg: fmt.Sprintf("internal error: %v", p), Err: fmt.Errorf("%v\n%s", p, debug.Stack())}
}
