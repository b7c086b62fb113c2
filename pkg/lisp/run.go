package lisp

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/compile"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Defaults for Options. The limits that travel on the wire have their
// defaults in pkg/messages, the one place of each; these name them for
// callers of this package.
const (
	// DefaultTimeout bounds one run: messages.DefaultProgramTimeout.
	DefaultTimeout = messages.DefaultProgramTimeout
	// DefaultMaxMemory bounds the memory a program holds at once (what it
	// builds and keeps; host data does not count):
	// messages.DefaultProgramMemory. It admits the benchmark pipelines
	// over 100k records with room to spare.
	DefaultMaxMemory = messages.DefaultProgramMemory
	// DefaultMaxCallDepth bounds nested function calls.
	DefaultMaxCallDepth = 10000
	// DefaultMemoryLimit bounds the printed size of memory after a run:
	// the agents' memory_limit default.
	DefaultMemoryLimit = messages.DefaultMemoryLimit
	// DefaultStepsPerSecond sizes the default step budget per second of
	// timeout. It sits above what the interpreter runs (≈ 100M simple steps
	// a second on the 2-core CI machine) so that a runaway loop ends on the
	// wall clock (timeout) and the budget stays a backstop.
	DefaultStepsPerSecond = 200_000_000
	DefaultMaxSourceBytes = 256 << 10
)

// Options configures one run. The zero value is usable: no inputs, empty
// memory, no tools, the default limits.
type Options struct {
	// Context holds the ctx/ (and data/) inputs: plain Go data, string keys.
	// The run reads it in place (see FromGo): it must not change while the
	// run goes on.
	Context map[string]any
	// Memory is the initial memory (names to plain Go data or Values such
	// as closures kept from an earlier run).
	Memory map[string]any
	// Tools are the tools the program may call.
	Tools core.Tools
	// Host gives the functions of the host builtins the program may call
	// (llm-query, emit, step-done; HostBuiltins); a call of one it does
	// not give fails with unknown_tool.
	Host core.HostFuncs
	// Signature, when set, validates the returned value (pkg/signature
	// syntax, e.g. "{count :int}" or "() -> [:string]"). It is parsed once,
	// before the program runs; a signature that does not parse fails the
	// run with a value error.
	Signature string
	// Limits are the run's limits under their wire names, as a mission or
	// an agent spec carries them (messages.Limits), with the wire's
	// convention: 0 is the default (messages.Default*), a negative value
	// unlimited. The interpreter enforces ProgramTimeout (the run's wall
	// clock; the run's ctx deadline applies too), ProgramMemory (what the
	// program holds at once; see MaxMemory), MaxSteps (the evaluation step
	// budget; 0: StepBudget of the timeout, unlimited when the time is),
	// MaxToolCalls and MemoryLimit (the printed size of memory after the
	// run). The other fields bound agents and missions, not one run, and
	// are not read here. A field left 0 takes the value of the field of
	// the same meaning below, which older callers set.
	Limits messages.Limits
	// Timeout is Limits.ProgramTimeout under its older name (0: the
	// default, DefaultTimeout).
	//
	// Deprecated: set Limits.ProgramTimeout.
	Timeout time.Duration
	// MaxMemory bounds the memory the program holds at once, in bytes:
	// 16 per collection slot (more where the Go heap holds more: see
	// retain.go and docs/lisp.md) plus string bytes, counted
	// for what the program builds and still holds, not for what it
	// allocated and dropped, plus what the run holds from its tools
	// (Meter: results decoded from wire bytes, the record of each call);
	// other host data (Context, Memory, Go data a tool returns) does not
	// count (0: DefaultMaxMemory, negative: unlimited). Exceeding it ends
	// the run with memory_limit.
	//
	// Deprecated: set Limits.ProgramMemory, its wire name.
	MaxMemory int64
	// MaxSteps is Limits.MaxSteps, read when that is 0. A caller whose run
	// gets only what is left of a longer budget passes StepBudget of the
	// program's own time limit, so the budget does not depend on how long
	// anything before the run took.
	//
	// Deprecated: set Limits.MaxSteps.
	MaxSteps int64
	// LoopLimit caps loop/recur iterations (0: off, the default).
	LoopLimit int64
	// MaxCallDepth caps nested function calls (default
	// DefaultMaxCallDepth).
	MaxCallDepth int
	// MemoryLimit caps the printed size of memory after the run in bytes
	// (default DefaultMemoryLimit; negative: unlimited); an agent's
	// memory_limit.
	//
	// Deprecated: set Limits.MemoryLimit.
	MemoryLimit int64
	// MaxToolCalls caps tool calls per run (0 or negative: unlimited).
	//
	// Deprecated: set Limits.MaxToolCalls.
	MaxToolCalls int
	// Meter charges what the run holds from its tools (decoded results,
	// the record of each call) against a mission's budget shared by all
	// its runs; nil: the meter the run's context carries (WithMeter), else
	// one of the run's own limited to MaxMemory. The run hands it to its
	// tools in their context, and counts what it charges in this run in
	// its program's memory too (see Meter).
	Meter *core.Meter
	// MemoryContract applies the Memory Result Contract (docs/agent.md) to a
	// top-level map result that did not come from return/fail.
	MemoryContract bool
	// FloatPrecision rounds floats in Step.Return to this many decimals
	// (0: no rounding; agents use 2).
	FloatPrecision int
	// MaxSourceBytes rejects larger programs (default DefaultMaxSourceBytes).
	MaxSourceBytes int
	// Scrub, when set, rewrites every string that println, print and prn
	// render, before the line is built (see PrintOptions.Scrub). It may be
	// called from several goroutines at once.
	Scrub func(s string, key bool) string

	// plainLoops compiles loops as written, without walk loops, owned
	// boxes and transient loop bindings (opt_walkloop.go, opt_ownedbox.go,
	// linearLoopBindings): tests compare both.
	plainLoops bool
	// checkResolve makes the compiler check the resolver's answer for
	// every symbol it compiles against its own scopes (resolve.go): a
	// disagreement is an internal error. Tests set it.
	checkResolve bool
}

