// Package agentrun is the fleet.Runner that runs agent missions: it rebuilds
// the mission's agent from its wire spec, binds the mission's remote tools
// (NATS request/reply through the worker's Toolbox), resolves the model from
// the worker's registry, runs the SubAgent loop and reports progress events.
//
// It is the one place where pkg/fleet meets pkg/agent; the fleet package
// itself knows nothing of agents, so that tool services and dispatch clients
// importing it do not link the agent loop.
package agentrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// Config configures a Runner.
type Config struct {
	// Models are the models missions may name (worker configuration, e.g.
	// llmconfig.RegistryFromEnv). Required for agent missions.
	Models llm.Registry
	// DefaultModel is used when neither the mission nor its agent spec
	// names a model. Default "default".
	DefaultModel string
}

// Runner runs agent missions. It is safe for concurrent use.
type Runner struct {
	cfg Config
}

// New returns a Runner.
func New(cfg Config) *Runner {
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = "default"
	}
	return &Runner{cfg: cfg}
}

var _ fleet.Runner = (*Runner)(nil)

// Run executes one mission. Every outcome of the agent (success or a
// failure such as max_turns_exceeded) is a Step; an error is returned only
// when the worker is shutting down (the mission is handed back).
func (r *Runner) Run(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
	switch m.Kind {
	case messages.KindAgent:
	default:
		return failStep("unsupported_kind", fmt.Sprintf("mission kind %q is not supported by this worker", m.Kind)), nil
	}
	resolve := func(name string) (agent.Tool, bool) { return remoteTool(ctx, env.Tools, name), true }
	spec, err := agent.FromWire(m.Agent, resolve)
	if err != nil {
		return failStep(agent.ReasonInvalidAgent, err.Error()), nil
	}
	applyLimits(&spec, m.Limits)
	a, err := agent.New(spec)
	if err != nil {
		return failStep(agent.ReasonInvalidAgent, err.Error()), nil
	}
	model := m.Model
	if model == "" && m.Agent.LLM == "" {
		model = r.cfg.DefaultModel
	}
	if !m.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, m.Deadline)
		defer cancel()
	}
	step, runErr := a.Run(ctx, agent.RunOptions{
		LLM:              model,
		Registry:         r.cfg.Models,
		Context:          m.Context,
		ContextSignature: m.ContextSignature,
		Observer:         observer{events: env.Events, subAgents: m.Agent.SubAgents},
	})
	if cause := context.Cause(ctx); cause != nil && errors.Is(cause, fleet.ErrWorkerShutdown) {
		return nil, fmt.Errorf("%w: %w", fleet.ErrRetryable, cause)
	}
	if step == nil {
		step = failStep("internal_error", fmt.Sprint(runErr))
	}
	return step, nil
}

// applyLimits lets the mission's limits override the agent spec's.
func applyLimits(s *agent.Spec, l messages.Limits) {
	if l.MaxTurns > 0 {
		s.MaxTurns = l.MaxTurns
	}
	if l.Timeout > 0 {
		s.MissionTimeout = l.Timeout
	}
	if l.TurnBudget > 0 {
		s.TurnBudget = l.TurnBudget
	}
	if l.MaxToolCalls > 0 {
		s.MaxToolCalls = l.MaxToolCalls
	}
	if l.MemoryBytes > 0 {
		s.MemoryLimit = int(l.MemoryBytes)
	}
}

// remoteTool binds a mission tool name to the worker's Toolbox. When the
// tool's schema is known (discovered through $SRV.INFO), the agent validates
// and coerces inputs against it; when the service cannot be found now the
// tool is still bound, so the model sees "tool unavailable" when it calls it
// and can carry on.
func remoteTool(ctx context.Context, box *fleet.Toolbox, name string) agent.Tool {
	call := func(ctx context.Context, args map[string]any) (any, error) { return box.Call(ctx, name, args) }
	t, err := box.Get(ctx, name)
	if err != nil || t.Signature() == "" {
		tool := agent.Skip(call)
		if err == nil {
			tool = tool.WithDescription(t.Description())
		}
		return tool
	}
	return agent.FuncSig(t.Signature(), call).WithDescription(t.Description())
}

func failStep(reason, msg string) *messages.Step {
	return &messages.Step{Fail: &messages.Fail{Reason: reason, Message: msg}}
}

// observer turns agent events into fleet progress events. Remote tool calls
// are reported by the Toolbox itself; sub-agent tool calls are reported here.
type observer struct {
	events    fleet.Emitter
	subAgents map[string]*messages.AgentSpec
}

func (o observer) Observe(_ context.Context, e agent.Event) {
	ev := &messages.Event{Turn: e.Turn, Time: e.Time, Duration: e.Duration}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if e.Depth > 1 {
		ev.Data = map[string]any{"agent": e.Agent, "depth": int64(e.Depth)}
	}
	switch e.Kind {
	case agent.EventTurnStart:
		ev.Kind = messages.EventTurnStarted
	case agent.EventLLMStart:
		// From turn 2 on, the request's last message is the feedback on the
		// previous turn: exactly what the model was told (already
		// firewalled and truncated for the model). Report it as that
		// turn's end, then the new request.
		if e.Turn > 1 && len(e.Messages) > 0 {
			if fb := e.Messages[len(e.Messages)-1].Text(); fb != "" {
				o.events.Emit(&messages.Event{Kind: messages.EventTurnFinished, Turn: e.Turn - 1, Time: ev.Time,
					Data: withData(ev.Data, "feedback", fb)})
			}
		}
		ev.Kind = messages.EventLLMRequest
	case agent.EventLLMStop:
		// The program is known as soon as the model answers: report it
		// before the tool calls it makes.
		code, ok := agent.ParseResponse(e.Response)
		if !ok {
			return
		}
		ev.Kind, ev.Program = messages.EventProgram, code
	case agent.EventToolStart, agent.EventToolStop, agent.EventToolException:
		if _, sub := o.subAgents[e.Tool]; !sub || e.Depth > 1 {
			return
		}
		ev.Tool = e.Tool
		if e.Kind == agent.EventToolStart {
			ev.Kind, ev.Args = messages.EventToolCall, e.Args
		} else {
			ev.Kind, ev.Result = messages.EventToolResult, e.Result
			if e.Err != nil {
				ev.Error = e.Err.Error()
			}
		}
	default:
		return
	}
	o.events.Emit(ev)
}

// withData returns a copy of d with k set to v.
func withData(d map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(d)+1)
	for dk, dv := range d {
		out[dk] = dv
	}
	out[k] = v
	return out
}
