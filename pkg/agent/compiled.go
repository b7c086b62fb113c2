package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/internal/ctxval"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Names under which an execution passes the function and its argument to
// the one-line call program. They cannot collide with anything a model
// writes in practice, and a program that defines them is rejected.
const (
	compiledFnName   = "ptc-compiled-fn"
	compiledArgsName = "ptc-compiled-args"
	compiledCall     = "(" + compiledFnName + " " + compiledArgsName + ")"
	// definitionTimeout bounds evaluating a definition and probing it.
	definitionTimeout = time.Second
)

// Compiled is a derived PTC-Lisp function with its signature.
// Execute runs it with no model; tools are
// still called. Build one with Compile, Load or LoadCompiled; the zero
// value is not usable. A Compiled is immutable and safe for concurrent use.
type Compiled struct {
	// Name and Description identify the program (from the agent).
	Name        string
	Description string
	// Source is the inspectable PTC-Lisp source: a (fn [args] ...) or a
	// (defn name [args] ...), possibly after helper defns.
	Source string
	// Signature is the contract, in canonical signature syntax.
	Signature string
	// Metadata describes the compilation (zero for Load).
	Metadata CompileMetadata

	sig  *signature.Signature
	mode signature.Mode
	fn   lisp.Value            // the *lisp.Closure
	defs map[string]lisp.Value // top-level defs of Source (helpers)
	// call is compiledCall compiled once: each execution runs it, never
	// reading source again
	call      *lisp.Program
	tools     map[string]*boundTool
	toolNames []string
	ltools    lisp.Tools
	// lim bounds each execution: its program limits apply
	// (programLimits).
	lim Limits
	// toolSigs are the tools' signatures as parsed when the program was
	// loaded, by their text, for Rebind; never written after Load
	toolSigs map[string]*signature.Signature
}

// compiledLispTools adapts pure tools for compiled executions: input
// coercion and validation and output validation in mode, like the loop,
// without its recording (lisp.Result.ToolCalls records the calls).
// Coercion warnings go to the execution's collector in ctx.
func compiledLispTools(tools map[string]*boundTool, mode signature.Mode) lisp.Tools {
	out := make(lisp.Tools, len(tools))
	for name, bt := range tools {
		out[name] = lisp.ToolFunc(func(ctx context.Context, args map[string]any) (any, error) {
			return callPure(ctx, bt, args, mode)
		})
	}
	return out
}

type warnKey struct{}

// execWarnings collects the warnings of one execution; tools may run in
// pmap branches, so it is guarded.
type execWarnings struct {
	mu   sync.Mutex
	list []string
}

func (w *execWarnings) add(ws ...string) {
	w.mu.Lock()
	w.list = append(w.list, ws...)
	w.mu.Unlock()
}

func callPure(ctx context.Context, bt *boundTool, args map[string]any, mode signature.Mode) (any, error) {
	validate := bt.sig != nil && mode != signature.Disabled
	if validate {
		coerced, warns, verr := bt.sig.CoerceInputs(args, mode)
		w, _ := ctx.Value(warnKey{}).(*execWarnings)
		if w != nil && len(warns) > 0 {
			w.add(prefixLines(bt.name+": ", strings.Join(warns, "\n"))...)
		}
		if verr != nil {
			if mode.Fatal() {
				return nil, fmt.Errorf("tool validation errors:\n%s", verr.Error())
			}
			if w != nil {
				w.add(prefixLines(bt.name+": ", verr.Error())...)
			}
		}
		args = coerced
	}
	out, err := safeCall(ctx, bt.tool.fn, args)
	if err != nil {
		return nil, err
	}
	if validate {
		return checkToolOutput(bt, bt.sig, out, mode, func(ws ...string) {
			if w, _ := ctx.Value(warnKey{}).(*execWarnings); w != nil {
				w.add(ws...)
			}
		})
	}
	return out, nil
}