// runLimits are a run's limits, resolved once: each from Options.Limits
// under its wire name, else from the older field of the same meaning,
// else its default; -1 stands for unlimited where a count is kept.
type runLimits struct {
	timeout  time.Duration
	maxMem   int64 // -1: unlimited
	maxSteps int64 // -1: unlimited
	memLimit int64 // -1: unlimited
	maxCalls int   // 0: unlimited
}

// defaultRunLimits are the limits of Options that set none, resolved
// once (resolveLimits): most runs set none, and resolving costs a run
// more than the rest of its setup.
var defaultRunLimits = (&Options{}).resolveLimits()

// runLimits resolves o's limits (see Options.Limits): defaultRunLimits
// when o sets none of them, else resolveLimits.
func (o *Options) runLimits() runLimits {
	l := &o.Limits
	if l.ProgramTimeout == 0 && l.ProgramMemory == 0 && l.MaxSteps == 0 && l.MemoryLimit == 0 && l.MaxToolCalls == 0 &&
		o.Timeout == 0 && o.MaxMemory == 0 && o.MaxSteps == 0 && o.MemoryLimit == 0 && o.MaxToolCalls == 0 {
		return defaultRunLimits
	}
	return o.resolveLimits()
}

// resolveLimits resolves o's limits, field by field (see Options.Limits).
func (o *Options) resolveLimits() runLimits {
	l := &o.Limits
	pick := func(wire, old int64) int64 {
		if wire != 0 {
			return wire
		}
		return old
	}
	var r runLimits
	unlimitedTime := false
	switch t := time.Duration(pick(int64(l.ProgramTimeout), int64(o.Timeout))); {
	case t == 0:
		r.timeout = DefaultTimeout
	case t < 0:
		r.timeout, unlimitedTime = messages.UnlimitedTimeout, true
	default:
		r.timeout = t
	}
	r.maxMem = limitOrUnlimited(pick(l.ProgramMemory, o.MaxMemory), DefaultMaxMemory)
	switch s := pick(l.MaxSteps, o.MaxSteps); {
	case s != 0:
		r.maxSteps = max(s, -1)
	case unlimitedTime:
		r.maxSteps = -1
	default:
		r.maxSteps = StepBudget(r.timeout)
	}
	r.memLimit = limitOrUnlimited(pick(l.MemoryLimit, o.MemoryLimit), DefaultMemoryLimit)
	r.maxCalls = max(int(pick(int64(l.MaxToolCalls), int64(o.MaxToolCalls))), 0)
	return r
}

