package core

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Tool is a host capability callable from a program: a local Go func, an
// LLM tool, a sub-agent or a remote (NATS) tool. Call receives the run's
// context and the named arguments as plain Go data (keys by the boundary
// rule of ToGo: keyword keys with '_' for '-', string keys as written), and
// returns plain Go data (see FromGo), a *WireResult (a result decoded
// from its wire bytes; the run's ToolCall record keeps it as it is) or an
// error. Call may be invoked from several goroutines at once (pmap), and
// must not modify args: a host map a program passes on is handed over as
// it is, not copied.
type Tool interface {
	Call(ctx context.Context, args map[string]any) (any, error)
}

// ToolFunc adapts a function to Tool.
type ToolFunc func(ctx context.Context, args map[string]any) (any, error)

// Call calls f.
func (f ToolFunc) Call(ctx context.Context, args map[string]any) (any, error) { return f(ctx, args) }

// callPosKey carries, in the context a Tool is called with, the position
// of the call.
type callPosKey struct{}

// CallPos returns the position, in the source of the program that made
// it, of the tool call whose Tool.Call received ctx: the (tool/name ...)
// form, or the form that called a tool passed as a value. ok is false
// when ctx comes from no tool call of a program.
func CallPos(ctx context.Context) (pos Pos, ok bool) {
	pos, ok = ctx.Value(callPosKey{}).(Pos)
	return pos, ok
}

// Tools maps tool names to tools. A nil Tools has no tools.
type Tools map[string]Tool

// signal is panicked by return/fail and recovered at the run's edge.
type ReturnSignal struct {
	Ret bool
	Val Value
	Pos Pos
}

// Host is the per-run shared state: tools, ctx inputs, keyword interning,
// tool call records. It is shared with pmap branches (mu guards calls).
type Host struct {
	Tools   Tools
	HostFns HostFuncs // Options.Host
	// Ctx is the run's context (Options.Context), read in place: a ctx/
	// read converts the one value it names (ctxView).
	Ctx map[string]any
	// ctxSmall and then ctxVals cache the ctx/ collections read, so each
	// is converted once per run (ctxMu guards them: pmap)
	ctxSmall [ctxSmallN]ctxEntry
	ctxVals  map[string]Value
	ctxMu    sync.Mutex
	// ProgKeywords are the program's keywords (shared by its runs, read
	// only); keywords those the run interns beyond them
	ProgKeywords map[string]*Keyword
	Keywords     map[string]*Keyword
	kwMu         sync.Mutex
	mu           sync.Mutex
	Calls        []messages.ToolCall
	MaxCalls     int
	nCalls       int
	Scrub        func(string, bool) string // Options.Scrub
	// Meter charges what the run holds from its tools (Meter)
	Meter *Meter
	// OwnMeter, when Meter is nil, has the run make its own meter of
	// MeterLimit bytes on first need: before its first tool or host call
	// or pmap branch (Thread.DeadlineCtx), which hands it on in their
	// context. A run that calls none makes no meter.
	OwnMeter   bool
	MeterLimit int64
}

// Keyword returns the run's interned keyword name.
func (h *Host) Keyword(name string) *Keyword {
	if k, ok := h.ProgKeywords[name]; ok {
		return k
	}
	h.kwMu.Lock()
	defer h.kwMu.Unlock()
	if k, ok := h.Keywords[name]; ok {
		return k
	}
	if h.Keywords == nil {
		h.Keywords = map[string]*Keyword{}
	}
	k := NewKeyword(name)
	h.Keywords[name] = k
	return k
}

// UnknownTool is the message of a call of a tool the program was not
// given: the closest given name when one is close, and the names it may
// call (given, which does not mean a service offers them).
func (h *Host) UnknownTool(name string) string {
	keys := SortedKeys(h.Tools)
	msg := "unknown tool: " + name + signature.DidYouMean(name, keys)
	if len(keys) == 0 {
		return msg + "; this program may call no tool"
	}
	return msg + "; the tools this program may call: " + strings.Join(keys, ", ")
}

