package messages

import (
	"fmt"
	"math"
	"time"
)

// Defaults of the limits (Limits). They are the one source of these
// values: DefaultLimits gathers them, pkg/agent applies them to a spec's
// zero limits and a fleet worker bounds a mission with
// DefaultMissionTimeout when neither the mission nor its agent sets one.
// docs/missions.md lists them in its limits table, checked by a test.
const (
	// DefaultMaxTurns bounds the turns of one agent.
	DefaultMaxTurns = 5
	// DefaultTurnBudget bounds the turns of a whole agent tree.
	DefaultTurnBudget = 20
	// DefaultMaxDepth bounds sub-agent nesting (the top level is 1).
	DefaultMaxDepth = 3
	// DefaultLLMTimeout bounds one model call (each retry attempt on its
	// own): hosted reasoning models take minutes for one long answer.
	DefaultLLMTimeout = 5 * time.Minute
	// DefaultProgramTimeout bounds one program run and its tool calls; the
	// program's step budget is derived from it.
	DefaultProgramTimeout = 30 * time.Second
	// DefaultMissionTimeout bounds a whole mission: every model call,
	// program and sub-agent.
	DefaultMissionTimeout = 15 * time.Minute
	// DefaultMemoryLimit bounds the printed size of an agent's memory.
	DefaultMemoryLimit = 1 << 20
	// DefaultProgramMemory bounds the memory one program run holds at once
	// (what it builds and keeps; host data does not count).
	DefaultProgramMemory = 64 << 20
	// DefaultMaxData bounds the encoded size of one large tool result a
	// mission reads (sent out of band, docs/wire.md): 256 MiB.
	DefaultMaxData = 256 << 20
	// DefaultListLimit and DefaultStringLimit bound the result previews fed
	// back to the model: items per collection, characters per string.
	DefaultListLimit   = 5
	DefaultStringLimit = 1000
	// DefaultMaxEmitBytes bounds one value a program emits, as JSON: an
	// emit event stays under the fleet's progress event bound.
	DefaultMaxEmitBytes = 4 << 10
	// DefaultEmitRate bounds the values a mission emits a second.
	DefaultEmitRate = 10
)

