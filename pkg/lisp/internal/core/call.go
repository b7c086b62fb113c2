package core

import (
	"fmt"
	"unicode/utf8"
)

// Calls: a Thread calling closures and builtins (Call, Call1, Call2,
// CallArgs), loops calling a function per item (loopCaller), and walking a
// collection's items (Seq, Each). Type errors name the value they got
// (ErrorPreview).

// TypeError raises "fn: expected want, got <preview> (arg n)"; argN is
// 1-based, 0 omits the arg note.
func (th *Thread) TypeError(fn, want string, got Value, argN int) {
	msg := fmt.Sprintf("%s: expected %s, got %s", fn, want, ErrorPreview(got))
	if argN > 0 {
		msg += fmt.Sprintf(" (arg %d)", argN)
	}
	panic(&Error{Kind: KindType, Pos: th.CallPos, Msg: msg})
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

// Call calls any callable value with args (args is not retained).
func (th *Thread) Call(f Value, args ...Value) Value {
	return th.withArgs(func(th *Thread, a []Value) Value { return th.CallArgs(f, a) }, args...)
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
	acc, n0 := growing(x)
	v := th.runArity(lc.fr, lc.ar)
	if th.Alloc != amark {
		th.creditCall(amark, x, y, v, acc, n0)
	}
	return v
}

// Step does for the accumulator m and the host record recs[i] what a
// call of the function does, with step (its FnProto.RecordStep, which
// counts the call's steps and credits what it charges: StepMark,
// StepCredit) instead of the body; false when step did nothing (the
// caller then calls the function).
func (lc *loopCaller) Step(step func(*Thread, *Map, []map[string]any, int) (Value, bool), m *Map, recs []map[string]any, i int) (Value, bool) {
	if lc.ar == nil {
		return nil, false // a call that enters its own frame (and checks the depth)
	}
	return step(lc.th, m, recs, i)
}

// StepMark starts a record step that may charge memory (an assoc into
// the accumulator m) as Call starts a call given m: the mark to credit
// from and m's count.
func (th *Thread) StepMark(m *Map) (mark int64, n0 int) {
	_, n0 = growing(m)
	return th.Alloc, n0
}

// StepCredit ends a record step started by StepMark that returned v: what
// it charged is credited as Call credits a call given m and the record
// recs[i].
func (th *Thread) StepCredit(mark int64, m *Map, n0 int, recs []map[string]any, i int, v Value) {
	if th.Alloc == mark {
		return
	}
	var acc *Map // growing(m) at StepMark, whose writes count from there
	if m.Edit != nil {
		acc = m
	}
	th.creditCall(mark, m, recordAt(&recs[i]), v, acc, n0)
}

// growing returns x when it is a reduce's transient accumulator (nil
// otherwise), its writes counted from now (EditToken.writes), and its
// count: what creditCall needs to credit a map grown in place.
func growing(x Value) (*Map, int) {
	acc, ok := x.(*Map)
	if !ok || acc.Edit == nil {
		return nil, 0
	}
	acc.Edit.writes = 0
	return acc, acc.Len()
}

// creditCall credits what a call given x and y that returned v charged
// since mark: the transient accumulator acc (growing) grown in place by
// what was written to it, anything else by what v holds beyond x and y.
func (th *Thread) creditCall(mark int64, x, y, v Value, acc *Map, n0 int) {
	if m, ok := v.(*Map); ok && acc != nil && m == acc && m.Edit != nil {
		th.creditGrown(mark, m, n0, y)
	} else {
		th.credit2(mark, x, y, v)
	}
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

// SeqItems is Seq for a loop that reads the items one by one: a vector's
// items as itemsOf (a host vector's records read in place), anything else
// as Seq gives it.
func (th *Thread) SeqItems(coll Value, fn string, argN int) ItemsOf {
	if v, ok := coll.(*Vector); ok {
		return v.ItemsOf()
	}
	return ItemsOf{Items: th.Seq(coll, fn, argN)}
}
