package agent

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// turnTools is the per-turn record of tool activity: calls (with child
// Steps), warnings and the usage of sub-agents. Tools may run
// concurrently (pmap), so it is guarded by a mutex.
type turnTools struct {
	turn     int
	mu       sync.Mutex
	calls    []messages.ToolCall
	warnings []string
	usage    messages.Usage // sub-agent tokens and requests
}

// snapshot returns the calls, warnings and usage recorded so far.
func (tt *turnTools) snapshot() ([]messages.ToolCall, []string, messages.Usage) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return append([]messages.ToolCall(nil), tt.calls...), append([]string(nil), tt.warnings...), tt.usage
}

func (tt *turnTools) warn(ws ...string) {
	tt.mu.Lock()
	tt.warnings = append(tt.warnings, ws...)
	tt.mu.Unlock()
}

// toolRunner adapts the agent's tools to lisp tools for one run. cur
// points at the current turn's record; it is swapped between turns, when
// no program (and so no tool) is running.
type toolRunner struct {
	a    *Agent
	run  *runState
	cur  atomic.Pointer[turnTools]
	mode signature.Mode
}

func (tr *toolRunner) lispTools() lisp.Tools {
	out := make(lisp.Tools, len(tr.a.tools))
	for name, bt := range tr.a.tools {
		out[name] = lisp.ToolFunc(func(ctx context.Context, args map[string]any) (any, error) {
			return tr.call(ctx, bt, args)
		})
	}
	return out
}

// call runs one tool call: input coercion and validation, the call (or a
// sub-agent run), output validation, recording and observer events.
func (tr *toolRunner) call(ctx context.Context, bt *boundTool, args map[string]any) (out any, err error) {
	// tt and turn are read once: a straggling call (abandoned by a timed
	// out program) must not touch the next turn's state.
	tt := tr.cur.Load()
	rs := tr.run
	turn := tt.turn
	rec := messages.ToolCall{Name: bt.name, Args: args, StartedAt: time.Now()}
	var sc *spawnCall // the children the call spawns (Spawn)
	rs.tree.emit(ctx, Event{Kind: EventToolStart, Agent: rs.name, Depth: rs.depth, Turn: turn, Tool: bt.name, Args: args})
	defer func() {
		rec.Duration = time.Since(rec.StartedAt)
		if err != nil {
			rec.Error = err.Error()
			rs.tree.emit(ctx, Event{Kind: EventToolException, Agent: rs.name, Depth: rs.depth, Turn: turn, Tool: bt.name, Args: args, Duration: rec.Duration, Err: err})
		} else {
			rec.Result = out
			plain := out
			if needsPlain(out) { // structs, typed slices and maps
				plain, _ = messages.FromJSON(out)
			}
			rs.tree.secrets.collect(plain, false)
			rs.tree.emit(ctx, Event{Kind: EventToolStop, Agent: rs.name, Depth: rs.depth, Turn: turn, Tool: bt.name, Result: out, Duration: rec.Duration})
		}
		var extra []messages.ToolCall
		if sc != nil {
			sc.mu.Lock()
			rec.Child, extra = sc.first, sc.extra
			sc.mu.Unlock()
		}
		tt.mu.Lock()
		tt.calls = append(append(tt.calls, rec), extra...)
		tt.mu.Unlock()
	}()

	sig := bt.sig
	if bt.tool.sub != nil {
		sig = bt.tool.sub.agent.sig
	}
	validate := sig != nil && tr.mode != signature.Disabled
	if validate {
		coerced, warns, verr := sig.CoerceInputs(args, tr.mode)
		for _, w := range warns {
			tt.warn(bt.name + ": " + w)
		}
		if verr != nil {
			if tr.mode.Fatal() {
				return nil, fmt.Errorf("tool validation errors:\n%s", verr.Error())
			}
			tt.warn(prefixLines(bt.name+": ", verr.Error())...)
		}
		args = coerced
		rec.Args = args
	}

	if bt.tool.sub != nil {
		child, cerr := tr.runChild(ctx, bt, args)
		rec.Child = child
		tt.mu.Lock()
		tt.usage.AddTokens(child.Usage)
		tt.usage.Requests += child.Usage.Requests
		tt.mu.Unlock()
		if cerr != nil {
			// a message that is a firewalled value is hidden whatever
			// its length (the tree's scrubber catches longer ones inside
			// other text)
			f := *child.Fail
			f.Message = rs.tree.secrets.redact(f.Message, false)
			return nil, fmt.Errorf("sub-agent %s failed: %s", bt.name, f.Error())
		}
		// The child's return is validated by the child's own run.
		return child.Return, nil
	}

	var sctx context.Context
	sctx, sc = withSpawnCall(ctx, tr, tt, bt.name)
	out, err = safeCall(sctx, bt.tool.fn, args)
	if err != nil {
		return nil, err
	}
	if validate {
		return checkToolOutput(bt, sig, out, tr.mode, tt.warn)
	}
	return out, nil
}

