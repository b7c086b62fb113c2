package core

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"sync"
	"time"
)

// The Thread runs one program: its limits (steps, depth, memory, time),
// its errors and its allocations. A Thread calls builtins, whose signature
// takes the Thread, and closures, whose frames hold it: those types refer to
// one another, so they are declared here with the Thread. The calls
// themselves are call.go, function values' arities fn.go.

// CheckEvery is how many steps pass between ctx/deadline checks.
const CheckEvery = 1024

// clockBase is a fixed instant with a monotonic clock reading, set once.
var clockBase = time.Now()

// Clock returns the time since a fixed instant (clockBase): one read of
// the monotonic clock, where time.Now reads the wall clock too (on the
// shared machines the benchmarks run on, a clock read is a sizeable part
// of a tiny run). A run's start and its deadline (Thread.Deadline) are
// such readings; a deadline handed outside the run is converted to the
// wall clock (Thread.DeadlineCtx), from which Clock differs by any step of
// the system clock since clockBase.
func Clock() time.Duration { return time.Since(clockBase) }

// Thread is the per-run evaluation state: limits, counters, the value
// stack, memory and host hooks. A Thread is used by one goroutine; pmap
// branches get child threads. Builtins receive the Thread and use its
// methods to call functions, charge the budgets and raise errors.
type Thread struct {
	Ctx context.Context
	// Deadline ends the run (zero: none): the Clock reading at which it
	// does. It is a reading of the monotonic clock alone, so DeadlineCtx
	// converts it to the wall clock before handing it on.
	Deadline  time.Duration
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
	// while empty (SetMem makes it). With MemShared set it is the run's
	// starting memory, read in place: the first write (SetMem) copies it.
	Mem map[string]Value
	// MemShared says that Mem is not the thread's own to write (SetMem).
	MemShared bool
	// child is true for pmap/pcalls branches: their defs and prints are dropped.
	child bool
	// Prints collects println lines.
	Prints []string
	// toolCtx is ctx with the run's deadline, made on the first tool call.
	toolCtx    context.Context
	ToolCancel context.CancelFunc
	// branched is set by RunBranches: the run started pmap or pcalls
	// branches, child Threads sharing its Host
	branched bool
	// boxer boxes arithmetic results (opt_numbox.go).
	boxer
	// shapes interns the shapes of the wide maps AssocRecord builds and
	// holds their slabs; nil until the first.
	shapes *ShapeCache
}

// Frame is the activation of a compiled function (or of the top level).
type Frame struct {
	Th    *Thread
	Slots []Value
	Caps  []Value
	Self  *Closure
}

// Node is a compiled expression: it evaluates in a frame.
type Node func(fr *Frame) Value

// Binder stores a value into a pattern's slots.
type Binder func(fr *Frame, v Value)

// FnProto is a compiled fn form: its arities, name and captures, shared
// by every closure made from it.
type FnProto struct {
	// LinearAcc: the first param is used only as the map argument of
	// assoc/update/dissoc in tail position (or returned), so reduce may
	// pass a transient map (see Map.edit).
	LinearAcc bool
	// RecordStep, when set, does what a call of the function's arity of
	// two does for an accumulator acc (a transient map) and the host
	// record recs[i], without the call: the steps counted, the map written
	// in place (charged and credited as the call's, StepMark and
	// StepCredit), the new accumulator returned; false (nothing done,
	// nothing counted) sends that item through the call. reduce runs it
	// over host records (loopCaller.Step; compile's recordCount and
	// recordAssoc).
	RecordStep func(th *Thread, acc *Map, recs []map[string]any, i int) (Value, bool)
	Name       string
	Arities    []*Arity
	// direct[n] is the arity taking exactly n args when its params are
	// plain symbols (callers then write args straight into its slots).
	Direct     [3]*Arity
	ParamNames []string
	CapRefs    []CapRef
}

// Arity is one arity of a function: its parameters, their binders and
// its compiled body.
type Arity struct {
	Nfixed   int
	Variadic bool
	Nslots   int
	Body     Node
	Params   []Binder // nfixed binders, plus the rest binder when variadic
	Simple   bool     // params are plain symbols in slots 0..n
}

// CapRef says where a closure's capture comes from when the closure is
// made: a local slot, a capture of the enclosing function, or itself.
type CapRef struct {
	Kind int
	Idx  int
}