// ResolveTool finds a tool by exact name, then treating '-' and '_' alike.
func (h *Host) ResolveTool(name string) (string, bool) {
	if _, ok := h.Tools[name]; ok {
		return name, true
	}
	norm := strings.ReplaceAll(name, "-", "_")
	for _, k := range SortedKeys(h.Tools) {
		if strings.ReplaceAll(k, "-", "_") == norm {
			return k, true
		}
	}
	return "", false
}

// CtxGet reads ctx/key with flex lookup, falling back to memory.
func (h *Host) CtxGet(th *Thread, key string) Value {
	if v, ok := h.ctxView(key); ok {
		return v
	}
	if v, ok := th.Mem[key]; ok {
		return v
	}
	return nil
}

// ctxView reads ctx/key from a view of the host's context: a collection
// is converted (to a view) on its first read and kept for the run.
func (h *Host) ctxView(key string) (Value, bool) {
	x, ok := h.Ctx[key]
	if !ok {
		return nil, false
	}
	switch x.(type) {
	case nil, bool, int64, float64, string:
		return x, true
	}
	h.ctxMu.Lock()
	defer h.ctxMu.Unlock()
	for i := range h.ctxSmall {
		e := &h.ctxSmall[i]
		if e.v == nil {
			// the first free entry: the key was not read before
			v := viewValue(key, x)
			e.key, e.v = key, v
			return v, true
		}
		if e.key == key {
			return e.v, true
		}
	}
	if v, ok := h.ctxVals[key]; ok {
		return v, true
	}
	v := viewValue(key, x)
	if h.ctxVals == nil {
		h.ctxVals = map[string]Value{}
	}
	h.ctxVals[key] = v
	return v, true
}

// CtxRecords returns the host records the context holds at key as a
// []map[string]any, to be read one by one in place: the items of the
// vector view a read of ctx/key gives (ItemsOf), without making the view,
// for a loop that reads them once (a fused pipeline). ok is false for a
// key the context lacks or any other value: read those with CtxGet.
func (h *Host) CtxRecords(key string) (items ItemsOf, ok bool) {
	if rs, isRecs := h.Ctx[key].([]map[string]any); isRecs && len(rs) > 0 {
		return ItemsOf{Recs: rs}, true
	}
	return ItemsOf{}, false
}

// ctxSmallN is how many ctx/ collections a run caches without a map.
const ctxSmallN = 4

// ctxEntry is one cached ctx/ collection: its key and its view; a nil
// view marks a free entry.
type ctxEntry struct {
	key string
	v   Value
}

// CallToolArgs calls a tool with the program's argument forms: none, one
// map (or nil), or keyword/value pairs.
func (h *Host) CallToolArgs(th *Thread, name string, args []Value) Value {
	switch name {
	case "return", "fail":
		var v Value
		if len(args) > 0 {
			v = args[0]
		}
		panic(&ReturnSignal{Ret: name == "return", Val: v, Pos: th.CallPos})
	}
	var m *Map
	switch {
	case len(args) == 0:
	case len(args) == 1:
		switch a := args[0].(type) {
		case nil:
		case *Map:
			m = a
		case HostMap:
			m = a.view()
		default:
			th.RaiseHint(KindToolArgs, fmt.Sprintf("(tool/%s {:key value})", name), "tool calls take named arguments: (tool/%s {:key value}), got %s", name, ErrorPreview(a))
		}
	default:
		if len(args)%2 != 0 {
			th.Raise(KindToolArgs, "tool calls take named arguments: (tool/%s :key value ...), got %d args", name, len(args))
		}
		b := NewMapBuilder(len(args) / 2)
		for i := 0; i < len(args); i += 2 {
			switch args[i].(type) {
			case *Keyword, string:
			default:
				th.Raise(KindToolArgs, "tool calls take named arguments: (tool/%s :key value ...), got key %s", name, ErrorPreview(args[i]))
			}
			b.SetExactLast(args[i], args[i+1])
		}
		m = b.Build()
	}
	return h.CallTool(th, name, m)
}