// checkToolOutput validates the result of a call of bt against sig's
// output under mode, when the tool declares a signature. A mismatch is the
// call's error in a fatal mode and warnings (one a line, naming the tool)
// otherwise. out comes back as outputForValidation leaves it.
func checkToolOutput(bt *boundTool, sig *signature.Signature, out any, mode signature.Mode, warn func(...string)) (any, error) {
	if bt.tool.Signature == "" {
		return out, nil
	}
	out, plain, err := outputForValidation(out)
	if err != nil {
		return nil, err
	}
	if verr := sig.ValidateOutput(plain, mode); verr != nil {
		if mode.Fatal() {
			return nil, fmt.Errorf("tool output validation errors:\n%s", verr.Error())
		}
		warn(prefixLines(bt.name+" output: ", verr.Error())...)
	}
	return out, nil
}

func (tr *toolRunner) runChild(ctx context.Context, bt *boundTool, args map[string]any) (*messages.Step, error) {
	sub := bt.tool.sub
	return tr.runLinked(ctx, bt.name, sub.agent, sub.boundModel, sub.boundName, args)
}

// runLinked runs child, called as tool, as a child of the calling agent:
// in its tree (turn budget, depth, observer, firewall registry), on its
// model unless bound to another, with args as its context.
func (tr *toolRunner) runLinked(ctx context.Context, tool string, child *Agent, boundModel llm.Model, boundName string, args map[string]any) (*messages.Step, error) {
	rs := tr.run
	l := &link{tree: rs.tree, depth: rs.depth, model: rs.model, modelName: rs.modelName,
		boundModel: boundModel, boundName: boundName}
	// The child shares the mission deadline (kept in the tree), not the
	// caller's turn deadline: detach from the turn's timeout but keep
	// cancellation of the caller.
	cctx := withSubAgentCall(context.WithoutCancel(ctx), tool, args)
	cctx, cancel := context.WithCancel(cctx)
	defer cancel()
	stop := context.AfterFunc(rs.missionCtx, cancel)
	defer stop()
	return child.run(cctx, RunOptions{Context: args, Observer: rs.tree.observer, Trace: rs.tree.trace, Debug: rs.tree.debug}, l)
}

func safeCall(ctx context.Context, fn ToolFunc, args map[string]any) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(ctx, args)
}

// outputForValidation returns a tool's result as the program gets it
// (structs, typed slices and maps made plain data) and as signature
// validation reads it: a *lisp.WireResult stays as it is for the program
// and is validated in place (View), not converted.
func outputForValidation(out any) (result, checked any, err error) {
	if w, ok := out.(*lisp.WireResult); ok {
		return out, w.View(), nil
	}
	if needsPlain(out) {
		if out, err = messages.FromJSON(out); err != nil {
			return nil, nil, err
		}
	}
	return out, out, nil
}

func needsPlain(v any) bool {
	switch v.(type) {
	case nil, bool, int64, float64, string, []any, map[string]any, int, *lisp.WireResult:
		return false
	}
	k := reflect.TypeOf(v).Kind()
	return k == reflect.Struct || k == reflect.Pointer || k == reflect.Slice || k == reflect.Map
}

func prefixLines(prefix, text string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		out = append(out, prefix+strings.TrimPrefix(l, "- "))
	}
	return out
}