// stubTools has every tool name; calling one is an error. Definitions and
// the arity probe run with them, so that defining a program never calls
// a real tool.
func stubTools(names []string) lisp.Tools {
	out := make(lisp.Tools, len(names))
	for _, n := range names {
		out[n] = lisp.ToolFunc(func(context.Context, map[string]any) (any, error) {
			return nil, fmt.Errorf("tool %s called while defining the function: tools may only be called inside it", n)
		})
	}
	return out
}

// invalidCompiled is a Load / definition error.
func invalidCompiled(field, format string, args ...any) error {
	return &Error{Kind: KindSpec, Field: field, Reason: ReasonInvalidCompiled, Msg: fmt.Sprintf(format, args...)}
}

// newCompiled defines source and checks it is a one-argument function.
// The definition runs with stub tools (any call is an error), a short
// timeout and no inputs; its top-level defs (helpers) are kept for every
// execution.
func newCompiled(source string, sig *signature.Signature, mode signature.Mode, tools map[string]*boundTool, ltools lisp.Tools) (*Compiled, error) {
	src := strings.TrimSpace(source)
	if src == "" {
		return nil, invalidCompiled("source", "empty program: want (fn [args] ...)")
	}
	if !utf8.ValidString(src) {
		return nil, invalidCompiled("source", "program is not valid UTF-8")
	}
	if len(src) > MaxCompiledSource {
		return nil, invalidCompiled("source", "program of %d bytes exceeds the limit of %d", len(src), MaxCompiledSource)
	}
	names := sortedKeys(tools)
	stubs := stubTools(names)
	ctx, cancel := context.WithTimeout(context.Background(), definitionTimeout)
	defer cancel()
	res, err := lisp.Exec(ctx, src, lisp.Options{Tools: stubs, Limits: messages.Limits{ProgramTimeout: definitionTimeout, MemoryLimit: -1}})
	if err != nil {
		return nil, invalidCompiled("source", "%s", lispDetail(err))
	}
	fn := res.Value
	if v, ok := fn.(*lisp.Var); ok {
		fn = res.Memory[v.Name]
	}
	if _, ok := fn.(*lisp.Closure); !ok {
		return nil, invalidCompiled("source", "the program must evaluate to a function (fn [args] ...), got %s %s",
			lisp.TypeName(fn), lisp.Sprint(fn, lisp.PrintOptions{MaxLen: 60}))
	}
	for _, reserved := range []string{compiledFnName, compiledArgsName} {
		if _, ok := res.Memory[reserved]; ok {
			return nil, invalidCompiled("source", "the name %s is reserved", reserved)
		}
	}
	defs := make(map[string]lisp.Value, len(res.Memory))
	maps.Copy(defs, res.Memory)
	// Probe the arity: calling with no argument must fail at the call
	// itself with "expects 1 arg" (before the body runs).
	probe := make(map[string]any, len(defs)+1)
	maps.Copy(probe, defs)
	probe[compiledFnName] = fn
	_, perr := lisp.Exec(ctx, "("+compiledFnName+")", lisp.Options{Memory: probe, Tools: stubs, Limits: messages.Limits{ProgramTimeout: definitionTimeout, MemoryLimit: -1}})
	var le *lisp.Error
	if !errors.As(perr, &le) || le.Kind != lisp.KindArity || le.Pos.Line != 1 || le.Pos.Col != 1 || !strings.Contains(le.Msg, "expects 1 arg,") {
		got := "it accepts no argument"
		if le != nil && le.Kind == lisp.KindArity && le.Pos.Line == 1 && le.Pos.Col == 1 {
			got = le.Msg
		}
		return nil, invalidCompiled("source", "the function must take exactly one argument, a map of the named inputs (%s)", got)
	}
	callMem := make(map[string]any, len(defs)+2)
	for k := range defs {
		callMem[k] = nil
	}
	callMem[compiledFnName], callMem[compiledArgsName] = nil, nil
	call, cerr := lisp.Compile(compiledCall, lisp.Options{Memory: callMem})
	if cerr != nil {
		return nil, invalidCompiled("source", "%s", lispDetail(cerr))
	}
	toolSigs := map[string]*signature.Signature{}
	for _, bt := range tools {
		if bt.decl != nil {
			toolSigs[bt.tool.Signature] = bt.decl
		}
	}
	return &Compiled{Source: src, Signature: sig.String(), sig: sig, mode: mode, fn: fn, defs: defs, call: call,
		tools: tools, toolNames: names, ltools: ltools, toolSigs: toolSigs}, nil
}