// Closure is a compiled function value with its captured variables.
type Closure struct {
	Proto *FnProto
	Caps  []Value
}

// BuiltinFunc is the Go signature of a builtin. args must not be retained
// or modified (it lives on the run's value stack). Errors are raised with
// the Thread's error helpers (they panic and are recovered at the run's edge).
type BuiltinFunc func(th *Thread, args []Value) Value

// Builtin is a named Go function value.
type Builtin struct {
	Name string
	// MinArgs and MaxArgs bound the argument count; MaxArgs < 0 means variadic.
	MinArgs, MaxArgs int
	Fn               BuiltinFunc
	// ArityText overrides the arity message ("2 or 3"); empty: derived.
	ArityText string
	// fn1/fn2, when set, take one or two arguments directly (opt_fastcall.go).
	Fn1 func(th *Thread, x Value) Value
	Fn2 func(th *Thread, x, y Value) Value
}

// LazySeq is a possibly infinite sequence realised on demand. gen returns
// the next item, or ok=false at the end. Realised items are cached, so a
// LazySeq is a value: every reader sees the same items. Concurrent
// realisation (pmap branches sharing a seq) is serialised by a mutex.
//
// A pure sequence (range, (repeat x), cycle: its items are computed
// without calling back into the program) has fill instead of gen and is
// realised lazyChunk items at a time, so realising it costs a few
// nanoseconds an item and a lock per chunk, not per item.
type LazySeq struct {
	mu    sync.Mutex
	done  bool
	items []Value
	gen   func(th *Thread) (Value, bool)
	// fill appends the next items to buf up to its capacity and returns
	// it; fewer items than asked for means the sequence ended.
	fill func(buf []Value) []Value
	// Stream marks a sequence that only the call it was made for reads,
	// once and in order (the compiler sets it: see streamArg): its items
	// are not kept, so they are not charged to the memory limit. items
	// then holds the current chunk (one item of a gen) and base the
	// index of its first item.
	Stream bool
	base   int
}

// signal is panicked by return/fail and recovered at the run's edge.
type ReturnSignal struct {
	Ret bool
	Val Value
	Pos Pos
}

// DeadlineCtx returns the run's context bounded by the run's deadline,
// carrying the run's meter (for tools, host calls and pmap branches); it
// is created on first use, and so is the run's own meter (Host.OwnMeter).
// pmap branches share their parent's host: the parent makes the meter
// here before it starts them.
func (th *Thread) DeadlineCtx() context.Context {
	if th.toolCtx == nil {
		ctx := th.Ctx
		if h := th.Host; h != nil && h.OwnMeter && h.Meter == nil {
			ctx, h.Meter = WithNewMeter(ctx, h.MeterLimit, "")
		}
		if th.Deadline == 0 {
			th.toolCtx = ctx
		} else {
			// the deadline as the wall clock reads it now (see
			// Thread.Deadline)
			now := time.Now()
			d := now.Add(th.Deadline - now.Sub(clockBase))
			th.toolCtx, th.ToolCancel = context.WithDeadline(ctx, d)
		}
	}
	return th.toolCtx
}

// StartedBranches reports whether the run started pmap or pcalls
// branches (RunBranches), whose Threads share its Host.
func (th *Thread) StartedBranches() bool { return th.branched }

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

// Ticks counts n evaluation steps at once (a chunk of work done in Go).
func (th *Thread) Ticks(n int) {
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
	if th.Deadline != 0 && Clock() > th.Deadline {
		panic(&Error{Kind: KindTimeout, Pos: th.CallPos, Msg: th.limitPassed(), Err: context.DeadlineExceeded})
	}
}

// limitPassed is the message of a run stopped by its own time limit.
func (th *Thread) limitPassed() string {
	return fmt.Sprintf("execution exceeded %dms limit", th.TimeoutMs)
}