// limitOrUnlimited is v under the limits' convention: d for 0, -1
// (unlimited) for a negative v.
func limitOrUnlimited(v, d int64) int64 {
	if l, ok := messages.LimitOr(v, d); ok {
		return l
	}
	return -1
}

// StepBudget is the default step budget of a run with the given timeout:
// DefaultStepsPerSecond per second, plus a fixed allowance for short runs.
func StepBudget(timeout time.Duration) int64 {
	return int64(timeout.Seconds()*DefaultStepsPerSecond) + 1_000_000
}

// Signal says how a run ended.
type Signal int

// Signals.
const (
	// SignalValue: the program ended with its last top-level value.
	SignalValue Signal = iota
	// SignalReturn: (return v) or (call "return" v) ran.
	SignalReturn
	// SignalFail: (fail v) ran, or any error occurred.
	SignalFail
)

func (s Signal) String() string {
	switch s {
	case SignalReturn:
		return "return"
	case SignalFail:
		return "fail"
	}
	return "value"
}

// Result is the full outcome of Exec, for the agent loop.
type Result struct {
	// Signal says whether the run ended by value, return or fail/error.
	Signal Signal
	// Value is the result as an interpreter value (for previews). Under
	// the Memory Result Contract it is the value the model should see
	// (the :return entry when present).
	Value core.Value
	// Memory is the memory after the run (only committed on success; on
	// failure it equals the initial memory). When Options.Memory held
	// interpreter values only (scalars, keywords, closures, collections)
	// and the run wrote none, it may be Options.Memory itself: a caller
	// copies it before changing it.
	Memory map[string]core.Value
	// Written lists memory names written by the run (sorted).
	Written []string
	// Prints holds println output, one entry a line.
	Prints []string
	// ToolCalls records tool calls in order (also on failure).
	ToolCalls []messages.ToolCall
	// Err is the error when Signal is SignalFail (also returned by Exec).
	Err *core.Error
	// Steps is the number of evaluation steps used.
	Steps int64
	// Duration is the wall time of the run.
	Duration time.Duration

	sig *signature.Signature // Options.Signature, parsed
}

// Exec parses, compiles and runs source: Compile then Program.Run. It
// always returns a non-nil Result; err is a *Error (or nil). Cancellation
// of ctx ends the run with a KindCanceled or KindTimeout error that wraps
// ctx.Err(). Exec is safe for concurrent use: runs share nothing but
// immutable tables.
func Exec(ctx context.Context, source string, opts Options) (*Result, error) {
	start := core.Clock()
	e, _ := execStates.Get().(*execState)
	if e == nil {
		e = new(execState)
	}
	res, err := e.exec(ctx, source, &opts, start)
	if e.rs.clean {
		e.recycle()
		execStates.Put(e)
	}
	return res, err
}

// exec is Exec in e, a zero or recycled execState, timed from start: the
// run's host serves the compile first, and the run's deadline counts from
// start too (the compile is part of the program's time).
func (e *execState) exec(ctx context.Context, source string, opts *Options, start time.Duration) (*Result, error) {
	if err := compileInto(&e.p, source, *opts, &e.rs.h, &e.c, &e.slab, e.kw); err != nil {
		res := &Result{Signal: SignalFail, Err: err, Duration: core.Clock() - start}
		return res, err
	}
	e.rs.h = core.Host{}
	return e.p.run(ctx, opts, start, &e.rs)
}

// execStates holds the execState of finished Execs whose run left nothing
// referring to it (runState.clean), for the next Execs. It is a cache of
// memory, not state: what an Exec computes never depends on it.
var execStates sync.Pool

// execState is what Exec needs besides its Result, in one allocation:
// the Program, its compiler, the reader's first slab, the program's
// keyword table and the run's state (whose host serves the compile
// first).
type execState struct {
	p    Program
	c    compile.Compiler
	slab syntax.Slab
	rs   runState
	// kw is the keyword table of the previous program, emptied (nil
	// before the first): its keywords are not reused, only the table
	kw map[string]*core.Keyword
}