func lispDetail(err error) string {
	var le *lisp.Error
	if errors.As(err, &le) {
		return lispErrorText(le)
	}
	return err.Error()
}

// Execute runs the program on args, a map of the signature's named
// inputs (always a map, also for one input or none). No model is
// called; tools are. The arguments are also available to the program as
// ctx/name. Inputs are validated against the signature (a failure is
// input_validation_error in the fatal modes, warnings otherwise), the
// result is validated the same way (validation_error); a program's
// (fail ...) keeps its reason; lisp errors keep theirs (type_error,
// timeout, tool_error...).
//
// The Step is never nil: Return is the value, Usage counts tool calls and
// the duration, and Trace holds one turn with the tool calls and println
// output. On failure err is an *Error of KindRun carrying the Step, as
// for Agent.Run. Execute is safe for concurrent use.
func (c *Compiled) Execute(ctx context.Context, args map[string]any) (*messages.Step, error) {
	start := time.Now()
	// the Step and its one turn's trace are one allocation
	sa := &stepAlloc{st: messages.Step{Version: messages.StepVersion, Signature: c.Signature, Mode: messages.ModeLisp}}
	st := &sa.st
	finish := func(f *messages.Fail) (*messages.Step, error) {
		st.Usage.Duration = time.Since(start)
		if f == nil {
			return st, nil
		}
		st.Fail = f
		return st, &Error{Kind: KindRun, Reason: f.Reason, Msg: f.Message, Step: st}
	}
	if args == nil {
		args = map[string]any{}
	}
	if len(c.sig.Inputs) > 0 && c.mode != signature.Disabled {
		if verr := c.sig.ValidateInputs(args, c.mode); verr != nil {
			if c.mode.Fatal() {
				return finish(&messages.Fail{Reason: ReasonInputValidation, Message: "input validation failed:\n" + verr.Error()})
			}
			st.Warnings = append(st.Warnings, prefixLines("input ", verr.Error())...)
		}
	}
	// arguments that are scalars convert to themselves: the run reads
	// them in place (it never writes its context)
	vals := args
	if !plainScalars(args) {
		vals = make(map[string]any, len(args))
		for k, v := range args {
			lv, err := lisp.FromGo(v)
			if err != nil {
				return finish(&messages.Fail{Reason: "invalid_context", Message: fmt.Sprintf("argument %s: %v", k, err)})
			}
			vals[k] = lv
		}
	}
	argMap, err := lisp.FromGo(vals)
	if err != nil {
		return finish(&messages.Fail{Reason: "invalid_context", Message: err.Error()})
	}
	mem := make(map[string]any, len(c.defs)+2)
	for k, v := range c.defs {
		mem[k] = v
	}
	mem[compiledFnName] = c.fn
	mem[compiledArgsName] = argMap
	var w *execWarnings
	if len(c.ltools) > 0 && c.mode != signature.Disabled {
		wc := &ctxval.Ctx[warnKey, execWarnings]{Context: ctx}
		w, ctx = &wc.V, wc
	}
	res, xerr := c.call.Run(ctx, programLimits(lisp.Options{Context: vals, Memory: mem, Tools: c.ltools,
		Limits: messages.Limits{MemoryLimit: -1}, FloatPrecision: FloatPrecision}, c.lim))
	turn := messages.Turn{Number: 1, Program: c.Source, StartedAt: start, ToolCalls: res.ToolCalls, Prints: res.Prints}
	st.Usage.ToolCalls = len(res.ToolCalls)
	if w != nil {
		st.Warnings = append(st.Warnings, w.list...)
	}
	if xerr != nil {
		var le *lisp.Error
		if !errors.As(xerr, &le) {
			le = &lisp.Error{Kind: lisp.KindInternal, Msg: xerr.Error(), Err: xerr}
		}
		var f *messages.Fail
		if le.Kind == lisp.KindFail {
			f = programFail(le)
		} else {
			f = &messages.Fail{Reason: le.Reason(), Message: c.errorText(le), Op: le.Op}
		}
		turn.Error = f.Message
		turn.Duration = time.Since(start)
		sa.trace[0] = turn
		st.Trace = sa.trace[:]
		return finish(f)
	}
	value := messages.RoundFloats(lisp.ToGo(res.Value), FloatPrecision)
	turn.Result = value
	turn.Duration = time.Since(start)
	sa.trace[0] = turn
	st.Trace = sa.trace[:]
	if c.mode != signature.Disabled && c.sig.Output != nil {
		if verr := c.sig.ValidateOutput(value, c.mode); verr != nil {
			if c.mode.Fatal() {
				text := validationText(verr, outputType(c.sig.Output))
				st.Trace[0].Error = text
				return finish(&messages.Fail{Reason: ReasonValidation, Message: text, Op: "return"})
			}
			st.Warnings = append(st.Warnings, prefixLines("return ", verr.Error())...)
		}
	}
	st.Return = value
	return finish(nil)
}