// CallTool calls the named tool (already resolved) and records the call.
func (h *Host) CallTool(th *Thread, name string, args *Map) (result Value) {
	th.Tick()
	tool := h.Tools[name]
	goArgs := map[string]any{}
	if args != nil {
		th.RealiseDeep(args)
		goArgs = ToGo(args).(map[string]any)
	}
	h.mu.Lock()
	h.nCalls++
	if h.MaxCalls > 0 && h.nCalls > h.MaxCalls {
		h.mu.Unlock()
		th.Raise(KindTool, "tool call limit exceeded (%d calls)", h.MaxCalls)
	}
	h.mu.Unlock()
	// the record is kept whatever the call gives: it is charged first
	th.holdToolMemory(name, toolCallBytes+goDataBytes(goArgs), true)
	rec := messages.ToolCall{Name: name, Args: goArgs, StartedAt: time.Now()}
	ctx := th.DeadlineCtx()
	if th.CallPos.IsValid() {
		ctx = context.WithValue(ctx, callPosKey{}, th.CallPos)
	}
	out, err := safeToolCall(ctx, tool, goArgs)
	rec.Duration = time.Since(rec.StartedAt)
	if err == nil {
		if w, ok := out.(*WireResult); ok {
			// a result decoded with the run's meter is charged already
			th.holdToolMemory(name, w.size, w.meter != h.Meter || h.Meter == nil)
		}
		result, err = FromGo(out)
		if err != nil {
			err = fmt.Errorf("bad result: %w", err)
		}
	}
	if err != nil {
		rec.Error = err.Error()
	} else {
		rec.Result = out
	}
	h.mu.Lock()
	h.Calls = append(h.Calls, rec)
	h.mu.Unlock()
	if err != nil {
		if ctxErr := th.DeadlineCtx().Err(); ctxErr != nil {
			th.RaiseCtx(ctxErr)
		}
		var le *Error
		if errors.As(err, &le) && le.Kind == KindMemory {
			// the result did not fit the mission's memory: the run's
			// memory_limit, not the tool's failure
			panic(&Error{Kind: KindMemory, Pos: th.CallPos, Op: name, Msg: le.Msg, Hint: le.Hint, Err: err})
		}
		panic(&Error{Kind: KindTool, Pos: th.CallPos, Op: name, Msg: fmt.Sprintf("tool '%s' failed: %s", name, err.Error()), Err: err})
	}
	return result
}

// toolCallBytes is the charge for the record of one tool call (its
// messages.ToolCall in the run's calls and in the caller's trace, and the
// slots that hold it), before its arguments and result.
const toolCallBytes = 512

// holdToolMemory adds n bytes the run holds from a tool call (its record
// or its result) to the memory the program holds, for good (nothing gives
// them back: the record keeps them), and, when charge is set, to the run's
// meter first. Either limit stops the run with memory_limit.
func (th *Thread) holdToolMemory(op string, n int64, charge bool) {
	th.DeadlineCtx() // the run's meter, made on first need
	if charge {
		if err := th.Host.Meter.Charge(n); err != nil {
			var le *Error
			if errors.As(err, &le) {
				panic(&Error{Kind: KindMemory, Pos: th.CallPos, Op: op, Msg: le.Msg, Hint: le.Hint})
			}
			panic(err)
		}
	}
	th.Alloc += n
	th.keep()
	if th.MaxMem > 0 && th.Alloc > th.MaxMem {
		th.MemLimit()
	}
}

func safeToolCall(ctx context.Context, t Tool, args map[string]any) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return t.Call(ctx, args)
}

// SetMem writes memory (def, memory/put).
func (th *Thread) SetMem(name string, v Value) {
	if th.Mem == nil {
		th.Mem = map[string]Value{}
	}
	th.Mem[name] = v
	th.keep()
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

// SortedKeys returns m's keys in order.
func SortedKeys[M ~map[string]V, V any](m M) []string {
	ks := slices.Collect(maps.Keys(m))
	slices.Sort(ks)
	return ks
}

// HostFuncs maps host builtin names (HostBuiltins) to their functions.
type HostFuncs map[string]HostFunc

// HostFunc is a builtin whose work the host does (Options.Host): the
// agent running the program asks its model (llm-query), streams a value
// to the mission's submitter (emit) or marks a step of its plan
// (step-done). It receives the run's context and the call's arguments as
// plain Go data (ToGo), and returns plain Go data (FromGo) or an error,
// which fails the call as a tool error naming the builtin. It may be
// called from several goroutines at once (pmap).
type HostFunc func(ctx context.Context, args []any) (any, error)
