package core

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Calling a tool from a program (CallTool, CallToolArgs), reading the
// context inputs (CtxGet) and the memory tool results hold.

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
	var goArgs map[string]any
	if args != nil {
		th.RealiseDeep(args)
		goArgs = ToGo(args).(map[string]any)
	} else {
		goArgs = map[string]any{} // a tool is always given a map
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
		ctx = withCallPos(ctx, th.CallPos)
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

// SetMem writes memory (def, memory/put).
func (th *Thread) SetMem(name string, v Value) {
	if th.MemShared {
		// the run's starting memory, shared with its caller: written
		// in a copy of its own
		th.Mem = maps.Clone(th.Mem)
		th.MemShared = false
	}
	if th.Mem == nil {
		th.Mem = map[string]Value{}
	}
	th.Mem[name] = v
	th.keep()
}
