package fleet

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Runner executes one mission. pkg/agent provides the real one; tests use
// fakes. Run returns the mission's Step (a failed Step is a normal outcome,
// with or without an error). It returns (nil, err) only when no Step could
// be produced; wrap ErrRetryable in err to have the mission handed back and
// retried after WorkerConfig.NakDelay instead of failed. Run must return
// soon after ctx is done; context.Cause(ctx) says why (ErrCancelled,
// ErrWorkerShutdown, ErrFenced, or a deadline). A successful Step is kept
// even when ctx ended meanwhile (except ErrFenced: another worker owns the
// mission); otherwise ErrCancelled turns the outcome into a "cancelled"
// Step and ErrWorkerShutdown hands the mission back. Run may be called
// concurrently for different missions.
type Runner interface {
	Run(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error)
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error)

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
	return f(ctx, m, env)
}

// RunEnv is what a worker gives a Runner for one mission.
type RunEnv struct {
	// Tools are the remote tools the mission names (Mission.Tools); every
	// other name is refused before any request. Tool calls made through it
	// emit tool_call and tool_result events.
	Tools *Toolbox
	// Journal is the mission's turn journal (nil when the worker runs with
	// NoJournal). Tools already journal their results through it; a
	// runner journals its model replies (pkg/fleet/agentrun does): Replay
	// before asking the model, Record the reply as it comes, and Flush
	// before any other request leaves the runner (the Toolbox flushes
	// before each tool request, the worker before the result).
	Journal *Journal
	// Events publishes progress events of this mission (turns, programs,
	// LLM requests). The emitter fills MissionID, Time, Worker and Attempt
	// and masks firewalled values. Never nil.
	Events Emitter
	// Logger is the worker's logger with mission_id and attempt fields; it
	// is also attached to the run's ctx (zerolog.Ctx).
	Logger zerolog.Logger
	// Attempt counts deliveries of the mission, from 1.
	Attempt int
	// WorkerID names the worker.
	WorkerID string
	// Header holds the mission message's headers (trace context); read
	// only.
	Header nats.Header
	// Metrics records model calls and program runs; nil when the worker
	// has no metrics (its methods then do nothing).
	Metrics *Metrics
	// Tracer starts the run's spans (turns, model calls, programs) under
	// the attempt span the run's ctx carries; nil when tracing is off.
	Tracer trace.Tracer
	// Memory is what the mission may hold from its tools (decoded
	// results, the record of every call), reserved for it in the worker's
	// memory budget (WorkerConfig.MemoryBudget): a runner charges what its
	// programs hold against it (pkg/fleet/agentrun hands its programs a
	// lisp.Meter of this limit). 0: no limit.
	Memory int64
	// MemoryRaise tells the reader of a memory_limit error how to allow
	// more (the end of the error's message).
	MemoryRaise string
}

// Emitter publishes progress events; Emit does not block on the network and
// is safe for concurrent use.
type Emitter interface {
	Emit(ev *messages.Event)
}

// emitter publishes a mission's events on core NATS; the EVENTS stream
// stores them.
type emitter struct {
	nc        *nats.Conn
	missionID string
	worker    string
	attempt   int
}

func (e *emitter) Emit(ev *messages.Event) {
	if ev == nil || !messages.ValidEventKind(ev.Kind) {
		return
	}
	out := ev.Masked()
	out.Version = messages.EventVersion
	out.MissionID = e.missionID
	if out.Time.IsZero() {
		out.Time = time.Now().UTC()
	}
	out.Worker, out.Attempt = e.worker, e.attempt
	data, err := messages.Marshal(out)
	if err != nil {
		// A value with no plain form: send the event without it.
		out.Args, out.Result, out.Data = nil, nil, nil
		if data, err = messages.Marshal(out); err != nil {
			return
		}
	}
	_ = e.nc.Publish(messages.EventSubject(e.missionID, out.Kind), data)
}
