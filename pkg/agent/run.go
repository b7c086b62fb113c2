package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// TraceMode says when a run keeps its turn-by-turn trace.
type TraceMode uint8

// Trace modes. The zero value keeps the trace.
const (
	TraceOn      TraceMode = iota // always keep the trace (default)
	TraceOnError                  // keep it only when the run fails
	TraceOff                      // never keep it
)

// RunOptions are the runtime parameters of one run. The zero value is
// usable once a model is given (Model, or LLM with Registry, or the
// agent's own Spec.Model / Spec.LLM).
type RunOptions struct {
	// Model is the model to use unless the agent names its own.
	Model llm.Model
	// LLM names the model in Registry (used when Model is nil).
	LLM string
	// Registry maps model names to models; it is inherited by every
	// sub-agent of the run.
	Registry llm.Registry
	// Context is the input data available as ctx/: nil, a
	// map[string]any, or a *messages.Step (its Return becomes the context
	// and its Signature types the data inventory; a failed Step ends the
	// run at once with chained_failure). A non-map Return is available as
	// ctx/value.
	Context any
	// ContextSignature types the context for the data inventory (the
	// output of the signature is used; it must be a map type).
	ContextSignature string
	// LLMOpts are merged over Spec.LLMOpts for every request.
	LLMOpts map[string]any
	// Trace says when to keep Step.Trace (default: always).
	Trace TraceMode
	// Debug records the prompt messages and memory snapshots per turn.
	Debug bool
	// Observer, if set, receives the run's events (and its sub-agents').
	Observer Observer
}

// tree is the state shared by a top-level run and all its sub-agents.
type tree struct {
	registry llm.Registry
	budget   atomic.Int64
	deadline time.Time
	maxDepth int
	observer Observer
	debug    bool
	trace    TraceMode
	// spend is the tree's money and token budget (max_cost_usd,
	// max_tokens of the top-level agent), nil when it has none; exceeded
	// holds the first call it or another budget refused, which ends every
	// agent of the tree at its next turn.
	spend    *llm.Limit
	exceeded atomic.Pointer[llm.BudgetError]
	// secrets is the firewall's registry, shared by every agent of the
	// tree so that a value firewalled anywhere stays hidden everywhere.
	secrets *secrets
	// emits bounds what the tree's programs emit (the top-level agent's
	// max_emit_bytes and emit_rate, emitLimits): made at the first emit
	// (emitLimiter), so a run that emits nothing, or waits on its model
	// before its first program, holds none.
	emits      atomic.Pointer[emitLimiter]
	emitLimits *Limits
}

// emitLimiter returns the tree's emit limiter, made at its first use.
func (t *tree) emitLimiter() *emitLimiter {
	if e := t.emits.Load(); e != nil {
		return e
	}
	t.emits.CompareAndSwap(nil, newEmitLimiter(*t.emitLimits))
	return t.emits.Load()
}

// link is what a sub-agent run inherits from its caller.
type link struct {
	tree       *tree
	depth      int // the caller's depth
	model      llm.Model
	modelName  string
	boundModel llm.Model
	boundName  string
}

// Run runs the agent. The Step is never nil. On failure err is an *Error
// of KindRun carrying the same Step, and step.Fail is set; errors.Is
// matches it against ErrMaxTurns, ErrMissionTimeout, ... by reason.
// Run is safe for concurrent use.
func (a *Agent) Run(ctx context.Context, opts RunOptions) (*messages.Step, error) {
	return a.run(ctx, opts, nil)
}

// RunPrompt builds an agent from spec with prompt as its Prompt and runs
// it, a convenience for one-off agents. An invalid spec
// gives a failed Step with reason invalid_agent.
func RunPrompt(ctx context.Context, prompt string, spec Spec, opts RunOptions) (*messages.Step, error) {
	spec.Prompt = prompt
	a, err := New(spec)
	if err != nil {
		st := &messages.Step{Version: messages.StepVersion, Mode: messages.ModeLisp,
			Fail: &messages.Fail{Reason: ReasonInvalidAgent, Message: err.Error()}}
		return st, &Error{Kind: KindRun, Reason: ReasonInvalidAgent, Msg: err.Error(), Step: st, Err: err}
	}
	return a.Run(ctx, opts)
}

// Then runs next with prev as its context, without panicking. A failed (or nil) prev gives chained_failure without
// calling any model, so a chain can run step after step and check the
// error once at the end:
//
//	step, _ := finder.Run(ctx, opts)
//	step, _ = agent.Then(ctx, step, drafter, opts)
//	step, err := agent.Then(ctx, step, sender, opts)
func Then(ctx context.Context, prev *messages.Step, next *Agent, opts RunOptions) (*messages.Step, error) {
	if prev == nil {
		prev = &messages.Step{Fail: &messages.Fail{Reason: "missing_step", Message: "previous step is nil"}}
	}
	opts.Context = prev
	return next.Run(ctx, opts)
}