// RaiseCtx ends the run for the context error err: timeout when a
// deadline passed, canceled otherwise. The message names whose deadline
// it was: the program's own time limit, or the caller's context ending
// first.
func (th *Thread) RaiseCtx(err error) {
	if err == context.DeadlineExceeded {
		msg := th.limitPassed()
		if th.Deadline == 0 || Clock() < th.Deadline {
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

// ArityError raises "name expects want args, got n".
func (th *Thread) ArityError(name, want string, got int) {
	panic(&Error{Kind: KindArity, Pos: th.CallPos, Msg: fmt.Sprintf("%s expects %s, got %d", name, want, got)})
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

// CountLoop counts one loop iteration against LoopLimit. It is small
// enough to inline into every loop's iteration; the limit's error is
// built out of line (loopLimit).
func (th *Thread) CountLoop() {
	th.loops++
	if th.MaxLoops > 0 && th.loops > th.MaxLoops {
		th.loopLimit()
	}
}

// LoopRoom returns how many more loop iterations of one step each run
// before a Tick would check the budgets or a CountLoop would pass the
// loop limit: a loop that counts them in a batch (CountLoops) runs that
// many, then ticks and counts the next one singly.
func (th *Thread) LoopRoom() int64 {
	n := th.NextCheck - th.Steps - 1
	if th.MaxLoops > 0 {
		n = min(n, th.MaxLoops-th.loops)
	}
	return max(n, 0)
}

// CountLoops counts n iterations of one step each at once, n at most
// LoopRoom: what n Tick and CountLoop calls count, none of which would
// have checked anything.
func (th *Thread) CountLoops(n int64) {
	th.Steps += n
	th.loops += n
}

// loopLimit raises the loop limit's error (not inlined: CountLoop is).
//
//go:noinline
func (th *Thread) loopLimit() {
	panic(&Error{Kind: KindLoopLimit, Pos: th.CallPos, Msg: fmt.Sprintf("loop limit exceeded (%d iterations)", th.MaxLoops)})
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

// fork makes a child thread for a pmap/pcalls branch: own stack and
// counters, a snapshot of memory, shared host.
func (th *Thread) fork(ctx context.Context) *Thread {
	child := &Thread{
		Ctx: ctx, Deadline: th.Deadline, TimeoutMs: th.TimeoutMs,
		MaxSteps: th.MaxSteps, MaxMem: th.MaxMem, MaxDepth: th.MaxDepth, MaxLoops: th.MaxLoops,
		Host: th.Host, Mem: maps.Clone(th.Mem), child: true, CallPos: th.CallPos,
		NextCheck: CheckEvery,
	}
	child.Depth = th.Depth
	return child
}

// allocVector charges a new vector of n slots with its header.
func (th *Thread) allocVector(n int) {
	th.Alloc += int64(n)*SlotBytes + VectorBytes
	if th.MaxMem > 0 && th.Alloc > th.MaxMem {
		th.MemLimit()
	}
}

// AllocVectorAt is allocVector for a vector literal at pos: an error
// points at the literal (evaluating one sets no position of its own).
func (th *Thread) AllocVectorAt(n int, pos Pos) {
	th.Alloc += int64(n)*SlotBytes + VectorBytes
	if th.MaxMem > 0 && th.Alloc > th.MaxMem {
		th.CallPos = pos
		th.MemLimit()
	}
}

// entryCharge is the charge for one entry of m.
func entryCharge(m *Map) int64 {
	if m.Shape == nil { // a trie, or a hashStore whose form is a trie
		return trieEntryBytes
	}
	return entryBytes
}

// AllocMap charges a map or set of n entries about to be built at once
// (a trie beyond smallMapMax entries).
func (th *Thread) AllocMap(n int) {
	c := int64(entryBytes)
	if n > SmallMapMax {
		c = trieEntryBytes
	}
	th.Alloc += int64(n) * c
	if th.MaxMem > 0 && th.Alloc > th.MaxMem {
		th.MemLimit()
	}
}

// AllocEntries charges n entries added to m (m is the map after they
// were added, so the charge follows its representation).
func (th *Thread) AllocEntries(m *Map, n int) {
	th.Alloc += int64(n) * entryCharge(m)
	if th.MaxMem > 0 && th.Alloc > th.MaxMem {
		th.MemLimit()
	}
}

// keep marks everything charged so far as held (memory writes, prints,
// lazy-seq caches): no credit goes below it.
func (th *Thread) keep() {
	if th.floor < th.Alloc {
		th.floor = th.Alloc
	}
}

// handOn ends a scope that started when th.alloc was mark and hands on
// size new bytes: the total becomes mark + size, never below the floor
// and never above what it was.
func (th *Thread) handOn(mark, size int64) {
	n := mark + size
	if n < th.floor {
		n = th.floor
	}
	if n < th.Alloc {
		th.Alloc = n
	}
}