// maxKeptKeywords bounds the keyword table an execState keeps for the
// next Exec (a program with more makes its own).
const maxKeptKeywords = 32

// recycle readies e, whose run is over and left nothing referring to it
// (runState.clean), for another Exec: everything zero but the run
// state's links (core.Recycle) and the emptied keyword table.
func (e *execState) recycle() {
	core.Recycle(&e.rs.th, &e.rs.h)
	e.rs.clean = false
	e.kw = e.p.keywords
	e.p = Program{}
	e.c = compile.Compiler{}
	e.slab = syntax.Slab{}
	if len(e.kw) > maxKeptKeywords {
		e.kw = nil
	} else {
		clear(e.kw)
	}
}

// compileState is the compiler and its host of a Compile, made in one
// allocation; the Program does not keep them.
type compileState struct {
	c    compile.Compiler
	slab syntax.Slab
	h    core.Host
}

// Program is a compiled PTC-Lisp program: read and compiled once by
// Compile, then run any number of times, from any number of goroutines at
// once, each run with its own context, memory, tools and limits. Running a
// Program never reads its source again.
type Program struct {
	source string
	body   core.Node
	nslots int
	// keywords are the keywords the program's text interned; runs share
	// them (read only) and intern others of their own
	keywords map[string]*core.Keyword
	// tools are the tool names the program calls, as resolved at compile
	tools []string
	sig   *signature.Signature // Options.Signature, parsed
	// states holds the runState of finished runs that nothing kept a
	// reference into (see reusable), for the next runs
	states sync.Pool
}

// Source returns the program's text.
func (p *Program) Source() string { return p.source }

// Compile reads and compiles source for the tools and memory names in
// opts (their values and every limit but MaxSourceBytes are taken by
// Run), and parses opts.Signature. Its error is a *Error with the
// position of the problem.
func Compile(source string, opts Options) (*Program, error) {
	p, cs := new(Program), new(compileState)
	if err := compileInto(p, source, opts, &cs.h, &cs.c, &cs.slab, nil); err != nil {
		return nil, err
	}
	return p, nil
}

// compileInto is Compile into p, a zero Program, with h, a zero Host, as
// the compiler's host, c, a zero Compiler, as its compiler, slab, a zero
// Slab, as the reader's first, and kw, an empty map or nil (a new one),
// as the program's keyword table.
func compileInto(p *Program, source string, opts Options, h *core.Host, c *compile.Compiler, slab *syntax.Slab, kw map[string]*core.Keyword) *core.Error {
	maxSrc := opts.MaxSourceBytes
	if maxSrc <= 0 {
		maxSrc = DefaultMaxSourceBytes
	}
	fail := func(e *core.Error) *core.Error {
		if e.Src == "" {
			e.Src = source
		}
		return e
	}
	if len(source) > maxSrc {
		return fail(core.Errorf(core.KindParse, core.Pos{}, "program too large: %d bytes (limit %d)", len(source), maxSrc))
	}
	if kw == nil {
		kw = map[string]*core.Keyword{}
	}
	p.source, p.keywords = source, kw
	if opts.Signature != "" {
		s, serr := signature.Parse(opts.Signature)
		if serr != nil {
			return fail(&core.Error{Kind: core.KindValue, Msg: "invalid signature: " + serr.Error(), Err: serr})
		}
		p.sig = s
	}
	forms, perr := syntax.ReadIn(source, p.keywords, slab)
	if perr != nil {
		return fail(perr.(*core.Error))
	}
	h.Tools, h.Keywords = opts.Tools, p.keywords
	c.Src, c.Host, c.Builtins, c.PlainLoops, c.CheckResolve = source, h, builtins.BuiltinTable(), opts.plainLoops, opts.checkResolve
	if len(opts.Memory) > 0 {
		c.MemNames = make(map[string]bool, len(opts.Memory))
		for k := range opts.Memory {
			c.MemNames[k] = true
		}
	}
	body, nslots, cerr := c.SafeCompile(forms)
	if cerr != nil {
		return fail(cerr)
	}
	p.body, p.nslots = body, nslots
	p.tools = uniqSorted(c.ToolsUsed)
	return nil
}