// Limits bound an agent's run. It is the one representation of the limits
// from mission file to interpreter: AgentSpec embeds it (each agent of a
// tree has its own), Mission.Limits overrides the top-level agent's for
// one mission, agent.Spec embeds it, and pkg/agent passes the program
// limits on to lisp.Options.
//
// Every limit follows one convention: 0 means the default (DefaultLimits),
// a negative value means unlimited. The mission timeout bounds the whole
// run; within it, each model call has its own LLMTimeout and each program
// run its own ProgramTimeout, so a slow model never eats the program's
// time or step budget.
type Limits struct {
	// MaxTurns bounds the agent's LLM turns (DefaultMaxTurns). MaxTurns 1
	// without tools is single-turn mode: the program's value is the
	// answer; otherwise only return/fail end the mission.
	MaxTurns int `msgpack:"max_turns,omitempty"`
	// RetryTurns are extra turns past MaxTurns, granted one at a time and
	// only to fix a return that failed signature validation in the turn
	// before (not for new work); the default is none. They count against
	// TurnBudget like any turn.
	RetryTurns int `msgpack:"retry_turns,omitempty"`
	// TurnBudget bounds the turns of the whole agent tree
	// (DefaultTurnBudget); the top-level agent's value applies to the
	// tree.
	TurnBudget int `msgpack:"turn_budget,omitempty"`
	// MaxDepth bounds sub-agent nesting at run time (DefaultMaxDepth; the
	// top level is 1).
	MaxDepth int `msgpack:"max_depth,omitempty"`
	// MaxToolCalls bounds the tool calls of each program run (text mode:
	// of the whole run, across turns; compiled missions: of each
	// execution); the default is unlimited.
	MaxToolCalls int `msgpack:"max_tool_calls,omitempty"`
	// LLMTimeout bounds one model call, each retry attempt on its own
	// (DefaultLLMTimeout); an attempt that runs out of it is retried under
	// the agent's llm_retry.
	LLMTimeout time.Duration `msgpack:"llm_timeout,omitempty"`
	// ProgramTimeout bounds one program run with its tool calls, and one
	// native tool call in text mode (DefaultProgramTimeout). When the
	// agent has sub-agents, a program may run until the mission timeout (a
	// sub-agent makes model calls of its own).
	ProgramTimeout time.Duration `msgpack:"program_timeout,omitempty"`
	// MissionTimeout bounds the whole run, sub-agents included
	// (DefaultMissionTimeout).
	MissionTimeout time.Duration `msgpack:"mission_timeout,omitempty"`
	// MaxSteps bounds the evaluation steps of one program run; the default
	// is derived from ProgramTimeout (lisp.StepBudget).
	MaxSteps int64 `msgpack:"max_steps,omitempty"`
	// ProgramMemory bounds the memory one program run holds at once, in
	// bytes: what it builds and keeps, not what it allocates and drops;
	// host data does not count, except the tool results and call records
	// the mission holds, charged as they enter against this same bound
	// across the mission's runs (DefaultProgramMemory). Exceeding it stops
	// the program with memory_limit, fed back to the model like any
	// program error.
	ProgramMemory int64 `msgpack:"program_memory,omitempty"`
	// MaxData bounds the encoded size of one tool result the mission
	// reads, in bytes (DefaultMaxData): a result sent out of band that is
	// larger is refused from its reference, before a byte of it is read,
	// and the tool call fails with an error naming the limit. The
	// top-level agent's value (with the mission's override) applies to
	// the mission.
	MaxData int64 `msgpack:"max_data,omitempty"`
	// MemoryLimit bounds the printed size of the agent's memory in bytes,
	// checked after each turn (DefaultMemoryLimit); exceeding it fails the
	// run (memory_limit_exceeded).
	MemoryLimit int64 `msgpack:"memory_limit,omitempty"`
	// MaxCostUSD bounds what the mission's model calls may cost, in US
	// dollars at the models' prices, sub-agents and retries included
	// (default: no bound). Each call is reserved before it is made (its
	// prompt's size and maximum output, priced) and settled with its
	// usage after; a call that does not fit ends the run with
	// budget_exceeded, its trace and usage kept. A model without prices
	// cannot be checked and is refused. The top-level agent's value (with
	// the mission's override) applies to the tree.
	MaxCostUSD float64 `msgpack:"max_cost_usd,omitempty"`
	// MaxTokens bounds the tokens (prompt and output) of the mission's
	// model calls, reserved and settled like MaxCostUSD (default: no
	// bound). The top-level agent's value applies to the tree.
	MaxTokens int64 `msgpack:"max_tokens,omitempty"`
	// PromptLimit truncates the result previews fed back to the model
	// (DefaultListLimit items, DefaultStringLimit characters).
	PromptLimit PromptLimit `msgpack:"prompt_limit,omitempty"`
	// MaxEmitBytes bounds one value a program streams out with (emit v),
	// in bytes of its JSON form (DefaultMaxEmitBytes); a larger one fails
	// the call. The top-level agent's value applies to the mission.
	MaxEmitBytes int64 `msgpack:"max_emit_bytes,omitempty"`
	// EmitRate bounds the values a mission's programs emit, per second,
	// in bursts of as many (DefaultEmitRate); an emit past it fails the
	// call. The top-level agent's value applies to the mission.
	EmitRate int `msgpack:"emit_rate,omitempty"`
}

// PromptLimit truncates result previews fed back to the model: List items
// and String characters (0 means the default).
type PromptLimit struct {
	List   int `msgpack:"list,omitempty"`
	String int `msgpack:"string,omitempty"`
}

