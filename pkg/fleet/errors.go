package fleet

import (
	"errors"
	"fmt"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrInvalidConfig wraps every configuration error.
	ErrInvalidConfig = errors.New("fleet: invalid configuration")
	// ErrNotFound: the mission id is unknown (no status, no result).
	ErrNotFound = errors.New("fleet: mission not found")
	// ErrCancelled is the cancellation cause of a mission cancelled by Cancel.
	ErrCancelled = errors.New("fleet: mission cancelled")
	// ErrWorkerShutdown is the cancellation cause of missions still running
	// when a worker's drain grace period ends; they are handed back to the
	// queue.
	ErrWorkerShutdown = errors.New("fleet: worker shutting down")
	// ErrFenced is the cancellation cause of a mission whose status was
	// taken over by another worker (this one was presumed dead); its result
	// is not published.
	ErrFenced = errors.New("fleet: mission taken over by another worker")
	// ErrRetryable marks a Runner error as transient: the mission is handed
	// back with a delay instead of failing. Wrap it: fmt.Errorf("...: %w",
	// fleet.ErrRetryable).
	ErrRetryable = errors.New("fleet: retryable failure")
	// ErrNoWorker: a request only a worker carries out (a cancel) found
	// no worker running.
	ErrNoWorker = errors.New("fleet: no worker is running to carry the request out (the fleet, not the client, stores a cancel)")
	// ErrIDTaken: another submitter submitted a mission with the same id
	// within the queue's duplicate window, so this one was not queued.
	ErrIDTaken = errors.New("fleet: mission id taken by another submitter's mission")
	// ErrQuotaExceeded: the submitter has as many missions queued as its
	// quota's max_queued allows; wrapped by a *QuotaExceededError.
	ErrQuotaExceeded = errors.New("fleet: quota exceeded")
	// ErrWorkerStopped is returned by Start on a worker that was stopped.
	ErrWorkerStopped = errors.New("fleet: worker stopped")

	// ErrToolForbidden: the mission does not name the tool.
	ErrToolForbidden = errors.New("tool forbidden")
	// ErrToolUnavailable: no tool service answers for the tool.
	ErrToolUnavailable = errors.New("tool unavailable")
	// ErrToolTimeout: the tool did not answer in time.
	ErrToolTimeout = errors.New("tool timeout")
)

// ToolError is the error of a failed remote tool call. Its text is written
// for the model: it names the tool and says what happened ("tool search:
// unavailable: no tool service is running for it"). Code is one of the
// messages.ToolErr* codes. errors.Is matches ErrToolForbidden,
// ErrToolUnavailable and ErrToolTimeout by code.
type ToolError struct {
	Tool    string
	Code    string
	Message string
	// Err is the underlying transport error, if any.
	Err error
}

// Error returns "tool <name>: <code>: <message>".
func (e *ToolError) Error() string {
	return fmt.Sprintf("tool %s: %s: %s", e.Tool, e.Code, e.Message)
}

// Unwrap returns the transport error.
func (e *ToolError) Unwrap() error { return e.Err }

// Is matches the tool sentinels by code.
func (e *ToolError) Is(target error) bool {
	switch target {
	case ErrToolForbidden:
		return e.Code == messages.ToolErrForbidden
	case ErrToolUnavailable:
		return e.Code == messages.ToolErrUnavailable
	case ErrToolTimeout:
		return e.Code == messages.ToolErrTimeout
	}
	return false
}

// Failure reasons of Steps the fleet itself produces (not the runner).
const (
	ReasonCancelled     = "cancelled"
	ReasonDeadline      = "deadline"
	ReasonTimeout       = "timeout"
	ReasonMaxDeliveries = "max_deliveries"
	ReasonRunnerError   = "runner_error"
	ReasonRunnerPanic   = "runner_panic"
	ReasonUnsupported   = "unsupported"
	ReasonInvalid       = "invalid_mission"
	// ReasonOverLimit: the mission asks for more than the worker's
	// Ceilings allow; it did not run.
	ReasonOverLimit = "over_limit"
	// ReasonQuotaExceeded: the mission was taken while its submitter had
	// more missions queued than its quota's max_queued; it did not run.
	ReasonQuotaExceeded = "quota_exceeded"
	// ReasonUnreadableResult: the runner's Step could not be stored so
	// that every reader decodes it (nested deeper than
	// messages.MaxNesting, more values than messages.MaxValuesFor its
	// size, larger than messages.DefaultMaxData); this failure is stored
	// instead.
	ReasonUnreadableResult = "unreadable_result"
)