// Run runs the program with opts: its context, memory, tools, host
// services and limits (opts.Signature and opts.MaxSourceBytes were taken
// by Compile and are ignored). Every tool the program calls must be in
// opts.Tools. It always returns a non-nil Result; err is a *Error (or
// nil), as Exec's. Run is safe for concurrent use.
func (p *Program) Run(ctx context.Context, opts Options) (*Result, error) {
	return p.run(ctx, &opts, core.Clock(), nil)
}

// runState is the host and Thread of one run, made in one allocation:
// both live exactly as long as the run (pmap branches have Threads of
// their own and share the host). A Program reuses the runState of a run
// that provably left no reference to it (reusable).
type runState struct {
	h  core.Host
	th core.Thread
	// clean is set by a run given its runState (Exec's) when the run
	// left nothing referring to it (reusable) nor to its Program
	clean bool
}

// reusable reports whether a run that ended with v and wrote no memory
// left nothing that refers to its host or Thread. Its tool and host calls
// returned before it did (they run on the run's goroutine) and were
// handed their own context (the tool context, which the run cancels) and
// arguments converted to Go data, so what they keep refers to neither;
// pmap and pcalls branches are child Threads sharing the host, so a run
// that started any is not reused. Its value must be self-contained
// (core.SelfContained: scalars, keywords, small maps and vectors of
// them): a lazy sequence or a closure made during the run could hold its
// frames or Thread. Such a run's runState may serve the next run.
func reusable(th *core.Thread, v core.Value) bool {
	return !th.StartedBranches() && core.SelfContained(th, v)
}

