package fleet

import (
	"fmt"
	"sort"
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
	// MissionTimeout bounds mission.limits.mission_timeout and every
	// agent's mission_timeout, llm_timeout and program_timeout; the
	// worker's own run timeout is clamped to it.
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
	ck := ceilingCheck{c: c, allowed: map[string]bool{}}
	for _, k := range allowed {
		ck.allowed[k] = true
	}
	l := m.Limits
	ck.dur("mission.limits.mission_timeout", l.MissionTimeout, c.MissionTimeout)
	ck.num("mission.limits.max_turns", int64(l.MaxTurns), int64(c.MaxTurns))
	ck.num("mission.limits.turn_budget", int64(l.TurnBudget), int64(c.TurnBudget))
	ck.num("mission.limits.memory_limit", l.MemoryLimit, c.MemoryLimit)
	ck.num("mission.limits.program_memory", l.ProgramMemory, c.ProgramMemory)
	if m.Agent != nil {
		ck.agent("mission.agent", m.Agent, 0)
	}
	return ck.over
}

type ceilingCheck struct {
	c       Ceilings
	allowed map[string]bool
	over    string
}

func (ck *ceilingCheck) num(path string, v, ceiling int64) {
	if ck.over != "" || ceiling <= 0 || v == 0 {
		return
	}
	switch {
	case v < 0:
		ck.over = fmt.Sprintf("%s asks for no limit; this worker allows at most %d", path, ceiling)
	case v > ceiling:
		ck.over = fmt.Sprintf("%s %d is over this worker's ceiling of %d", path, v, ceiling)
	}
}

func (ck *ceilingCheck) dur(path string, v, ceiling time.Duration) {
	if ck.over != "" || ceiling <= 0 || v == 0 {
		return
	}
	switch {
	case v < 0:
		ck.over = fmt.Sprintf("%s asks for no limit; this worker allows at most %s", path, ceiling)
	case v > ceiling:
		ck.over = fmt.Sprintf("%s %s is over this worker's ceiling of %s", path, v, ceiling)
	}
}

func (ck *ceilingCheck) agent(path string, a *messages.AgentSpec, depth int) {
	if a == nil || depth > messages.MaxSpecDepth {
		return
	}
	ck.dur(path+".mission_timeout", a.MissionTimeout, ck.c.MissionTimeout)
	ck.dur(path+".llm_timeout", a.LLMTimeout, ck.c.MissionTimeout)
	ck.dur(path+".program_timeout", a.ProgramTimeout, ck.c.MissionTimeout)
	ck.num(path+".max_turns", int64(a.MaxTurns), int64(ck.c.MaxTurns))
	ck.num(path+".turn_budget", int64(a.TurnBudget), int64(ck.c.TurnBudget))
	ck.num(path+".memory_limit", a.MemoryLimit, ck.c.MemoryLimit)
	ck.num(path+".program_memory", a.ProgramMemory, ck.c.ProgramMemory)
	if r := a.LLMRetry; r != nil {
		ck.num(path+".llm_retry.max_attempts", int64(r.MaxAttempts), int64(ck.c.LLMRetryAttempts))
		ck.dur(path+".llm_retry.base_delay", r.BaseDelay, ck.c.LLMRetryMaxDelay)
		ck.dur(path+".llm_retry.max_delay", r.MaxDelay, ck.c.LLMRetryMaxDelay)
	}
	if ck.over == "" {
		var refused []string
		for k := range a.LLMOpts {
			if !ck.allowed[k] {
				refused = append(refused, k)
			}
		}
		if len(refused) > 0 {
			sort.Strings(refused)
			ck.over = fmt.Sprintf("%s.llm_opts: %s not allowed by this worker (allowed: %s)", path,
				strings.Join(refused, ", "), strings.Join(sortedKeys(ck.allowed), ", "))
		}
	}
	names := sortedKeys(a.SubAgents)
	for _, n := range names {
		ck.agent(fmt.Sprintf("%s.sub_agents[%q]", path, n), a.SubAgents[n], depth+1)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
