package agent

import (
	"context"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// EventKind names an observer event.
type EventKind string

// The events, in the order a run emits them.
const (
	EventRunStart      EventKind = "run.start"      // Context
	EventRunStop       EventKind = "run.stop"       // Duration, Step, Status
	EventRunException  EventKind = "run.exception"  // Duration, Err (a recovered panic)
	EventTurnStart     EventKind = "turn.start"     // Turn
	EventTurnStop      EventKind = "turn.stop"      // Turn, Duration, Usage, Program
	EventLLMStart      EventKind = "llm.start"      // Turn, Messages
	EventLLMStop       EventKind = "llm.stop"       // Turn, Duration, Usage, Response (Err when it failed)
	EventProgramStart  EventKind = "program.start"  // Turn, Program
	EventProgramStop   EventKind = "program.stop"   // Turn, Duration, Err (a *lisp.Error when the program failed)
	EventToolStart     EventKind = "tool.start"     // Tool, Args
	EventToolStop      EventKind = "tool.stop"      // Tool, Duration, Result
	EventToolException EventKind = "tool.exception" // Tool, Duration, Err
	EventPlan          EventKind = "plan"           // Turn, Plan; Tool: the id of the step marked done ("" at the run's start)
	EventEmit          EventKind = "emit"           // Turn, Result: the value a program emitted, redacted by the firewall
)

// Event is one observer notification. Fields not listed for a kind are
// zero. Events carry full data (firewalled fields included): observers are
// Go code, not models. Values are shared with the run: do not modify them.
type Event struct {
	Kind     EventKind
	Agent    string
	Depth    int // 1 for the top-level agent
	Turn     int
	Time     time.Time
	Duration time.Duration
	Usage    llm.Usage
	Tool     string
	Args     map[string]any
	Result   any
	Err      error
	Program  string
	Response string
	Messages []llm.Message
	Context  map[string]any
	Step     *messages.Step
	Status   string // "ok" or "error" (run.stop)
	// Plan is the state of the agent's plan (plan).
	Plan []messages.PlanStep
}

// Observer receives events. Observe must be safe for concurrent use (tools
// may run in parallel) and should return quickly; notifications are
// fire-and-forget: a panic in Observe is recovered and ignored, and nothing
// an observer does changes the run.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

func (t *tree) emit(ctx context.Context, e Event) {
	if t.observer == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	defer func() { _ = recover() }()
	t.observer.Observe(ctx, e)
}