// run is Run timed from start, a core.Clock reading (Exec's, before its
// compile), from which its deadline counts too, in rs, a zero or
// recycled runState. With rs nil the run takes one from p.states and puts
// it back when reusable; with rs given (Exec's) it sets rs.clean when
// reusable.
func (p *Program) run(ctx context.Context, opts *Options, start time.Duration, rs *runState) (res *Result, err error) {
	res = &Result{sig: p.sig}
	source := p.source

	fail := func(e *core.Error) (*Result, error) {
		if e.Src == "" {
			e.Src = source
		}
		res.Signal = SignalFail
		res.Err = e
		res.Duration = core.Clock() - start
		return res, e
	}

	lim := opts.runLimits()
	timeout := lim.timeout

	for _, name := range p.tools {
		if _, ok := opts.Tools[name]; !ok {
			h := core.Host{Tools: opts.Tools}
			return fail(&core.Error{Kind: core.KindUnknownTool, Msg: h.UnknownTool(name)})
		}
	}
	keep := rs == nil
	if keep {
		rs, _ = p.states.Get().(*runState)
		if rs == nil {
			rs = new(runState)
		}
	}
	// rs is zero (new), or recycled (core.Recycle): the fields are set
	// one by one, and those that hold pointers only when there is
	// something to store, which costs less than assigning whole structs
	// (while the GC marks, each pointer written pays a write barrier)
	h := &rs.h
	if opts.Tools != nil {
		h.Tools = opts.Tools
	}
	if opts.Host != nil {
		h.HostFns = opts.Host
	}
	if opts.Scrub != nil {
		h.Scrub = opts.Scrub
	}
	h.ProgKeywords, h.MaxCalls = p.keywords, lim.maxCalls
	// the context is read in place, each ctx/ value converted on its
	// first read (Host.CtxGet)
	if opts.Context != nil {
		h.Ctx = opts.Context
	}
	var mem map[string]core.Value // nil when empty: only read below
	if len(opts.Memory) > 0 && !opts.MemoryContract && core.AllValues(opts.Memory) {
		// interpreter values already (what FromGo gives for each): read
		// in place; the run writes a copy (SetMem), and the contract,
		// which writes what the run returns into memory, is not applied
		mem = opts.Memory
	} else if len(opts.Memory) > 0 {
		mem = make(map[string]core.Value, len(opts.Memory))
		for k, v := range opts.Memory {
			mv, merr := core.FromGo(v)
			if merr != nil {
				return fail(&core.Error{Kind: core.KindType, Msg: "bad memory entry " + k + ": " + merr.Error(), Err: merr})
			}
			mem[k] = mv
		}
	}
	if mem != nil {
		res.Memory = mem
	}
	body, nslots := p.body, p.nslots

	maxMem := lim.maxMem
	ctxMeter := core.MeterFrom(ctx)
	meter := opts.Meter
	if meter == nil {
		meter = ctxMeter
	}
	if meter == nil {
		h.OwnMeter, h.MeterLimit = true, maxMem // made on first need
	} else {
		h.Meter = meter
		if ctxMeter != meter {
			ctx = core.WithMeter(ctx, meter)
		}
	}
	th := &rs.th
	end := start + timeout
	if end < start {
		end = math.MaxInt64 // a timeout past what a Duration holds
	}
	th.Ctx, th.TimeoutMs, th.Deadline = ctx, timeout.Milliseconds(), end
	if th.Host != h { // a recycled Thread keeps its Host
		th.Host = h
	}
	th.NextCheck = core.CheckEvery
	if len(mem) > 0 {
		// read in place: the run's first write (SetMem) copies it
		th.Mem, th.MemShared = mem, true
	}
	th.MaxMem = maxMem
	th.MaxSteps = lim.maxSteps
	th.MaxDepth = opts.MaxCallDepth
	if th.MaxDepth <= 0 {
		th.MaxDepth = DefaultMaxCallDepth
	}
	th.MaxLoops = opts.LoopLimit
	// The tool context lives until Exec returns: realising the values the
	// program stored in memory (below) checks it, and lazy seqs realised
	// there may still call tools.
	reused := false // rs went back to p.states: th is another run's
	defer func() {
		if !reused && th.ToolCancel != nil {
			th.ToolCancel()
		}
	}()

	v, sig, rerr := th.RunTop(body, nslots)
	// res is new and zero: a pointer field is written only when it gets
	// something (each write pays a write barrier while the GC marks)
	if th.Prints != nil {
		res.Prints = th.Prints
	}
	if h.Calls != nil {
		res.ToolCalls = h.Calls
	}
	res.Steps = th.Steps
	if rerr != nil {
		return fail(rerr)
	}
	// a host record leaves as its *Map view (the type callers know)
	v = core.MapValue(v)
	res.Value = v
	if sig != nil {
		if !sig.Ret {
			return fail(failError(sig))
		}
		res.Signal = SignalReturn
		res.Value = core.MapValue(sig.Val)
	}
	// commit memory
	var written []string
	if len(th.Mem) > 0 && !th.MemShared {
		for k, nv := range th.Mem {
			if ov, ok := mem[k]; !ok || ov != nv {
				written = append(written, k)
			}
		}
	}
	newMem := th.Mem
	for _, k := range written {
		val := newMem[k]
		if _, _, werr := th.Protect(func() core.Value { th.RealiseDeep(val); return nil }); werr != nil {
			return fail(werr)
		}
	}
	if opts.MemoryContract && sig == nil {
		if m, ok := v.(*core.Map); ok {
			if newMem == nil {
				newMem = map[string]core.Value{}
			}
			var shown core.Value = m
			hasReturn := false
			for _, e := range m.Entries() {
				name := keyName(e.Key)
				if name == "return" {
					shown, hasReturn = e.Val, true
					continue
				}
				newMem[name] = e.Val
				written = append(written, name)
			}
			if hasReturn {
				res.Value = shown
			}
		}
	}
	if limit := lim.memLimit; limit >= 0 && len(newMem) > 0 {
		var size int64
		maxLen := int(min(limit, math.MaxInt32)) + 1
		for k, mv := range newMem {
			if core.IsHostData(mv) {
				size += int64(len(k)) // the host's data, kept by reference
				continue
			}
			size += int64(len(k) + len(core.Sprint(mv, core.PrintOptions{NoFirewall: true, MaxLen: maxLen})))
			if size > limit {
				break
			}
		}
		if size > limit {
			return fail(&core.Error{Kind: core.KindMemory, Msg: fmt.Sprintf("memory limit exceeded: %d > %d bytes", size, limit),
				Hint: "store less data in memory; keep only what later turns need"})
		}
	}
	if res.sig != nil {
		if verr := validateSignature(res.sig, res.Value); verr != nil {
			return fail(verr)
		}
	}
	for _, k := range written {
		newMem[k] = core.MapValue(newMem[k])
	}
	if newMem != nil {
		res.Memory = newMem
	}
	if written != nil {
		res.Written = uniqSorted(written)
	}
	res.Duration = core.Clock() - start
	if len(written) == 0 && reusable(th, res.Value) {
		// the caller keeps res: its prints, calls and memory are a slice
		// and a map res holds, not parts of the runState
		if keep {
			reused = true
			if th.ToolCancel != nil {
				th.ToolCancel() // as the deferred call would
			}
			core.Recycle(th, h)
			p.states.Put(rs)
		} else {
			rs.clean = true
		}
	}
	return res, nil
}

