package messages

import "time"

// Defaults of the limits of an agent (AgentSpec and Limits). They are the
// one source of these values: pkg/agent applies them to a spec's zero
// fields and a fleet worker bounds a mission with DefaultMissionTimeout
// when neither the mission nor its agent sets one. docs/missions.md lists
// them in its limits table, checked by a test.
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
	// DefaultListLimit and DefaultStringLimit bound the result previews fed
	// back to the model: items per collection, characters per string.
	DefaultListLimit   = 5
	DefaultStringLimit = 1000
)

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
