package fleet

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// defaultLLMOpts is the llm_opts allow-list a worker uses when
// Ceilings.LLMOpts is nil: sampling settings that change neither where a
// request goes nor what it may cost beyond its max_tokens.
var defaultLLMOpts = []string{"temperature", "top_p", "top_k", "max_tokens", "max_completion_tokens",
	"stop", "seed", "presence_penalty", "frequency_penalty", "reasoning_effort"}

// DefaultLLMOpts returns the llm_opts keys a worker allows when
// Ceilings.LLMOpts is nil.
func DefaultLLMOpts() []string { return append([]string(nil), defaultLLMOpts...) }

// Ceilings are the operator's bounds on what a mission may ask for. A
// mission whose limits, or any of its agent specs' limits, exceed one (or
// ask for "unlimited" where a ceiling is set) is refused before it runs:
// its Step fails with ReasonOverLimit naming the field. Zero fields set no
// ceiling, except LLMOpts.
type Ceilings struct {
	// MissionTimeout bounds the mission_timeout, llm_timeout and
	// program_timeout of mission.limits and of every agent; the worker's
	// own run timeout is clamped to it.
	MissionTimeout time.Duration
	// MaxTurns bounds mission.limits.max_turns and every agent's max_turns.
	MaxTurns int
	// TurnBudget bounds mission.limits.turn_budget and every agent's
	// turn_budget.
	TurnBudget int
	// MemoryLimit bounds mission.limits.memory_limit and every agent's
	// memory_limit.
	MemoryLimit int64
	// ProgramMemory bounds mission.limits.program_memory and every
	// agent's program_memory.
	ProgramMemory int64
	// MaxData bounds mission.limits.max_data and every agent's max_data.
	MaxData int64
	// MaxEmitBytes bounds max_emit_bytes and EmitRate emit_rate of
	// mission.limits and of every agent: what a mission's programs may
	// stream to its submitter through the EVENTS stream.
	MaxEmitBytes int64
	EmitRate     int
	// MaxCostUSD bounds max_cost_usd (US dollars) and MaxTokens
	// max_tokens of mission.limits and of every agent. Unlike the other
	// ceilings they are also the budget of a mission that sets none
	// (applyBudget): a mission is never run without one when they are set.
	MaxCostUSD float64
	MaxTokens  int64
	// LLMRetryAttempts bounds llm_retry.max_attempts; LLMRetryMaxDelay
	// bounds llm_retry.base_delay and max_delay.
	LLMRetryAttempts int
	LLMRetryMaxDelay time.Duration
	// LLMOpts lists the llm_opts keys a mission may set; nil means
	// DefaultLLMOpts, an empty non-nil list allows none.
	LLMOpts []string
}

// check returns a description of the first bound m exceeds, or "".
func (c Ceilings) check(m *messages.Mission) string {
	allowed := c.LLMOpts
	if allowed == nil {
		allowed = defaultLLMOpts
	}
	ck := ceilingCheck{c: c, allowed: allowed}
	ck.limits("mission.limits", m.Limits)
	if m.Agent != nil {
		ck.agent("mission.agent", m.Agent, 0)
	}
	return ck.over
}

// applyBudget gives m the ceilings' max_cost_usd and max_tokens as its
// budget when neither its limits nor its top-level agent set one (a
// mission within the ceilings, checked first).
func (c Ceilings) applyBudget(m *messages.Mission) {
	eff := m.EffectiveLimits()
	if c.MaxCostUSD > 0 && eff.MaxCostUSD == 0 {
		m.Limits.MaxCostUSD = c.MaxCostUSD
	}
	if c.MaxTokens > 0 && eff.MaxTokens == 0 {
		m.Limits.MaxTokens = c.MaxTokens
	}
}

type ceilingCheck struct {
	c       Ceilings
	allowed []string // the llm_opts keys allowed
	over    string
}

// check records the first limit v over its ceiling (0: none), or asking
// for no limit (negative) where a ceiling is set. The limit's path is
// prefix followed by name, put together only to describe it.
func check[T int | int64 | float64 | time.Duration](ck *ceilingCheck, prefix, name string, v, ceiling T) {
	if ck.over != "" || ceiling <= 0 || v == 0 {
		return
	}
	switch {
	case v < 0:
		ck.over = fmt.Sprintf("%s%s asks for no limit; this worker allows at most %v", prefix, name, ceiling)
	case v > ceiling:
		ck.over = fmt.Sprintf("%s%s %v is over this worker's ceiling of %v", prefix, name, v, ceiling)
	}
}

// limits checks the limits at path, a mission's or an agent's.
func (ck *ceilingCheck) limits(path string, l messages.Limits) {
	check(ck, path, ".mission_timeout", l.MissionTimeout, ck.c.MissionTimeout)
	check(ck, path, ".llm_timeout", l.LLMTimeout, ck.c.MissionTimeout)
	check(ck, path, ".program_timeout", l.ProgramTimeout, ck.c.MissionTimeout)
	check(ck, path, ".max_turns", l.MaxTurns, ck.c.MaxTurns)
	check(ck, path, ".turn_budget", l.TurnBudget, ck.c.TurnBudget)
	check(ck, path, ".memory_limit", l.MemoryLimit, ck.c.MemoryLimit)
	check(ck, path, ".program_memory", l.ProgramMemory, ck.c.ProgramMemory)
	check(ck, path, ".max_data", l.MaxData, ck.c.MaxData)
	check(ck, path, ".max_emit_bytes", l.MaxEmitBytes, ck.c.MaxEmitBytes)
	check(ck, path, ".emit_rate", l.EmitRate, ck.c.EmitRate)
	check(ck, path, ".max_cost_usd", l.MaxCostUSD, ck.c.MaxCostUSD)
	check(ck, path, ".max_tokens", l.MaxTokens, ck.c.MaxTokens)
}

func (ck *ceilingCheck) agent(path string, a *messages.AgentSpec, depth int) {
	if a == nil || depth > messages.MaxSpecDepth {
		return
	}
	ck.limits(path, a.Limits)
	if r := a.LLMRetry; r != nil {
		check(ck, path, ".llm_retry.max_attempts", r.MaxAttempts, ck.c.LLMRetryAttempts)
		check(ck, path, ".llm_retry.base_delay", r.BaseDelay, ck.c.LLMRetryMaxDelay)
		check(ck, path, ".llm_retry.max_delay", r.MaxDelay, ck.c.LLMRetryMaxDelay)
	}
	if ck.over == "" {
		var refused []string
		for k := range a.LLMOpts {
			if !slices.Contains(ck.allowed, k) {
				refused = append(refused, k)
			}
		}
		if len(refused) > 0 {
			slices.Sort(refused)
			allowed := slices.Sorted(slices.Values(ck.allowed))
			ck.over = fmt.Sprintf("%s.llm_opts: %s not allowed by this worker (allowed: %s)", path,
				strings.Join(refused, ", "), strings.Join(slices.Compact(allowed), ", "))
		}
	}
	if len(a.SubAgents) == 0 {
		return
	}
	for _, n := range slices.Sorted(maps.Keys(a.SubAgents)) {
		ck.agent(fmt.Sprintf("%s.sub_agents[%q]", path, n), a.SubAgents[n], depth+1)
	}
}