func uniqSorted(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return core.SortedKeys(m)
}

func keyName(k core.Value) string {
	switch x := k.(type) {
	case string:
		return x
	case *core.Keyword:
		return x.Name
	}
	return core.Str(k)
}

// failError converts a (fail v) signal into an Error.
func failError(sig *core.ReturnSignal) *core.Error {
	v := sig.Val
	e := &core.Error{Kind: core.KindFail, Pos: sig.Pos}
	switch x := core.MapValue(v).(type) {
	case string:
		e.Msg = x
		e.Fail = map[string]any{"reason": "failed", "message": x}
	case *core.Map:
		g := core.ToGo(x).(map[string]any)
		if _, ok := g["reason"]; !ok {
			g["reason"] = "failed"
		}
		msg, _ := g["message"].(string)
		if msg == "" {
			msg = core.PrStr(x)
		}
		e.Msg = msg
		if op, ok := g["op"].(string); ok {
			e.Op = op
		}
		e.Fail = g
	default:
		e.Msg = core.PrStr(v)
		e.Fail = map[string]any{"reason": "failed", "message": e.Msg}
	}
	return e
}

// Run runs source and returns a messages.Step: Return and Memory as plain
// Go data, Prints, and one Trace turn with the program and its tool calls.
// On failure err is non-nil (a *Error, which wraps ctx.Err() when the
// context ended the run) and step.Fail is set.
func Run(ctx context.Context, source string, opts Options) (*messages.Step, error) {
	res, err := Exec(ctx, source, opts)
	return res.Step(source, opts), err
}

// Step converts a Result to a messages.Step.
func (r *Result) Step(source string, opts Options) *messages.Step {
	st := &messages.Step{Version: messages.StepVersion, Signature: opts.Signature, Prints: r.Prints}
	if r.sig != nil {
		st.Signature = r.sig.String()
	}
	turn := messages.Turn{Number: 1, Program: source, ToolCalls: r.ToolCalls, Prints: r.Prints,
		StartedAt: time.Now().Add(-r.Duration), Duration: r.Duration}
	if r.Err != nil {
		e := r.Err
		f := &messages.Fail{Reason: e.Reason(), Message: e.Detail(), Op: e.Op}
		if e.Kind == core.KindFail {
			if m, ok := e.Fail.(map[string]any); ok {
				if msg, ok := m["message"].(string); ok {
					f.Message = msg
				}
				if d, ok := m["details"].(map[string]any); ok {
					f.Details = d
				}
			}
		}
		st.Fail = f
		turn.Error = e.Detail()
	} else {
		st.Return = messages.RoundFloats(core.ToGo(r.Value), opts.FloatPrecision)
		turn.Result = st.Return
	}
	if len(r.Memory) > 0 {
		st.Memory = make(map[string]any, len(r.Memory))
		for k, v := range r.Memory {
			st.Memory[k] = core.ShareToGo(v)
		}
	}
	st.Trace = []messages.Turn{turn}
	st.Usage = messages.Usage{Turns: 1, ToolCalls: len(r.ToolCalls), Duration: r.Duration}
	return st
}

// validateSignature checks the returned value against the signature's
// output type, on the value as the host sees it (ToGo's key rule).
func validateSignature(s *signature.Signature, v core.Value) *core.Error {
	if verr := s.ValidateOutput(core.ToGo(v), signature.Enabled); verr != nil {
		return &core.Error{Kind: core.KindValidation, Msg: "return type validation failed: " + strings.TrimPrefix(strings.ReplaceAll(strings.TrimSpace(verr.Error()), "\n- ", "; "), "- "), Err: verr,
			Hint: "return a value of type " + s.PromptOutput()}
	}
	return nil
}