// stepAlloc is an execution's Step with the array its one-turn trace
// is kept in.
type stepAlloc struct {
	st    messages.Step
	trace [1]messages.Turn
}

// plainScalars reports whether every value of args is a scalar that
// lisp.FromGo gives back as it is (nil, bool, int64, float64, string).
func plainScalars(args map[string]any) bool {
	for _, v := range args {
		switch v.(type) {
		case nil, bool, int64, float64, string:
		default:
			return false
		}
	}
	return true
}

// errorText renders an execution error for the model like the loop does
// ("line:col: msg", caret snippet, "Hint:"), but with the snippet taken
// from Source: positions inside the function refer to it, not to the
// one-line call program that runs it.
func (c *Compiled) errorText(le *lisp.Error) string {
	var b strings.Builder
	b.WriteString(le.Error())
	b.WriteString(lisp.Snippet(c.Source, le.Pos))
	if le.Hint != "" {
		b.WriteString("\nHint: ")
		b.WriteString(le.Hint)
	}
	return b.String()
}

// WireSpec returns the program as a fleet payload for a mission of kind
// messages.KindCompiled ("apply at scale"), run once per input with no
// LLM. The mission must also list c.Tools() in Mission.Tools so the worker
// binds them:
//
//	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindCompiled,
//		Compiled: c.WireSpec(inputs), Tools: c.Tools()}
func (c *Compiled) WireSpec(inputs []map[string]any) *messages.CompiledSpec {
	return &messages.CompiledSpec{Program: c.Source, Signature: c.Signature, Inputs: inputs}
}

// Tools returns the names of the tools the program may call, sorted.
func (c *Compiled) Tools() []string { return slices.Clone(c.toolNames) }

// AsTool wraps the compiled program as a Tool: calling it runs Execute
// (no model); a failed execution is a tool error. The tool carries
// the program's signature for the caller's prompt and is not validated
// again by the caller (Execute validates). It is pure, so agents using it
// can themselves be compiled.
func (c *Compiled) AsTool() Tool {
	desc := c.Description
	if desc == "" {
		desc = "compiled " + c.Name
	}
	name := c.Name
	return Tool{Signature: c.sig.String(), Description: desc, skip: true,
		fn: func(ctx context.Context, args map[string]any) (any, error) {
			st, err := c.Execute(ctx, args)
			if err != nil {
				return nil, fmt.Errorf("compiled %s failed: %s", name, failText(st.Fail))
			}
			return st.Return, nil
		}}
}