// DefaultLimits returns the default of every limit; a limit whose default
// is unlimited or derived from another (MaxToolCalls, MaxSteps) is 0.
func DefaultLimits() Limits {
	return Limits{
		MaxTurns: DefaultMaxTurns, TurnBudget: DefaultTurnBudget, MaxDepth: DefaultMaxDepth,
		LLMTimeout: DefaultLLMTimeout, ProgramTimeout: DefaultProgramTimeout, MissionTimeout: DefaultMissionTimeout,
		ProgramMemory: DefaultProgramMemory, MemoryLimit: DefaultMemoryLimit, MaxData: DefaultMaxData,
		PromptLimit:  PromptLimit{List: DefaultListLimit, String: DefaultStringLimit},
		MaxEmitBytes: DefaultMaxEmitBytes, EmitRate: DefaultEmitRate,
	}
}

// Override returns l with every non-zero limit of o (negative: unlimited)
// in place of l's own. It names each limit (TestLimitsOverride sets every
// field, found by reflection, so a limit it misses fails the test) and
// allocates nothing: a worker calls it for every mission.
func (l Limits) Override(o Limits) Limits {
	over(&l.MaxTurns, o.MaxTurns)
	over(&l.RetryTurns, o.RetryTurns)
	over(&l.TurnBudget, o.TurnBudget)
	over(&l.MaxDepth, o.MaxDepth)
	over(&l.MaxToolCalls, o.MaxToolCalls)
	over(&l.LLMTimeout, o.LLMTimeout)
	over(&l.ProgramTimeout, o.ProgramTimeout)
	over(&l.MissionTimeout, o.MissionTimeout)
	over(&l.MaxSteps, o.MaxSteps)
	over(&l.ProgramMemory, o.ProgramMemory)
	over(&l.MaxData, o.MaxData)
	over(&l.MemoryLimit, o.MemoryLimit)
	over(&l.MaxCostUSD, o.MaxCostUSD)
	over(&l.MaxTokens, o.MaxTokens)
	over(&l.PromptLimit.List, o.PromptLimit.List)
	over(&l.PromptLimit.String, o.PromptLimit.String)
	over(&l.MaxEmitBytes, o.MaxEmitBytes)
	over(&l.EmitRate, o.EmitRate)
	return l
}

// WithDefaults returns l with every zero limit replaced by its default
// (DefaultLimits); unlimited (negative) limits stay negative.
func (l Limits) WithDefaults() Limits { return DefaultLimits().Override(l) }

// over sets *dst to v unless v is zero (the default).
func over[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

// Validate reports a limit no run can be held to: a max_cost_usd that is
// not a finite number. Its error names the field.
func (l Limits) Validate() error {
	if math.IsNaN(l.MaxCostUSD) || math.IsInf(l.MaxCostUSD, 0) {
		return fmt.Errorf("max_cost_usd: %v is not a finite number", l.MaxCostUSD)
	}
	return nil
}

// UnlimitedTimeout stands for an unlimited (negative) timeout where a
// duration is needed: a deadline far enough away never to matter, which
// keeps deadline arithmetic simple.
const UnlimitedTimeout = 100 * 365 * 24 * time.Hour

// LimitOr applies the limit convention to v: 0 means d (the default), a
// negative value means unlimited and is reported by ok = false.
func LimitOr[T ~int | ~int64](v, d T) (limit T, ok bool) {
	switch {
	case v == 0:
		return d, true
	case v < 0:
		return 0, false
	}
	return v, true
}

// EffectiveLimits are the limits mission m runs under: its own
// (Mission.Limits) over its top-level agent's, field by field; a mission
// without an agent (a compiled one) has its own only. Everything that
// reads a mission's limits reads them here.
func (m *Mission) EffectiveLimits() Limits {
	if m.Agent == nil {
		return m.Limits
	}
	return m.Agent.Limits.Override(m.Limits)
}