// runInput is the resolved context of a run.
type runInput struct {
	data    map[string]any
	ctxType *signature.Map
}

// resolveInput turns RunOptions.Context into ctx/ data and its type, or a
// failure (chained_failure, invalid_context).
func resolveInput(opts RunOptions) (*runInput, *messages.Fail) {
	in := &runInput{}
	var sigSrc string
	switch c := opts.Context.(type) {
	case nil:
	case map[string]any:
		in.data = maps.Clone(c)
	case *messages.Step:
		if c == nil {
			break
		}
		if c.Fail != nil {
			up := map[string]any{"reason": c.Fail.Reason, "message": c.Fail.Message}
			if c.Fail.Op != "" {
				up["op"] = c.Fail.Op
			}
			if c.Fail.Details != nil {
				up["details"] = c.Fail.Details
			}
			return nil, &messages.Fail{Reason: ReasonChainedFailure,
				Message: "upstream step failed: " + c.Fail.Error(), Details: map[string]any{"upstream": up}}
		}
		switch r := c.Return.(type) {
		case map[string]any:
			in.data = maps.Clone(r)
		case nil:
		default:
			in.data = map[string]any{"value": r}
		}
		sigSrc = c.Signature
	default:
		return nil, &messages.Fail{Reason: "invalid_context", Message: fmt.Sprintf("context must be a map[string]any or a *messages.Step, got %T", opts.Context)}
	}
	if opts.ContextSignature != "" {
		sigSrc = opts.ContextSignature
	}
	if sigSrc != "" {
		s, err := signature.Parse(sigSrc)
		if err != nil {
			return nil, &messages.Fail{Reason: "invalid_context_signature", Message: err.Error()}
		}
		out := s.Output
		if o, ok := out.(signature.Optional); ok {
			out = o.Elem
		}
		if m, ok := out.(signature.Map); ok {
			in.ctxType = &m
		}
	}
	if in.data == nil {
		// made here, not before the context's own copy replaces it
		in.data = map[string]any{}
	}
	return in, nil
}

// resolveModel applies the resolution order: agent (Spec.Model, Spec.LLM)
// > bound (AsTool) > parent > top-level RunOptions.
func (a *Agent) resolveModel(opts RunOptions, l *link, reg llm.Registry) (llm.Model, string, error) {
	lookup := func(name string) (llm.Model, string, error) {
		m, err := reg.Lookup(name)
		return m, name, err
	}
	switch {
	case a.spec.Model != nil:
		return a.spec.Model, a.spec.LLM, nil
	case a.spec.LLM != "":
		return lookup(a.spec.LLM)
	}
	if l != nil {
		switch {
		case l.boundModel != nil:
			return l.boundModel, l.boundName, nil
		case l.boundName != "":
			return lookup(l.boundName)
		case l.model != nil:
			return l.model, l.modelName, nil
		case l.modelName != "":
			// a Session's parent names its model without having called it
			return lookup(l.modelName)
		}
	}
	switch {
	case opts.Model != nil:
		return opts.Model, opts.LLM, nil
	case opts.LLM != "":
		return lookup(opts.LLM)
	}
	return nil, "", &llm.Error{Kind: "llm_required", Message: "no LLM given: set RunOptions.Model, RunOptions.LLM with a Registry, or Spec.Model / Spec.LLM"}
}

func failStep(st *messages.Step, f *messages.Fail) (*messages.Step, error) {
	return failStepCause(st, f, nil)
}

// failStepCause is failStep whose error wraps cause: a model call's
// error, which a caller may branch on (a fleet hands a mission back when
// the call failed on the fleet's own store).
func failStepCause(st *messages.Step, f *messages.Fail, cause error) (*messages.Step, error) {
	st.Fail = f
	return st, &Error{Kind: KindRun, Reason: f.Reason, Msg: f.Message, Step: st, Err: cause}
}

// llmFail is the Fail of a run whose model call failed for good. When the
// turn before ended in an error, that error is often the real cause (a tool
// no service provides, ...), so the Fail carries it in its message and in
// details.last_error.
func llmFail(lerr error, prevErr string) *messages.Fail {
	f := &messages.Fail{Reason: ReasonLLMError, Message: lerr.Error(), Op: "llm"}
	if errors.Is(lerr, llm.ErrBudgetExceeded) {
		f.Reason = ReasonBudgetExceeded
	}
	if prevErr != "" {
		f.Message += "; the turn before failed: " + firstLine(prevErr)
		f.Details = map[string]any{"last_error": prevErr}
	}
	return f
}

func reasonOf(err error) string {
	var le *llm.Error
	if errors.As(err, &le) {
		return le.Reason()
	}
	return ReasonLLMError
}
