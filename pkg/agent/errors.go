package agent

import (
	"errors"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Failure reasons the loop itself puts into Step.Fail.Reason. A program's
// own (fail {...}) keeps its reason; errors of pkg/lisp keep theirs
// ("parse_error", "timeout", ...) in single-turn mode; llm registry errors
// keep llm_not_found, invalid_llm and llm_registry_required.
const (
	ReasonMaxTurns        = "max_turns_exceeded"
	ReasonMissionTimeout  = "mission_timeout"
	ReasonMaxDepth        = "max_depth_exceeded"
	ReasonTurnBudget      = "turn_budget_exhausted"
	ReasonMemoryLimit     = "memory_limit_exceeded"
	ReasonChainedFailure  = "chained_failure"
	ReasonLLMError        = "llm_error"
	ReasonCanceled        = "canceled"
	ReasonValidation      = "validation_error"
	ReasonInputValidation = "input_validation_error"
	ReasonInvalidAgent    = "invalid_agent"
	ReasonNoCode          = "no_code"
	// ReasonBudgetExceeded: a model call did not fit the run's max_cost_usd
	// or max_tokens, or a budget of the fleet (llm.BudgetError).
	ReasonBudgetExceeded = "budget_exceeded"
)

// Kind classifies an *Error.
type Kind uint8

// The kinds of *Error.
const (
	// KindSpec: New rejected a Spec; Error.Field names the field.
	KindSpec Kind = iota + 1
	// KindRun: a run failed; Error.Step is the failed Step and Error.Reason
	// its Fail.Reason.
	KindRun
)

// Error is the one error type of package agent. New returns it with
// KindSpec and the offending Field; Run returns it with KindRun, carrying
// the failed Step (the same Step Run returns) and its reason.
//
// errors.Is(err, agent.ErrInvalidSpec) matches every spec error and
// errors.Is(err, agent.ErrMaxTurns) (and the other run sentinels) match a
// run error by reason.
type Error struct {
	Kind Kind
	// Field names the Spec field at fault ("prompt", "tools[search].signature").
	Field string
	// Reason is the snake_case failure reason (KindRun).
	Reason string
	// Msg is the lowercase message.
	Msg string
	// Step is the failed Step (KindRun); never nil for KindRun.
	Step *messages.Step
	// Err is the underlying cause, if any.
	Err error
}

// Error returns "field: msg" for spec errors and "reason: msg" for run errors.
func (e *Error) Error() string {
	switch {
	case e.Kind == KindSpec && e.Field != "":
		return "agent: " + e.Field + ": " + e.Msg
	case e.Kind == KindRun:
		if e.Msg == "" {
			return "agent: " + e.Reason
		}
		return "agent: " + e.Reason + ": " + e.Msg
	}
	return "agent: " + e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches sentinels: a spec sentinel matches any spec error; a run
// sentinel with a Reason matches run errors of that reason (without one,
// any run error).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Kind != e.Kind {
		return false
	}
	return t.Reason == "" || t.Reason == e.Reason
}

// Sentinels for errors.Is.
var (
	// ErrInvalidSpec matches every error New returns for a bad Spec.
	ErrInvalidSpec = &Error{Kind: KindSpec}
	// ErrRunFailed matches every failed run.
	ErrRunFailed = &Error{Kind: KindRun}
	// ErrMaxTurns matches a run that used max_turns without return/fail.
	ErrMaxTurns = &Error{Kind: KindRun, Reason: ReasonMaxTurns}
	// ErrMissionTimeout matches a run that ran past its mission timeout.
	ErrMissionTimeout = &Error{Kind: KindRun, Reason: ReasonMissionTimeout}
	// ErrMaxDepth matches a sub-agent nested deeper than max_depth.
	ErrMaxDepth = &Error{Kind: KindRun, Reason: ReasonMaxDepth}
	// ErrTurnBudget matches a run stopped by the agent tree's turn budget.
	ErrTurnBudget = &Error{Kind: KindRun, Reason: ReasonTurnBudget}
	// ErrMemoryLimit matches a run whose memory grew past the limit.
	ErrMemoryLimit = &Error{Kind: KindRun, Reason: ReasonMemoryLimit}
	// ErrBudgetExceeded matches a run stopped by its max_cost_usd or
	// max_tokens, or by a budget of the fleet.
	ErrBudgetExceeded = &Error{Kind: KindRun, Reason: ReasonBudgetExceeded}
	// ErrChainedFailure matches a run given a failed Step as context.
	ErrChainedFailure = &Error{Kind: KindRun, Reason: ReasonChainedFailure}
)

func specErr(field, msg string, cause error) error {
	return &Error{Kind: KindSpec, Field: field, Msg: msg, Err: cause}
}

// StepOf returns the Step carried by a run error (nil if err is not one).
func StepOf(err error) *messages.Step {
	var e *Error
	if errors.As(err, &e) {
		return e.Step
	}
	return nil
}
