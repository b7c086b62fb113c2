package builtins

import (
	"context"
	"errors"
	"fmt"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// The host builtins: each is an entry of the builtin table (name, arity,
// doc, usage), the one place their metadata lives; a run's host gives
// their functions (Options.Host). A run whose host does not give one
// fails its calls with unknown_tool.
func registerServices(r *registry) {
	r.Add("llm-query", 1, 1, hostCall("llm-query")).host().
		usage(`(llm-query {:prompt "..." :signature "{label :string}" :input x})`).
		doc("asks the mission's model a one-shot question: the prompt, the input (as JSON) when given, and the type its answer must have; returns the checked answer")
	r.Add("emit", 1, 1, hostCall("emit")).host().
		usage("(emit value)").
		doc("sends the value at once to whoever runs the mission, as a progress event (small values, a few a second); returns nil")
	r.Add("step-done", 1, 2, hostCall("step-done")).host().
		usage(`(step-done "id" "summary")`).
		doc("marks step id of the plan done, with a short summary; returns nil")
}

// host marks an entry as a host builtin (HostBuiltins).
func (e *Entry) host() *Entry { e.IsHost = true; return e }

// hostCall is the builtin that calls the host's function for name.
func hostCall(name string) core.BuiltinFunc {
	return func(th *core.Thread, a []core.Value) core.Value {
		fn := th.Host.HostFns[name]
		if fn == nil {
			th.Raise(core.KindUnknownTool, "%s is not available: the agent running this program does not enable it", name)
		}
		th.Tick()
		args := make([]any, len(a))
		for i, v := range a {
			th.RealiseDeep(v)
			args[i] = core.ToGo(v)
		}
		out, err := safeHostCall(th.DeadlineCtx(), fn, args)
		if err == nil {
			var v core.Value
			if v, err = core.FromGo(out); err == nil {
				return v
			}
			err = fmt.Errorf("bad result: %w", err)
		}
		if ctxErr := th.DeadlineCtx().Err(); ctxErr != nil {
			th.RaiseCtx(ctxErr)
		}
		var le *core.Error
		if errors.As(err, &le) && le.Kind == core.KindMemory {
			panic(&core.Error{Kind: core.KindMemory, Pos: th.CallPos, Op: name, Msg: le.Msg, Hint: le.Hint, Err: err})
		}
		panic(&core.Error{Kind: core.KindTool, Pos: th.CallPos, Op: name, Msg: name + " failed: " + err.Error(), Err: err})
	}
}

func safeHostCall(ctx context.Context, fn core.HostFunc, args []any) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(ctx, args)
}
